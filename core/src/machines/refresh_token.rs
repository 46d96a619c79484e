//! Refresh tokens: minted with an offline grant, bound to its app and user, reusable, never
//! expiring by time; they end only with their grant (revocation, code reuse, unlink).

use crate::credentials::RefreshToken;
use crate::ctx::Ctx;
use crate::ids::GrantId;
use crate::records::{GrantRecord, RefreshTokenRecord};

/// Mints the refresh token of `grant`.
pub(crate) fn mint(
    ctx: &Ctx<'_>,
    grant_id: &GrantId,
    grant: &GrantRecord,
) -> (RefreshToken, RefreshTokenRecord) {
    let token = RefreshToken::mint(ctx.entropy);
    let record = RefreshTokenRecord {
        grant: grant_id.clone(),
        app: grant.app.clone(),
        account_id: grant.account_id.clone(),
    };
    (token, record)
}

/// Whether a client that proved only its `client_id` may use this refresh token: only if the
/// grant came from a PKCE exchange (SPEC.md: PKCE replaces the secret).
pub(crate) fn allows_public_client(grant: &GrantRecord) -> bool {
    grant.pkce
}
