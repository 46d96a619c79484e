//! Access tokens: minted active; they end at `expires_at` (exact boundary) or with their grant.

use crate::credentials::AccessToken;
use crate::ctx::Ctx;
use crate::ids::GrantId;
use crate::records::{AccessTokenRecord, GrantRecord, TokenAccessType};
use crate::scope::ScopeSet;
use crate::time::{is_expired, UnixTime};

/// When a token minted now for `access_type` expires: never for a legacy long-lived token minted
/// before the cutoff, after the configured lifetime for every other.
pub(crate) fn expires_at(ctx: &Ctx<'_>, access_type: TokenAccessType) -> Option<UnixTime> {
    let policy = ctx.config.policy();
    let long_lived = access_type == TokenAccessType::Legacy && ctx.now < policy.long_lived_cutoff;
    (!long_lived).then(|| ctx.now.plus(policy.access_token_ttl))
}

/// Mints an access token of `grant` carrying `scopes`.
pub(crate) fn mint(
    ctx: &Ctx<'_>,
    grant_id: &GrantId,
    grant: &GrantRecord,
    scopes: ScopeSet,
    expires_at: Option<UnixTime>,
) -> (AccessToken, AccessTokenRecord) {
    let token = AccessToken::mint(ctx.entropy);
    let record = AccessTokenRecord {
        grant: grant_id.clone(),
        app: grant.app.clone(),
        account_id: grant.account_id.clone(),
        scopes,
        expires_at,
    };
    (token, record)
}

/// Whether the token is past its expiry at `now` (valid while `now < expires_at`).
pub(crate) fn has_expired(record: &AccessTokenRecord, now: UnixTime) -> bool {
    record.expires_at.is_some_and(|at| is_expired(at, now))
}
