//! The link of one user and one app: consented scopes, and an epoch bumped by every unlink.
//!
//! Every code and grant records the epoch it was made in and is void once the epoch moves (or
//! the link is gone), so an unlink is one transaction and a later check reads one record,
//! however many tokens existed. The grants that never end by themselves are the link's
//! *members*, one record each at consecutive places, so that the link stays the same size
//! however many there are: an unlink marks every place so far as to be swept, and sweeps
//! them a page at a time, giving them (and their tokens) a purge time; the unlinked link goes
//! once nothing is left to sweep. A new link starts at a random epoch, and its places there
//! too: one made again after an earlier link was purged cannot match anything issued under
//! that one.

use crate::ids::{GrantId, RedirectUri};
use crate::prelude::*;
use crate::records::{LinkRecord, Resources, TokenAccessType};
use crate::scope::ScopeSet;

/// Whether something issued in `epoch` still stands: the link is there (at `link_epoch`),
/// at that epoch.
pub(crate) fn stands(link_epoch: Option<u64>, epoch: u64) -> bool {
    link_epoch == Some(epoch)
}

/// Whether the user already consented to every scope of `scopes`, to offline access if
/// `access` asks for it, and to every one of `resources` ([`Resources::or_here`]):
/// re-authorization without a consent page.
pub(crate) fn has_granted(
    link: Option<&LinkRecord>,
    scopes: &ScopeSet,
    access: TokenAccessType,
    resources: &Resources,
) -> bool {
    link.is_some_and(|l| {
        scopes.is_subset(&l.granted)
            && (access != TokenAccessType::Offline || l.offline)
            && l.resources.covers(resources)
    })
}

/// Consent: the scopes, offline access and `resources` ([`Resources::or_here`]) join those
/// granted before, in the same epoch, and `redirect_uri` is where the answer went this time; a
/// new link starts at `first_epoch` (random).
pub(crate) fn consented(
    link: Option<&LinkRecord>,
    scopes: &ScopeSet,
    access: TokenAccessType,
    resources: &Resources,
    redirect_uri: Option<&RedirectUri>,
    first_epoch: u64,
) -> LinkRecord {
    let offline = access == TokenAccessType::Offline;
    let before = link.map(|l| &l.resources);
    let resources = Resources::from_names(
        resources
            .iter()
            .chain(before.into_iter().flat_map(Resources::iter)),
    );
    match link {
        Some(l) => LinkRecord {
            granted: l.granted.union(scopes),
            offline: offline || l.offline,
            resources,
            redirect_uri: redirect_uri.cloned(),
            ..l.clone()
        },
        None => LinkRecord {
            epoch: first_epoch,
            granted: scopes.clone(),
            offline,
            grants: Vec::new(),
            resources,
            members: first_epoch,
            swept: first_epoch,
            sweep_to: first_epoch,
            redirect_uri: redirect_uri.cloned(),
        },
    }
}

/// A grant that never ends by itself was issued in the link's epoch: it takes the link's next
/// member place, returned with the link that counts it.
pub(crate) fn with_member(link: &LinkRecord) -> (LinkRecord, u64) {
    let place = link.members;
    let next = LinkRecord {
        members: place.saturating_add(1),
        ..link.clone()
    };
    (next, place)
}

/// How many members an unlink sweeps per step: a step's reads and its one transaction stay
/// bounded (a member, its grant and its two tokens each: at most 129 puts with the link).
pub(crate) const SWEEP_PAGE: u64 = 32;

/// The places of the next page to sweep, if any are left.
pub(crate) fn to_sweep(link: &LinkRecord) -> Option<core::ops::Range<u64>> {
    let end = link.sweep_to.min(link.swept.saturating_add(SWEEP_PAGE));
    (link.swept < end).then_some(link.swept..end)
}

/// Whether the link holds nothing any more: no consent since its unlink, nothing to sweep.
/// Then it may go (a purge time), with what it ended.
pub(crate) fn is_spent(link: &LinkRecord) -> bool {
    to_sweep(link).is_none()
        && link.granted.is_empty()
        && !link.offline
        && link.resources.is_empty()
        && link.grants.is_empty()
}

/// The grant was revoked: off the list. `None` when it is not on it (nothing to write).
pub(crate) fn without_grant(link: &LinkRecord, grant: &GrantId) -> Option<LinkRecord> {
    let position = link.grants.iter().position(|listed| listed == grant)?;
    let mut next = link.clone();
    next.grants.remove(position);
    Some(next)
}

/// Unlink: a new epoch with nothing granted and no listed grants; every member so far is to
/// be swept.
pub(crate) fn unlinked(link: &LinkRecord) -> LinkRecord {
    LinkRecord {
        epoch: link.epoch.saturating_add(1),
        members: link.members,
        swept: link.swept,
        sweep_to: link.members,
        ..LinkRecord::default()
    }
}
