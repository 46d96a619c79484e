//! Issuing a grant with its tokens: shared by the code exchange and the legacy implicit flow.

use crate::credentials::{AccessToken, RefreshToken};
use crate::ctx::{create, Ctx};
use crate::ids::GrantId;
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{access_token, refresh_token};
use crate::records::{GrantRecord, Record, RecordKey, TokenAccessType};
use crate::step::Put;
use crate::time::Seconds;

/// A new grant with its tokens, and the writes that store them.
pub(crate) struct IssuedGrant {
    pub grant_id: GrantId,
    pub grant: GrantRecord,
    pub access_token: AccessToken,
    pub expires_in: Option<Seconds>,
    pub refresh_token: Option<RefreshToken>,
    pub puts: Vec<Put>,
}

/// Issues grant `grant_id` (drawn from the request's entropy by the caller, which may need it
/// first): an access token, and a refresh token for offline access.
pub(crate) fn issue_grant(
    ctx: &Ctx<'_>,
    grant_id: GrantId,
    terms: GrantTerms<'_>,
    access_type: TokenAccessType,
) -> IssuedGrant {
    let grant = grant::new(terms);
    let expires_at = access_token::expires_at(access_type, ctx.now, ctx.config.policy());
    let access_token = AccessToken::mint(ctx.entropy);
    let access_record = access_token::mint(&grant_id, &grant, grant.scopes.clone(), expires_at);
    let refresh = (access_type == TokenAccessType::Offline).then(|| {
        (
            RefreshToken::mint(ctx.entropy),
            refresh_token::mint(&grant_id, &grant),
        )
    });
    // An online grant is worthless once its only access token expired; an offline or long-lived
    // one lives as long as its tokens can.
    let grant_purge = expires_at.filter(|_| refresh.is_none());
    let mut puts = vec![
        create(
            RecordKey::Grant(grant_id.clone()),
            &Record::Grant(grant.clone()),
            grant_purge,
        ),
        create(
            RecordKey::AccessToken(access_token.digest()),
            &Record::AccessToken(access_record),
            expires_at,
        ),
    ];
    let refresh_token = refresh.map(|(token, record)| {
        puts.push(create(
            RecordKey::RefreshToken(token.digest()),
            &Record::RefreshToken(record),
            None,
        ));
        token
    });
    IssuedGrant {
        grant_id,
        expires_in: expires_at.map(|at| at.seconds_from(ctx.now)),
        grant,
        access_token,
        refresh_token,
        puts,
    }
}
