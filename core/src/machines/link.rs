//! The link of one user and one app: consented scopes, and an epoch bumped by every unlink.
//!
//! Every code and grant records the epoch it was made in and is void once the epoch moves, so
//! an unlink is one write and a later check reads one record, however many tokens existed.

use crate::records::{LinkRecord, TokenAccessType};
use crate::scope::ScopeSet;

/// The current epoch; a pair that was never linked is at epoch 0.
pub(crate) fn epoch(link: Option<&LinkRecord>) -> u64 {
    link.map_or(0, |l| l.epoch)
}

/// Whether the user already consented to every scope of `scopes`, and to offline access if
/// `access` asks for it (re-authorization without a consent page).
pub(crate) fn has_granted(
    link: Option<&LinkRecord>,
    scopes: &ScopeSet,
    access: TokenAccessType,
) -> bool {
    link.is_some_and(|l| {
        scopes.is_subset(&l.granted) && (access != TokenAccessType::Offline || l.offline)
    })
}

/// Consent: the scopes (and offline access) join those granted before, in the same epoch.
pub(crate) fn consented(
    link: Option<&LinkRecord>,
    scopes: &ScopeSet,
    access: TokenAccessType,
) -> LinkRecord {
    let offline = access == TokenAccessType::Offline;
    LinkRecord {
        epoch: epoch(link),
        granted: link.map_or_else(|| scopes.clone(), |l| l.granted.union(scopes)),
        offline: offline || link.is_some_and(|l| l.offline),
    }
}

/// Unlink: a new epoch with nothing granted.
pub(crate) fn unlinked(link: &LinkRecord) -> LinkRecord {
    LinkRecord {
        epoch: link.epoch.saturating_add(1),
        granted: ScopeSet::default(),
        offline: false,
    }
}
