//! What an endpoint sees while it decides — the configuration, the time, the entropy and the
//! records loaded so far — and what it decides.
//!
//! An endpoint reads records through [`Ctx::load`]; a key not loaded yet stops it with
//! [`Need`], carried by `?`. The request is parsed once, so walking the decision again when the
//! records arrive costs a few lookups: no parsing, no hashing.

use core::cell::Cell;

use crate::config::App;
use crate::config::Config;
use crate::credentials::Entropy;
use crate::documents::KEYS_REFETCH_AFTER;
use crate::ending::Ending;
use crate::ids::AppKey;
use crate::jose::ClientKey;
use crate::prelude::*;
use crate::records::view::{self, AppView, RecordView};
use crate::records::{
    AccessTokenRecord, AppRecord, AssertionRecord, AttemptsRecord, ClientKeys, CodeRecord,
    GrantRecord, LedgerRecord, LinkRecord, MemberRecord, Provenance, Record, RecordKey,
    RefreshTokenRecord, RemoteKeys, Stored, ACCESS_TOKEN_TAG, APP_TAG, GRANT_TAG, LINK_TAG,
};
use crate::step::{AuditEvent, Expect, Put, Transaction, Verify};
use crate::time::{Seconds, UnixTime};
use alloc::borrow::Cow;
use core::cell::OnceCell;

/// What an endpoint needs before it can go on.
#[derive(Debug)]
pub(crate) enum Need {
    /// These records, read in one batch.
    Records(Vec<RecordKey>),
    /// The metadata document of the client `app`, fetched, checked and kept under `record`
    /// (read at `version`; `None`: absent) before the request decides again; `counted`: the
    /// fetch counts against the request's source, as a failure does (a client's first contact
    /// with no person signed in).
    Document {
        app: AppKey,
        record: RecordKey,
        version: Option<u64>,
        counted: bool,
    },
    /// The JWK set at `url`, the `jwks_uri` of the client stored under `record` (read at
    /// `version`), fetched and kept in its record before the request decides again.
    Keys {
        record: RecordKey,
        version: u64,
        url: String,
    },
    /// The JWK set at `url`, the `jwks_uri` of an identity provider, fetched and kept under
    /// `record` (read at `version`; `None`: absent) before the request decides again; `client`
    /// presented the provider's assertion.
    ProviderKeys {
        record: RecordKey,
        version: Option<u64>,
        url: String,
        client: AppKey,
    },
    /// Whether this signature holds (a client assertion's, an identity assertion's).
    Signature(Verify),
    /// Nothing: the record under this key is not one the core can read (a storage fault).
    Fault(RecordKey),
}

/// An endpoint's result: a decision, or what it needs first. The need is boxed: passing it up
/// (every `?` of every decision) moves a pointer, not the need.
pub(crate) type Flow<T> = Result<T, Box<Need>>;

/// What an endpoint decided.
pub(crate) enum Decision {
    /// Nothing to store.
    End(Ending),
    /// Store this, then end so.
    Commit(Transaction, Ending),
    /// Store each of these in turn (each in its own partition, none depending on another's
    /// applying with it), then end so.
    Each(Vec<Transaction>, Ending),
    /// Store this, then decide again from fresh records (an unlink's sweep, a bounded page at
    /// a time: the keys written so far are in [`Ctx::written`]) — or, once the request wrote
    /// as many pages as it may, end so and leave the rest to a later request.
    Continue(Transaction, Ending),
}

impl Decision {
    /// Store each of `writes` in turn (if there are any), then end so.
    pub fn each(writes: Vec<Transaction>, ending: Ending) -> Decision {
        if writes.is_empty() {
            Decision::End(ending)
        } else {
            Decision::Each(writes, ending)
        }
    }

    /// Store one record, reporting one event, then end so.
    pub fn commit_one(put: Put, audit: AuditEvent, ending: Ending) -> Decision {
        Decision::Commit(
            Transaction {
                puts: vec![put],
                audit: vec![audit],
            },
            ending,
        )
    }
}

/// The records a request has loaded: `None` for a key looked up and absent.
#[derive(Clone, Debug, Default)]
pub(crate) struct Loads {
    entries: Vec<(RecordKey, Option<Entry>)>,
    /// What the request read before it last let its records go to decide again.
    before: Vec<(RecordKey, Option<Entry>)>,
}

