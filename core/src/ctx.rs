//! The context of one call: configuration, time, entropy, and the records loaded so far.
//!
//! Handlers read records through [`Ctx::load`]; a key not loaded yet stops the handler with
//! [`Step::NeedRecords`], carried by `?` through [`Stop`]. Because handlers are deterministic in
//! their inputs, the next call walks the same path and gets one step further.

use crate::config::Config;
use crate::credentials::Entropy;
use crate::records::{
    AccessTokenRecord, CodeRecord, GrantRecord, LinkRecord, Record, RecordKey, RefreshTokenRecord,
    Versioned,
};
use crate::step::{Misuse, Outcome, Records, Step, Transaction};
use crate::time::UnixTime;

/// Why a handler stopped before its end: it has its step already (boxed, to keep the `Err`
/// path small), or the host misbehaved.
pub(crate) enum Stop {
    Step(Box<Step>),
    Misuse(Misuse),
}

impl From<Misuse> for Stop {
    fn from(m: Misuse) -> Self {
        Stop::Misuse(m)
    }
}

/// A handler's result: a step, reached either at the end or by stopping early.
pub(crate) type Flow<T> = Result<T, Stop>;

/// Stops the handler with a response and nothing to store.
pub(crate) fn respond<T>(outcome: Outcome) -> Flow<T> {
    Err(Stop::Step(Box::new(Step::Respond { outcome })))
}

/// Ends the handler with writes to apply.
pub(crate) fn commit(transaction: Transaction, outcome: Outcome) -> Flow<Step> {
    Ok(Step::Commit {
        transaction,
        outcome,
    })
}

/// A record as loaded, with the version a conditional write must expect.
pub(crate) struct Loaded<'a, R> {
    pub version: u64,
    pub record: &'a R,
}

/// Record types that can be read out of a [`Record`].
pub(crate) trait RecordKind: Sized {
    fn from_record(record: &Record) -> Option<&Self>;
}

macro_rules! record_kind {
    ($ty:ty, $variant:ident) => {
        impl RecordKind for $ty {
            fn from_record(record: &Record) -> Option<&Self> {
                match record {
                    Record::$variant(r) => Some(r),
                    _ => None,
                }
            }
        }
    };
}
record_kind!(CodeRecord, Code);
record_kind!(AccessTokenRecord, AccessToken);
record_kind!(RefreshTokenRecord, RefreshToken);
record_kind!(GrantRecord, Grant);
record_kind!(LinkRecord, Link);

pub(crate) struct Ctx<'a> {
    pub config: &'a Config,
    pub now: UnixTime,
    pub entropy: &'a Entropy,
    records: &'a Records,
    asked: Vec<RecordKey>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        config: &'a Config,
        now: UnixTime,
        entropy: &'a Entropy,
        records: &'a Records,
    ) -> Self {
        Ctx {
            config,
            now,
            entropy,
            records,
            asked: Vec::new(),
        }
    }

    /// Makes sure every key is loaded, asking for all the missing ones in one batch.
    pub fn fetch(&mut self, keys: &[&RecordKey]) -> Flow<()> {
        let mut missing = Vec::new();
        for key in keys {
            if self.records.get(key).is_none() {
                missing.push((*key).clone());
            }
            if !self.asked.contains(key) {
                self.asked.push((*key).clone());
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Stop::Step(Box::new(Step::NeedRecords { keys: missing })))
        }
    }

    /// The record under `key` (loading it first if needed), or `None` if the store has none.
    pub fn load<R: RecordKind>(&mut self, key: &RecordKey) -> Flow<Option<Loaded<'a, R>>> {
        self.fetch(&[key])?;
        let records: &'a Records = self.records;
        match records.get(key).flatten() {
            None => Ok(None),
            Some(Versioned { version, record }) => match R::from_record(record) {
                Some(record) => Ok(Some(Loaded {
                    version: *version,
                    record,
                })),
                None => Err(Misuse::WrongRecordType(key.to_string()).into()),
            },
        }
    }

    /// Closes the call: a supplied record the handler never asked for is host misuse.
    pub fn finish(self, flow: Flow<Step>) -> Result<Step, Misuse> {
        let step = match flow {
            Ok(step) => step,
            Err(Stop::Step(step)) => *step,
            Err(Stop::Misuse(misuse)) => return Err(misuse),
        };
        if let Some(extra) = self.records.keys().find(|k| !self.asked.contains(k)) {
            return Err(Misuse::UnrequestedRecord(extra.to_string()));
        }
        Ok(step)
    }
}
