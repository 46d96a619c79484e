//! Refresh tokens: minted with an offline grant, bound to its app and user, reusable, never
//! expiring by time; they end only with their grant (revocation, code reuse, unlink).

use crate::ids::{AppKey, GrantId};
use crate::records::{GrantRecord, RefreshTokenRecord};
use crate::refusal::Refusal;
use crate::scope::ScopeSet;

/// The record of the refresh token of `grant`.
pub(crate) fn mint(grant_id: &GrantId, grant: &GrantRecord) -> RefreshTokenRecord {
    RefreshTokenRecord {
        grant: grant_id.clone(),
        app: grant.app.clone(),
        account_id: grant.account_id.clone(),
    }
}

/// The token was issued to the app presenting it (SPEC.md, Authentication 5).
pub(crate) fn check_app(token: &RefreshTokenRecord, app: &AppKey) -> Result<(), Refusal> {
    if &token.app == app {
        Ok(())
    } else {
        Err(Refusal::RefreshTokenOfAnotherApp)
    }
}

/// A client that proved only its `client_id` may use the token only if the grant came from a
/// PKCE exchange (SPEC.md: PKCE replaces the secret).
pub(crate) fn check_client(grant: &GrantRecord, has_secret: bool) -> Result<(), Refusal> {
    if has_secret || grant.pkce {
        Ok(())
    } else {
        Err(Refusal::SecretRequired)
    }
}

/// The scopes of the new access token: the grant's, or fewer when asked (RFC 6749 §6), never
/// more.
pub(crate) fn scopes(
    grant: &GrantRecord,
    requested: Option<&ScopeSet>,
) -> Result<ScopeSet, Refusal> {
    match requested {
        None => Ok(grant.scopes.clone()),
        Some(narrower) if narrower.is_subset(&grant.scopes) => Ok(narrower.clone()),
        Some(_) => Err(Refusal::ScopeWidened),
    }
}