/// One record as loaded: its bytes in the current format, read in place by views
/// ([`Ctx::view`]), and decoded whole the first time a decision asks for it ([`Ctx::load`]).
/// The records views read are decoded only when a decision writes them (a stored app's: when
/// a decision uses more of it than its last use); every other record is decoded when it is
/// loaded.
#[derive(Clone, Debug)]
struct Entry {
    version: u64,
    bytes: Vec<u8>,
    decoded: OnceCell<Option<Record>>,
}

impl Entry {
    fn record(&self) -> Option<&Record> {
        self.decoded
            .get_or_init(|| Record::decode(&self.bytes).ok())
            .as_ref()
    }
}

impl Loads {
    pub fn contains(&self, key: &RecordKey) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    /// Takes what the store holds under `key` (`None`: nothing), or gives the key back when
    /// those are not bytes of a record of the type the key names (a storage fault). A record
    /// that views read is checked as it is read; every other one is decoded now.
    pub fn insert(&mut self, key: RecordKey, stored: Option<Stored>) -> Result<(), RecordKey> {
        let entry = match stored {
            None => None,
            Some(Stored { version, bytes }) => {
                let bytes = match Record::upgraded(&bytes) {
                    None => return Err(key),
                    Some(Cow::Borrowed(_)) => bytes,
                    Some(Cow::Owned(upgraded)) => upgraded,
                };
                let entry = Entry {
                    version,
                    bytes,
                    decoded: OnceCell::new(),
                };
                let readable = match key {
                    RecordKey::AccessToken(..) => view::has_tag(&entry.bytes, ACCESS_TOKEN_TAG),
                    RecordKey::Grant(..) => view::has_tag(&entry.bytes, GRANT_TAG),
                    RecordKey::Link(..) => view::has_tag(&entry.bytes, LINK_TAG),
                    RecordKey::App(..) => view::has_tag(&entry.bytes, APP_TAG),
                    _ => entry.record().is_some_and(|record| record.fits(&key)),
                };
                if !readable {
                    return Err(key);
                }
                Some(entry)
            }
        };
        self.entries.retain(|(k, _)| k != &key);
        self.entries.push((key, entry));
        Ok(())
    }

    /// Lets the records go, to decide again from fresh ones (a write lost a race; a sweep's
    /// next page), keeping what was read until the next time ([`Ctx::rewritten_as_read`]).
    pub fn clear(&mut self) {
        self.before = core::mem::take(&mut self.entries);
    }

    /// The stored app loaded under `key`, if any.
    pub fn app(&self, key: &RecordKey) -> Option<&App> {
        self.app_record(key).map(|record| &record.app)
    }

    /// The stored app's record loaded under `key`, if any.
    pub fn app_record(&self, key: &RecordKey) -> Option<&AppRecord> {
        match self.get(key)?.as_ref()?.record()? {
            Record::App(record) => Some(record),
            _ => None,
        }
    }

    fn get(&self, key: &RecordKey) -> Option<&Option<Entry>> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The key the stored app `app`'s record was loaded under, if this request loaded it: the
    /// one the core asked for ([`Request::advance`](crate::Request::advance) takes no other),
    /// so its partition is not derived again (a MAC; a decision runs again after each read).
    pub fn app_key(&self, app: &AppKey) -> Option<&RecordKey> {
        self.entries
            .iter()
            .map(|(key, _)| key)
            .find(|key| matches!(key, RecordKey::App(_, loaded) if loaded == app))
    }
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
record_kind!(AttemptsRecord, Attempts);
record_kind!(MemberRecord, Member);
record_kind!(AppRecord, App);
record_kind!(AssertionRecord, Assertion);
record_kind!(LedgerRecord, Ledger);
record_kind!(RemoteKeys, ProviderKeys);

pub(crate) struct Ctx<'a> {
    pub config: &'a Config,
    pub now: UnixTime,
    pub entropy: &'a Entropy,
    pub loads: &'a Loads,
    /// The keys of the transactions this request has committed so far (of a [`Decision::Each`]
    /// whose later transaction lost a race).
    pub written: &'a [RecordKey],
    /// Whether each signature this request had verified holds, in the order asked.
    pub verified: &'a [bool],
    /// How many signatures this run of the decision asked for so far: the next one asked is
    /// answered by `verified` at that place, or asked of the host.
    pub signatures_asked: Cell<usize>,
    /// The key sets this request fetched already (each at most once per request).
    pub keys_fetched: KeysFetched,
}

