//! Failed credential checks, counted per attempter in a fixed window: the first failure opens
//! the window, each failure adds one, and once the count reaches the limit every check is
//! refused until the window ends (exact boundary: refused while `now < window_start + window`).

use crate::config::AttemptLimits;
use crate::credentials::{AttempterDigest, ServerKey};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{AttemptsRecord, RecordKey};
use crate::time::{is_expired, Seconds, UnixTime};

/// The most attempters one check is counted against (each count is a write of its own).
pub const MAX_ATTEMPTERS: usize = 4;

names! {
    /// Every attempter kind's name (the package's TypeScript types are generated from it).
    Attempter:
    Source => "source",
    Account => "account",
}

/// Whom failed checks are counted against.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Attempter {
    /// A network source as the host names it (the client's IP address).
    Source(String),
    /// An account name tried at the host's own sign-in.
    Account(String),
}

impl Attempter {
    fn kind(&self) -> (&'static str, &str) {
        match self {
            Attempter::Source(address) | Attempter::Account(address) => (self.named(), address),
        }
    }

    /// Its kind's name (`source`, `account`), as hosts in other languages name it: one of
    /// [`Attempter::NAMES`].
    pub fn name(&self) -> &'static str {
        self.named()
    }

    /// Whether it is what a person or a network can present: 1 to 256 bytes, no control
    /// characters (an account name with a NUL or a line break was never typed into a form).
    pub fn is_well_formed(&self) -> bool {
        let (_, value) = self.kind();
        (1..=256).contains(&value.len()) && !value.chars().any(char::is_control)
    }

    /// Where its count is stored (its digest under the server `key`).
    pub fn key(&self, key: &ServerKey) -> RecordKey {
        let (kind, value) = self.kind();
        RecordKey::Attempts(AttempterDigest::of(key, kind, value))
    }

    /// Where its count is stored when checks also come from `source`: an account name's count
    /// is then that source's alone (so no one elsewhere can lock its owner out); any other
    /// attempter's is its own. Names hold no control characters ([`is_well_formed`]), so the
    /// NUL between the two is unambiguous.
    ///
    /// [`is_well_formed`]: Attempter::is_well_formed
    pub fn key_from(&self, key: &ServerKey, source: Option<&str>) -> RecordKey {
        match (self, source) {
            (Attempter::Account(name), Some(source)) => RecordKey::Attempts(AttempterDigest::of(
                key,
                "account-from",
                &format!("{name}\0{source}"),
            )),
            _ => self.key(key),
        }
    }

    /// The partition of its count (its own: see [`Partition`]).
    pub fn partition(&self, key: &ServerKey) -> Partition {
        self.key(key).partition()
    }

    /// How many failures it may have per window (`0`: unlimited).
    pub(crate) fn limit(&self, limits: &AttemptLimits) -> u32 {
        match self {
            Attempter::Source(_) => limits.per_source,
            Attempter::Account(_) => limits.per_account,
        }
    }
}

/// The count as it stands at `now`: `None` once the window has passed.
fn current(
    record: Option<&AttemptsRecord>,
    now: UnixTime,
    window: Seconds,
) -> Option<&AttemptsRecord> {
    record.filter(|r| !is_expired(r.window_start.plus(window), now))
}

/// `Err(retry_after)` while the attempter is at its limit.
pub(crate) fn standing(
    record: Option<&AttemptsRecord>,
    limit: u32,
    now: UnixTime,
    window: Seconds,
) -> Result<(), Seconds> {
    match current(record, now, window) {
        Some(r) if limit > 0 && r.failures >= limit => {
            Err(r.window_start.plus(window).seconds_from(now))
        }
        _ => Ok(()),
    }
}

/// The count after one more failure at `now`.
pub(crate) fn failed(
    record: Option<&AttemptsRecord>,
    now: UnixTime,
    window: Seconds,
) -> AttemptsRecord {
    match current(record, now, window) {
        Some(r) => AttemptsRecord {
            window_start: r.window_start,
            failures: r.failures.saturating_add(1),
        },
        None => AttemptsRecord {
            window_start: now,
            failures: 1,
        },
    }
}

/// The count with one reservation taken back (a check that succeeded), if it still counts any
/// in its window.
pub(crate) fn released(
    record: Option<&AttemptsRecord>,
    now: UnixTime,
    window: Seconds,
) -> Option<AttemptsRecord> {
    current(record, now, window)
        .filter(|r| r.failures > 0)
        .map(|r| AttemptsRecord {
            window_start: r.window_start,
            failures: r.failures - 1,
        })
}

/// When the count may be deleted: once its window has passed, it counts for nothing.
pub(crate) fn purge_after(record: &AttemptsRecord, window: Seconds) -> UnixTime {
    record.window_start.plus(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Seconds = Seconds(900);

    #[test]
    fn the_limit_holds_until_the_window_ends_exactly() {
        let start = UnixTime(1_000);
        let mut record = None;
        for _ in 0..3 {
            assert_eq!(standing(record.as_ref(), 3, start, WINDOW), Ok(()));
            record = Some(failed(record.as_ref(), start, WINDOW));
        }
        let at = |t: u64| standing(record.as_ref(), 3, UnixTime(t), WINDOW);
        assert_eq!(at(1_000), Err(Seconds(900)));
        assert_eq!(at(1_899), Err(Seconds(1)));
        assert_eq!(at(1_900), Ok(()));
        assert_eq!(
            standing(record.as_ref(), 0, start, WINDOW),
            Ok(()),
            "0 is no limit"
        );
        let reopened = failed(record.as_ref(), UnixTime(1_900), WINDOW);
        assert_eq!(
            reopened,
            AttemptsRecord {
                window_start: UnixTime(1_900),
                failures: 1
            }
        );
    }
}
