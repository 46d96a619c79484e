//! Grants: what one consent produced once redeemed — an access token, perhaps a refresh token,
//! and every access token later minted from it. Revoking the grant ends all of them at once.

use crate::config::{Config, Issuer, Policy};
use crate::ids::{AppKey, KeyThumbprint, Subject, Uid};
use crate::partition::Partition;
use crate::props::SealedProps;
use crate::records::{GrantRecord, RecordKey, Resources};
use crate::refusal::Refusal;
use crate::scope::ScopeSet;
use crate::time::UnixTime;

/// What a grant is made of.
pub(crate) struct GrantTerms<'a> {
    pub app: &'a AppKey,
    /// Whom it acts for, and the person's uid (`None` for the app itself).
    pub subject: Subject,
    pub uid: Option<Uid>,
    pub scopes: ScopeSet,
    pub link_epoch: u64,
    pub pkce: bool,
    /// The resources consented to (RFC 8707).
    pub resources: Resources,
    /// The key its refresh token is bound to (DPoP: a public client's proof), if any.
    pub refresh_bound_to: Option<KeyThumbprint>,
    /// The host's props, sealed, if it gave any.
    pub props: Option<SealedProps>,
}

/// A new, live grant.
pub(crate) fn new(terms: GrantTerms<'_>) -> GrantRecord {
    GrantRecord {
        app: terms.app.clone(),
        subject: terms.subject,
        uid: terms.uid,
        scopes: terms.scopes,
        link_epoch: terms.link_epoch,
        pkce: terms.pkce,
        revoked_at: None,
        refresh_token: None,
        long_lived_token: None,
        resources: terms.resources,
        rotation: None,
        member: None,
        idle_until: None,
        refresh_bound_to: terms.refresh_bound_to,
        props: terms.props,
    }
}

/// The key of the link a grant of `app` for `subject` stands by (in `partition`, the grant's):
/// its person's link with the app; `None` for a grant to the app itself, which no person can
/// unlink (it ends by revocation, or with the app).
pub(crate) fn link_key(partition: Partition, app: &AppKey, subject: &Subject) -> Option<RecordKey> {
    subject
        .account_id()
        .map(|account| RecordKey::Link(partition, app.clone(), account.clone()))
}

/// Whether a grant still stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    Live,
    Revoked,
    /// Its link moved to a newer epoch (an unlink), or is missing (fail closed).
    Unlinked,
}

/// Where a grant made in link epoch `epoch` stands, revoked or not, given its link: `None` for
/// a grant with no link (to the app itself), `Some(None)` when its link is gone, else the
/// link's epoch.
pub(crate) fn standing(revoked: bool, epoch: u64, link: Option<Option<u64>>) -> Standing {
    if revoked {
        Standing::Revoked
    } else if link.is_none_or(|link_epoch| super::link::stands(link_epoch, epoch)) {
        Standing::Live
    } else {
        Standing::Unlinked
    }
}

/// When a live grant's records may be purged: under an idle lifetime, one access-token
/// lifetime after its idle deadline (its last access token has expired by then); else never
/// (it ends by revocation or unlink, which set the time).
pub(crate) fn purge_after(grant: &GrantRecord, policy: &Policy) -> Option<UnixTime> {
    grant.idle_until.map(|at| at.plus(policy.access_token_ttl))
}

/// Revocation: the grant and every token of it end now (the first revocation's time stays).
pub(crate) fn revoked(grant: &GrantRecord, now: UnixTime) -> GrantRecord {
    GrantRecord {
        revoked_at: Some(grant.revoked_at.unwrap_or(now)),
        ..grant.clone()
    }
}

/// The audience of a token minted from what was consented to (RFC 8707 §2.2): the resources
/// asked for, which must be among those consented to, or else all of those. A consent that
/// named no resource was for the API served here (the issuer's origin) and nothing else: it
/// mints for no other resource. A consent to the API served here covers each of its endpoints
/// by its own URL (a narrower audience). `requested` holds only resources the server knows
/// (checked when parsed).
pub(crate) fn audience(
    consented: &Resources,
    requested: &Resources,
    config: &Config,
) -> Result<Resources, Refusal> {
    if requested.is_empty() {
        return Ok(consented.clone());
    }
    let here = config.issuer().map(Issuer::resource);
    let consented = consented.or_here(here);
    let whole_api = here.is_some_and(|here| consented.contains(here));
    let covered = |resource: &str| {
        consented.contains(resource) || (whole_api && config.api_endpoint_named(resource).is_some())
    };
    if !requested.iter().all(covered) {
        return Err(Refusal::InvalidTarget);
    }
    Ok(requested.clone())
}