/// The key sets a request fetched: a client's (`private_key_jwt`) and an identity provider's
/// (ID-JAG), each at most once, so that a request presenting both may fetch both.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeysFetched {
    pub client: bool,
    pub provider: bool,
}

impl<'a> Ctx<'a> {
    /// Makes sure every key is loaded, asking for all the missing ones in one batch.
    pub fn need(&self, keys: &[&RecordKey]) -> Flow<()> {
        let missing: Vec<RecordKey> = keys
            .iter()
            .filter(|k| !self.loads.contains(k))
            .map(|k| (*k).clone())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Box::new(Need::Records(missing)))
        }
    }

    /// Where the app `key` is stored, if it is not configured and clients may arrive
    /// unannounced: a key to read in the same batch as the request's other records.
    pub fn app_record(&self, key: &AppKey) -> Option<RecordKey> {
        // None in a build without them: its records then never hold an app.
        if !cfg!(feature = "unannounced") {
            return None;
        }
        match self.loads.app_key(key) {
            Some(loaded) => Some(loaded.clone()),
            None => app_record(self.config, key),
        }
    }

    /// Makes sure every key is loaded, and the app `app`'s record where it is stored: one batch.
    pub fn need_with_app(&self, keys: &[&RecordKey], app: &AppKey) -> Flow<()> {
        match self.app_record(app) {
            None => self.need(keys),
            Some(record) => {
                let mut all = keys.to_vec();
                all.push(&record);
                self.need(&all)
            }
        }
    }

    /// The app `key` names: the configured one, else (where clients may arrive unannounced)
    /// the one stored under it, unless it has expired unused.
    pub fn app(&self, key: &AppKey) -> Flow<Option<&'a App>> {
        let config: &'a Config = self.config;
        if let Some(app) = config.app(key.as_str()) {
            return Ok(Some(app));
        }
        Ok(self.stored_app(key)?.map(|record| &record.app))
    }

    /// Whether the signature `verify` holds: asked of the host once per request, each in the
    /// order the decision asks (a decision runs again after every answer, asking the same).
    pub fn signature(&self, verify: impl FnOnce() -> Verify) -> Flow<bool> {
        let place = self.signatures_asked.get();
        self.signatures_asked.set(place + 1);
        match self.verified.get(place) {
            Some(holds) => Ok(*holds),
            None => Err(Box::new(Need::Signature(verify()))),
        }
    }

    /// The keys an assertion of the stored app `key` may be signed with, `None` when it has none
    /// (it does not authenticate so): its registered ones, or those of its `jwks_uri` — fetched
    /// first ([`Need::Keys`]) when they never were or are past their cache lifetime, or when
    /// none is `wanted` (a key the assertion names) and they were fetched at least
    /// [`KEYS_REFETCH_AFTER`] ago. At most one fetch per request.
    pub fn assertion_keys(
        &self,
        key: &AppKey,
        wanted: impl Fn(&ClientKey) -> bool,
    ) -> Flow<Option<&'a [ClientKey]>> {
        let Some(record_key) = self.app_record(key) else {
            return Ok(None);
        };
        let Some(loaded) = self.load::<AppRecord>(&record_key)? else {
            return Ok(None);
        };
        let remote = match loaded.record.assertion_keys() {
            None => return Ok(None),
            Some(ClientKeys::Inline(keys)) => return Ok(Some(keys)),
            Some(ClientKeys::Remote(remote)) => remote,
        };
        if stale(self.now, remote, &wanted) && !self.keys_fetched.client {
            return Err(Box::new(Need::Keys {
                record: record_key,
                version: loaded.version,
                url: remote.url.clone(),
            }));
        }
        Ok(Some(&remote.keys))
    }

    /// The keys of the identity provider whose key set is at `url`, as kept under `record`:
    /// fetched first ([`Need::ProviderKeys`], for `client`) as a client's are (see
    /// [`assertion_keys`](Self::assertion_keys)) when never fetched, past their cache lifetime,
    /// or holding none `wanted` for [`KEYS_REFETCH_AFTER`]. At most one fetch per request.
    pub fn provider_keys(
        &self,
        record: &RecordKey,
        url: &str,
        client: &AppKey,
        wanted: impl Fn(&ClientKey) -> bool,
    ) -> Flow<&'a [ClientKey]> {
        let loaded = self.load::<RemoteKeys>(record)?;
        let version = loaded.as_ref().map(|loaded| loaded.version);
        // Kept from another URL (the configuration changed since): fetched anew.
        let kept = loaded
            .map(|loaded| loaded.record)
            .filter(|kept| kept.url == url);
        if kept.is_none_or(|kept| stale(self.now, kept, &wanted)) && !self.keys_fetched.provider {
            return Err(Box::new(Need::ProviderKeys {
                record: record.clone(),
                version,
                url: url.to_owned(),
                client: client.clone(),
            }));
        }
        Ok(kept.map_or(&[], |kept| &kept.keys))
    }

    /// The record of the stored app `key` (not configured), unless it has expired unused.
    pub fn stored_app(&self, key: &AppKey) -> Flow<Option<&'a AppRecord>> {
        let Some(record_key) = self.app_record(key) else {
            return Ok(None);
        };
        Ok(self
            .load::<AppRecord>(&record_key)?
            .map(|loaded| loaded.record)
            .filter(|record| self.in_use(record.used_at)))
    }

    /// Whether the app `key` is known, as [`app`](Self::app) would find it: configured, or
    /// stored and not expired unused — its record read in place, for a bearer check, which
    /// needs nothing else of it.
    pub fn knows_app(&self, key: &AppKey) -> Flow<bool> {
        if self.config.app(key.as_str()).is_some() {
            return Ok(true);
        }
        let Some(record_key) = self.app_record(key) else {
            return Ok(false);
        };
        Ok(self
            .view::<AppView>(&record_key)?
            .is_some_and(|(_, app)| self.in_use(app.used_at)))
    }

    /// Whether a stored app last used at `used_at` is still kept: within its unused lifetime.
    fn in_use(&self, used_at: UnixTime) -> bool {
        self.config
            .unannounced()
            .is_some_and(|clients| self.now < used_at.plus(clients.unused_lifetime))
    }

    /// The app `key` names, as [`app`](Self::app) finds it — but for a client named by a
    /// metadata document that is not kept, or kept longer than its cache lifetime, the document
    /// fetched first ([`Need::Document`]): for the requests that obtain something with the app
    /// (an authorization, a token). A record this request wrote is current.
    pub fn current_app(&self, key: &AppKey) -> Flow<Option<&'a App>> {
        if let Some(record_key) = self
            .app_record(key)
            .filter(|_| key.document_url().is_some())
        {
            let loaded = self.load::<AppRecord>(&record_key)?;
            let fresh = loaded.as_ref().is_some_and(|loaded| {
                matches!(loaded.record.provenance, Provenance::Document(ref document)
                    if self.now < document.fresh_until)
            });
            if !fresh && !self.written.contains(&record_key) {
                return Err(Box::new(Need::Document {
                    app: key.clone(),
                    record: record_key,
                    version: loaded.map(|loaded| loaded.version),
                    counted: false,
                }));
            }
        }
        self.app(key)
    }

    /// `decision` — when it writes, and the app `app` is stored and used for the first time
    /// since half its unused lifetime passed — with the app's record renewed first: its own
    /// transaction (its own partition), conditional on the version read, so that a race with
    /// another renewal or an update only makes the request decide again.
    pub fn with_renewal(&self, app: &AppKey, decision: Decision) -> Decision {
        let renewal = (|| {
            let key = self.app_record(app)?;
            let lifetime = self.config.unannounced()?.unused_lifetime;
            let loaded = self.load::<AppRecord>(&key).ok()??;
            if self.now < loaded.record.used_at.plus(Seconds(lifetime.0 / 2)) {
                return None;
            }
            let renewed = AppRecord {
                used_at: self.now,
                ..loaded.record.clone()
            };
            Some(Transaction {
                puts: vec![replace(
                    key,
                    Some(loaded.version),
                    &Record::App(renewed),
                    Some(self.now.plus(lifetime)),
                )],
                audit: Vec::new(),
            })
        })();
        match (renewal, decision) {
            (Some(renewal), Decision::Commit(transaction, ending)) => {
                Decision::Each(vec![renewal, transaction], ending)
            }
            (Some(renewal), Decision::Each(mut transactions, ending)) => {
                transactions.insert(0, renewal);
                Decision::Each(transactions, ending)
            }
            (_, decision) => decision,
        }
    }

    /// The record under `key` (loading it first if needed), or `None` if the store has none.
    pub fn load<R: RecordKind>(&self, key: &RecordKey) -> Flow<Option<Loaded<'a, R>>> {
        // `Loads::insert` admits only records of the type their key names.
        self.decoded(key)?
            .map(|(version, record)| match R::from_record(record) {
                Some(record) => Ok(Loaded { version, record }),
                None => Err(Box::new(Need::Fault(key.clone()))),
            })
            .transpose()
    }

    /// Whether the record under `key`, as loaded now, is the one this request read before it
    /// last decided again, written back byte for byte since (at a later version): what won the
    /// race wrote it as it was.
    pub fn rewritten_as_read(&self, key: &RecordKey) -> bool {
        let before = self.loads.before.iter().find(|(k, _)| k == key);
        match (self.loads.get(key), before) {
            (Some(Some(now)), Some((_, Some(then)))) => {
                now.version != then.version && now.bytes == then.bytes
            }
            _ => false,
        }
    }

    /// The record under `key` decoded, with its version (loading it first if needed), or
    /// `None` if the store has none: [`load`](Self::load)'s part that is the same for every
    /// kind of record.
    fn decoded(&self, key: &RecordKey) -> Flow<Option<(u64, &'a Record)>> {
        let loads: &'a Loads = self.loads;
        match loads.get(key) {
            None => Err(Box::new(Need::Records(vec![key.clone()]))),
            Some(None) => Ok(None),
            Some(Some(entry)) => match entry.record() {
                Some(record) => Ok(Some((entry.version, record))),
                None => Err(Box::new(Need::Fault(key.clone()))),
            },
        }
    }

    /// The record under `key` read in place (loading it first if needed), with its version,
    /// or `None` if the store has none.
    pub fn view<V: RecordView<'a>>(&self, key: &RecordKey) -> Flow<Option<(u64, V)>> {
        let loads: &'a Loads = self.loads;
        match loads.get(key) {
            None => Err(Box::new(Need::Records(vec![key.clone()]))),
            Some(None) => Ok(None),
            Some(Some(entry)) => match V::read(&entry.bytes) {
                Some(view) => Ok(Some((entry.version, view))),
                None => Err(Box::new(Need::Fault(key.clone()))),
            },
        }
    }
}

