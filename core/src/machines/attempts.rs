//! Failed credential checks, counted per attempter in a fixed window: the first failure opens
//! the window, each failure adds one, and once the count reaches the limit every check is
//! refused until the window ends (exact boundary: refused while `now < window_start + window`).

use crate::config::AttemptLimits;
use crate::credentials::{AttempterDigest, ServerKey};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{AttemptsRecord, RecordKey};
use crate::time::{is_expired, Seconds, UnixTime};
use alloc::borrow::Cow;

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

    /// Where its count is stored (its digest under the server `key`). A source is counted by
    /// its group: an IPv6 address with its whole /64.
    pub fn key(&self, key: &ServerKey) -> RecordKey {
        let (kind, value) = self.kind();
        let value = match self {
            Attempter::Source(source) => source_group(source),
            Attempter::Account(_) => Cow::Borrowed(value),
        };
        RecordKey::Attempts(AttempterDigest::of(key, kind, &value))
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

/// What a network source is counted as: an IPv6 address as its /64 (`2001:db8:1:2::/64`), the
/// share one host or one customer usually holds, so that walking the addresses of one's own
/// prefix counts as one source; an IPv4-mapped IPv6 address as its IPv4 address; anything
/// else as it was reported.
pub(crate) fn source_group(source: &str) -> Cow<'_, str> {
    let Some(groups) = ipv6_groups(source.as_bytes()) else {
        return Cow::Borrowed(source);
    };
    let mut text = String::with_capacity(24);
    if groups[..5] == [0; 5] && groups[5] == 0xffff {
        for (i, octet) in [
            groups[6] >> 8,
            groups[6] & 0xff,
            groups[7] >> 8,
            groups[7] & 0xff,
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                text.push('.');
            }
            // As u64: its formatting is linked already.
            text.push_str(&u64::from(octet).to_string());
        }
        return Cow::Owned(text);
    }
    for group in &groups[..4] {
        // Lowercase hex without leading zeros, as RFC 5952 writes a group.
        let mut started = false;
        for shift in [12, 8, 4, 0] {
            let digit = (group >> shift) & 0xf;
            started |= digit != 0 || shift == 0;
            if started {
                text.extend(char::from_digit(u32::from(digit), 16));
            }
        }
        text.push(':');
    }
    text.push_str(":/64");
    Cow::Owned(text)
}

/// The eight groups of an IPv6 address in text (RFC 4291 §2.2: `::` once at most, a dotted IPv4
/// address as the last two groups; brackets and a zone index tolerated), `None` for anything
/// else. Written out over bytes rather than taken from `core::net`, whose parser and
/// formatting would cost the wasm modules more than the rest of this machine.
fn ipv6_groups(text: &[u8]) -> Option<[u16; 8]> {
    let text = match text {
        [b'[', inner @ .., b']'] => inner,
        _ => text,
    };
    let end = text.iter().position(|&b| b == b'%').unwrap_or(text.len());
    let text = text.get(..end)?;
    if !text.contains(&b':') {
        return None;
    }
    // The groups before `::` (or all of them), and those after it.
    let mut parts = ([0u16; 8], 0usize, [0u16; 8], 0usize);
    let mut gap = false;
    let mut at = 0;
    if text.starts_with(b"::") {
        gap = true;
        at = 2;
    }
    while at < text.len() {
        let rest = text.get(at..)?;
        let len = rest.iter().position(|&b| b == b':').unwrap_or(rest.len());
        let field = rest.get(..len)?;
        let (groups, count) = if gap {
            (&mut parts.2, &mut parts.3)
        } else {
            (&mut parts.0, &mut parts.1)
        };
        let mut push = |value: u16| -> Option<()> {
            *groups.get_mut(*count)? = value;
            *count += 1;
            Some(())
        };
        if field.contains(&b'.') && at + len == text.len() {
            let [a, b, c, d] = ipv4_octets(field)?;
            push(u16::from(a) << 8 | u16::from(b))?;
            push(u16::from(c) << 8 | u16::from(d))?;
        } else if (1..=4).contains(&len) {
            let mut value = 0u16;
            for &b in field {
                value = value << 4 | char::from(b).to_digit(16)? as u16;
            }
            push(value)?;
        } else {
            return None;
        }
        at += len;
        if at == text.len() {
            break;
        }
        at += 1; // the `:`
        if text.get(at) == Some(&b':') {
            if gap {
                return None;
            }
            gap = true;
            at += 1;
        } else if at == text.len() {
            return None; // a trailing single `:`
        }
    }
    let (head, head_len, tail, tail_len) = parts;
    if (gap && head_len + tail_len > 7) || (!gap && head_len != 8) {
        return None;
    }
    let mut all = head;
    for (i, group) in tail.iter().take(tail_len).enumerate() {
        *all.get_mut(8 - tail_len + i)? = *group;
    }
    Some(all)
}

/// The four octets of a dotted IPv4 address (`192.0.2.7`), each 0–255 in decimal.
fn ipv4_octets(text: &[u8]) -> Option<[u8; 4]> {
    let mut octets = [0u8; 4];
    let mut fields = text.split(|&b| b == b'.');
    for octet in &mut octets {
        let field = fields.next().filter(|f| (1..=3).contains(&f.len()))?;
        let mut value = 0u16;
        for &b in field {
            value = value * 10 + u16::from(char::from(b).to_digit(10)? as u8);
        }
        *octet = u8::try_from(value).ok()?;
    }
    fields.next().is_none().then_some(octets)
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

    #[test]
    fn an_ipv6_source_is_counted_with_its_slash_64() {
        let group = |s: &str| source_group(s).into_owned();
        assert_eq!(group("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(group("2001:db8:1:2::ffff"), "2001:db8:1:2::/64");
        assert_eq!(group("2001:0DB8:0001:0002::1"), "2001:db8:1:2::/64");
        assert_ne!(group("2001:db8:1:3::1"), group("2001:db8:1:2::1"));
        assert_eq!(group("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(group("192.0.2.7"), "192.0.2.7");
        assert_eq!(group("[2001:db8::1]"), "2001:db8:0:0::/64");
        assert_eq!(group("fe80::1%eth0"), "fe80:0:0:0::/64");
        assert_eq!(group("::ffff:c000:207"), "192.0.2.7");
        assert_eq!(group("unix-socket"), "unix-socket");
        for not_an_address in ["1::2::3", "12345::1", "1:2:3:4:5:6:7:8:9", "::1.2.3", ":::"] {
            assert_eq!(group(not_an_address), not_an_address);
        }
    }

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
