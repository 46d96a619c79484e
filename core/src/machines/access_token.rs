//! Access tokens: minted active; they end at `expires_at` (exact boundary) or with their grant.

use crate::config::Policy;
use crate::ids::{GrantId, KeyThumbprint};
use crate::records::view::ScopeNames;
use crate::records::Resources;
use crate::records::{AccessTokenRecord, GrantRecord, TokenAccessType};
use crate::refusal::Refusal;
use crate::scope::{Scope, ScopeSet};
use crate::time::{is_expired, UnixTime};

/// When a token minted at `now` for `access_type` expires: never for a legacy long-lived token
/// minted before the cutoff, after the configured lifetime for every other.
pub(crate) fn expires_at(
    access_type: TokenAccessType,
    now: UnixTime,
    policy: &Policy,
) -> Option<UnixTime> {
    let long_lived = access_type == TokenAccessType::Legacy && now < policy.long_lived_cutoff;
    (!long_lived).then(|| now.plus(policy.access_token_ttl))
}

/// When the record of a token expiring at `expires_at` may be purged: one lifetime later, so
/// that a client presenting it late is told `expired_access_token` (and refreshes) rather than
/// that the token is unknown. Never for a long-lived token: its grant's revocation sets it.
pub(crate) fn purge_after(expires_at: Option<UnixTime>, policy: &Policy) -> Option<UnixTime> {
    expires_at.map(|at| at.plus(policy.access_token_ttl))
}

/// The terms of an access token: what it carries, until when, for which resources, and the
/// generation of its account's ledger it is minted at ([`ledger::minting`](super::ledger)).
pub(crate) struct TokenTerms {
    pub scopes: ScopeSet,
    pub expires_at: Option<UnixTime>,
    pub audience: Resources,
    pub generation: Option<u64>,
    /// The key it is bound to (DPoP), if any.
    pub bound_to: Option<KeyThumbprint>,
}

/// The record of an access token of `grant` on `terms`.
pub(crate) fn mint(
    grant_id: &GrantId,
    grant: &GrantRecord,
    terms: TokenTerms,
) -> AccessTokenRecord {
    AccessTokenRecord {
        grant: grant_id.clone(),
        app: grant.app.clone(),
        subject: grant.subject.clone(),
        scopes: terms.scopes,
        expires_at: terms.expires_at,
        audience: terms.audience,
        generation: terms.generation,
        uid: grant.uid.clone(),
        exchanged_by: None,
        acting: false,
        bound_to: terms.bound_to,
        // The grant's props ride on each of its tokens: an API call reads the token alone.
        props: grant.props.clone(),
    }
}

/// An unexpired token (valid while `now < expires_at`; `None`: long-lived).
pub(crate) fn check(expires_at: Option<UnixTime>, now: UnixTime) -> Result<(), Refusal> {
    match expires_at {
        Some(at) if is_expired(at, now) => Err(Refusal::AccessTokenExpired),
        _ => Ok(()),
    }
}

/// The token (carrying `scopes`) carries the endpoint's Required Scope.
pub(crate) fn permits(scopes: ScopeNames<'_>, required: &Scope) -> Result<(), Refusal> {
    if scopes.contains(required) {
        Ok(())
    } else {
        Err(Refusal::MissingScope(required.clone()))
    }
}