/// Whether the app `key` would be stored: it is not configured, and clients may arrive
/// unannounced.
pub(crate) fn is_stored(config: &Config, key: &AppKey) -> bool {
    // A document client's key is never minted here: it is stored only where documents are.
    let kept = match key.document_url() {
        Some(_) => config.documents().is_some(),
        None => config.unannounced().is_some(),
    };
    kept && config.app(key.as_str()).is_none()
}

/// Where the app `key` is stored, if it [`is_stored`].
pub(crate) fn app_record(config: &Config, key: &AppKey) -> Option<RecordKey> {
    is_stored(config, key).then(|| RecordKey::app(config.server_key(), key.clone()))
}

/// Stores a new record under a key that must be empty (a fresh credential: a collision means
/// the entropy was not random, and the write must fail rather than overwrite).
pub(crate) fn create(key: RecordKey, record: &Record, purge_after: Option<UnixTime>) -> Put {
    Put {
        key,
        expect: Expect::Absent,
        bytes: record.encode(),
        purge_after,
    }
}

/// Replaces the record read at `version` (`None`: read as absent).
pub(crate) fn replace(
    key: RecordKey,
    version: Option<u64>,
    record: &Record,
    purge_after: Option<UnixTime>,
) -> Put {
    Put {
        key,
        expect: version.map_or(Expect::Absent, Expect::Version),
        bytes: record.encode(),
        purge_after,
    }
}

/// Whether a key set kept from a `jwks_uri` is to be fetched again at `now`: never fetched, past
/// its cache lifetime, or holding no key `wanted` (the one an assertion names) and fetched at
/// least [`KEYS_REFETCH_AFTER`] ago (a signer's new key is found soon, a stranger's name does
/// not make every request fetch).
fn stale(now: UnixTime, remote: &RemoteKeys, wanted: impl Fn(&ClientKey) -> bool) -> bool {
    match remote.fetched_at {
        None => true,
        Some(at) => {
            now >= remote.fresh_until
                || (!remote.keys.iter().any(wanted) && now >= at.plus(KEYS_REFETCH_AFTER))
        }
    }
}
