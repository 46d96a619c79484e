//! The link of one user and one app: consented scopes, and an epoch bumped by every unlink.
//!
//! Every code and grant records the epoch it was made in and is void once the epoch moves (or
//! the link is gone), so an unlink is one transaction and a later check reads one record,
//! however many tokens existed. The link also lists the grants of its epoch that never end by
//! themselves, so that the unlink can give them (and their tokens) a purge time; the unlinked
//! link goes with them. A new link starts at a random epoch: one made again after an earlier
//! link was purged cannot match anything issued under that one.

use crate::ids::GrantId;
use crate::records::{LinkRecord, Resources, TokenAccessType};
use crate::scope::ScopeSet;

/// Whether something issued in `epoch` still stands: the link is there, at that epoch.
pub(crate) fn stands(link: Option<&LinkRecord>, epoch: u64) -> bool {
    link.is_some_and(|l| l.epoch == epoch)
}

/// What a request asks consent for, resource-wise: the resources it names, or when it names
/// none the API served here (`here`, the issuer's origin; none in the reference profile).
pub(crate) fn consent_resources(requested: &Resources, here: Option<&str>) -> Resources {
    match (requested.is_empty(), here) {
        (true, Some(here)) => Resources::from_names([here]),
        _ => requested.clone(),
    }
}

/// Whether the user already consented to every scope of `scopes`, to offline access if
/// `access` asks for it, and to every one of `resources` ([`consent_resources`]):
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

/// Consent: the scopes, offline access and `resources` ([`consent_resources`]) join those
/// granted before, in the same epoch; a new link starts at `first_epoch` (random).
pub(crate) fn consented(
    link: Option<&LinkRecord>,
    scopes: &ScopeSet,
    access: TokenAccessType,
    resources: &Resources,
    first_epoch: u64,
) -> LinkRecord {
    let offline = access == TokenAccessType::Offline;
    let before = link.map(|l| &l.resources);
    LinkRecord {
        epoch: link.map_or(first_epoch, |l| l.epoch),
        granted: link.map_or_else(|| scopes.clone(), |l| l.granted.union(scopes)),
        offline: offline || link.is_some_and(|l| l.offline),
        grants: link.map_or_else(Vec::new, |l| l.grants.clone()),
        resources: Resources::from_names(
            resources
                .iter()
                .chain(before.into_iter().flat_map(Resources::iter)),
        ),
    }
}

/// A grant that never ends by itself was issued in the link's epoch: it joins the list.
pub(crate) fn with_grant(link: Option<&LinkRecord>, grant: GrantId) -> LinkRecord {
    let mut next = link.cloned().unwrap_or_default();
    next.grants.push(grant);
    next
}

/// The grant was revoked: off the list. `None` when it is not on it (nothing to write).
pub(crate) fn without_grant(link: &LinkRecord, grant: &GrantId) -> Option<LinkRecord> {
    let position = link.grants.iter().position(|listed| listed == grant)?;
    let mut next = link.clone();
    next.grants.remove(position);
    Some(next)
}

/// Unlink: a new epoch with nothing granted and no grants.
pub(crate) fn unlinked(link: &LinkRecord) -> LinkRecord {
    LinkRecord {
        epoch: link.epoch.saturating_add(1),
        ..LinkRecord::default()
    }
}
