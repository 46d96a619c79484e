//! Time as an input: the host reads its clock once per request and passes the reading in.

use serde::{Deserialize, Serialize};

/// Seconds since the Unix epoch, as read by the host's clock.
///
/// The core never reads a clock; every call carries one of these. Tests move it by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnixTime(pub u64);

impl UnixTime {
    /// 2021-10-01T00:00:00Z: from this instant on no new long-lived access token is created
    /// (SPEC.md, Versioning 2: "creation of long-lived access tokens ends on 30 September 2021").
    pub const LONG_LIVED_CUTOFF: UnixTime = UnixTime(1_633_046_400);

    /// This instant moved `span` later, saturating instead of overflowing.
    pub fn plus(self, span: Seconds) -> UnixTime {
        UnixTime(self.0.saturating_add(span.0))
    }

    /// The seconds from `now` until this instant (zero once it has passed).
    pub fn seconds_from(self, now: UnixTime) -> Seconds {
        Seconds(self.0.saturating_sub(now.0))
    }
}

/// A span of whole seconds (lifetimes, `expires_in`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Seconds(pub u64);

/// An instant after which something stops being valid.
///
/// The boundary is exact and shared by every credential: valid while `now < expires_at`,
/// invalid from `now == expires_at` on.
pub(crate) fn is_expired(expires_at: UnixTime, now: UnixTime) -> bool {
    now >= expires_at
}
