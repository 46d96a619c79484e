//! Grants: what one consent produced once redeemed — an access token, perhaps a refresh token,
//! and every access token later minted from it. Revoking the grant ends all of them at once.

use crate::credentials::{AccessToken, RefreshToken};
use crate::ctx::Ctx;
use crate::ids::{GrantId, User};
use crate::machines::{access_token, refresh_token};
use crate::records::{GrantRecord, LinkRecord, Record, RecordKey, TokenAccessType};
use crate::scope::ScopeSet;
use crate::step::Put;
use crate::time::{Seconds, UnixTime};
use crate::AppKey;

/// What a grant is made of.
pub(crate) struct GrantTerms<'a> {
    pub app: &'a AppKey,
    pub user: User,
    pub scopes: ScopeSet,
    pub access_type: TokenAccessType,
    pub link_epoch: u64,
    pub pkce: bool,
}

/// A new grant with its tokens, and the writes that store them.
pub(crate) struct Issued {
    pub grant_id: GrantId,
    pub grant: GrantRecord,
    pub access_token: AccessToken,
    pub expires_in: Option<Seconds>,
    pub refresh_token: Option<RefreshToken>,
    pub puts: Vec<Put>,
}

/// Issues a grant: an access token, and a refresh token for offline access.
pub(crate) fn issue(ctx: &Ctx<'_>, terms: GrantTerms<'_>) -> Issued {
    let grant_id = ctx.entropy.grant_id();
    let grant = GrantRecord {
        app: terms.app.clone(),
        account_id: terms.user.account_id,
        uid: terms.user.uid,
        scopes: terms.scopes,
        link_epoch: terms.link_epoch,
        pkce: terms.pkce,
        revoked_at: None,
    };
    let expires_at = access_token::expires_at(ctx, terms.access_type);
    let (access_token, access_record) =
        access_token::mint(ctx, &grant_id, &grant, grant.scopes.clone(), expires_at);
    let refresh = (terms.access_type == TokenAccessType::Offline)
        .then(|| refresh_token::mint(ctx, &grant_id, &grant));
    // An online grant is worthless once its only access token expired; an offline or long-lived
    // one lives as long as its tokens can.
    let grant_purge = expires_at.filter(|_| refresh.is_none());
    let mut puts = vec![
        Put::create(
            RecordKey::Grant(grant_id.clone()),
            Record::Grant(grant.clone()),
            grant_purge,
        ),
        Put::create(
            RecordKey::AccessToken(access_token.digest()),
            Record::AccessToken(access_record),
            expires_at,
        ),
    ];
    let refresh_token = refresh.map(|(token, record)| {
        puts.push(Put::create(
            RecordKey::RefreshToken(token.digest()),
            Record::RefreshToken(record),
            None,
        ));
        token
    });
    Issued {
        grant_id,
        expires_in: expires_at.map(|at| Seconds(at.0.saturating_sub(ctx.now.0))),
        grant,
        access_token,
        refresh_token,
        puts,
    }
}

/// Whether the grant still stands: not revoked, and its link not unlinked since.
/// A grant whose link record is missing is treated as ended (fail closed).
pub(crate) fn is_live(grant: &GrantRecord, link: Option<&LinkRecord>) -> bool {
    grant.revoked_at.is_none() && link.is_some_and(|l| l.epoch == grant.link_epoch)
}

/// Revocation: the grant and every token of it end now.
pub(crate) fn revoked(grant: &GrantRecord, now: UnixTime) -> GrantRecord {
    GrantRecord {
        revoked_at: Some(grant.revoked_at.unwrap_or(now)),
        ..grant.clone()
    }
}
