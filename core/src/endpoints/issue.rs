//! Issuing a grant with its tokens (shared by the code exchange and the legacy implicit flow),
//! and revoking one (shared by the revoke endpoint and the code exchange's reuse detection).

use crate::credentials::{AccessToken, RefreshToken};
use crate::ctx::{create, replace, Ctx, Flow, Loaded, RecordKind};
use crate::ids::GrantId;
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{access_token, refresh_token};
use crate::partition::Partition;
use crate::records::{GrantRecord, Record, RecordKey, TokenAccessType};
use crate::step::Put;
use crate::time::{Seconds, UnixTime};

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
///
/// Everything lies in `partition`, the user's.
pub(crate) fn issue_grant(
    ctx: &Ctx<'_>,
    partition: Partition,
    grant_id: GrantId,
    terms: GrantTerms<'_>,
    access_type: TokenAccessType,
) -> IssuedGrant {
    let mut grant = grant::new(terms);
    let expires_at = access_token::expires_at(access_type, ctx.now, ctx.config.policy());
    let access_token = AccessToken::mint(partition, ctx.entropy);
    let access_record = access_token::mint(&grant_id, &grant, grant.scopes.clone(), expires_at);
    let refresh = (access_type == TokenAccessType::Offline).then(|| {
        (
            RefreshToken::mint(partition, ctx.entropy),
            refresh_token::mint(&grant_id, &grant),
        )
    });
    // The grant knows the tokens that never expire by themselves, to purge them when it ends.
    grant.refresh_token = refresh.as_ref().map(|(token, _)| token.digest());
    grant.long_lived_token = expires_at.is_none().then(|| access_token.digest());
    // An online grant is worthless once its only access token is purged; an offline or
    // long-lived one lives as long as its tokens can.
    let grant_purge =
        access_token::purge_after(expires_at, ctx.config.policy()).filter(|_| refresh.is_none());
    let mut puts = vec![
        create(
            RecordKey::Grant(partition, grant_id.clone()),
            &Record::Grant(grant.clone()),
            grant_purge,
        ),
        create(
            RecordKey::AccessToken(partition, access_token.digest()),
            &Record::AccessToken(access_record),
            access_token::purge_after(expires_at, ctx.config.policy()),
        ),
    ];
    let refresh_token = refresh.map(|(token, record)| {
        puts.push(create(
            RecordKey::RefreshToken(partition, token.digest()),
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

/// Revokes the grant loaded under `key`: the writes that end it and every token of it.
///
/// The grant and the tokens that cannot expire (its refresh token, a long-lived access token)
/// are kept, refused as revoked, until every short-lived access token of the grant has expired
/// — then nothing can refer to them any more, and the host may purge them all.
pub(crate) fn revoke_grant(
    ctx: &Ctx<'_>,
    key: RecordKey,
    loaded: &Loaded<'_, GrantRecord>,
) -> Flow<Vec<Put>> {
    let grant = loaded.record;
    let partition = key.partition();
    let refresh_key = grant
        .refresh_token
        .map(|d| RecordKey::RefreshToken(partition, d));
    let long_lived_key = grant
        .long_lived_token
        .map(|d| RecordKey::AccessToken(partition, d));
    let members: Vec<&RecordKey> = refresh_key.iter().chain(&long_lived_key).collect();
    ctx.need(&members)?;
    let purge = Some(ctx.now.plus(ctx.config.policy().access_token_ttl));
    let mut puts = vec![replace(
        key,
        Some(loaded.version),
        &Record::Grant(grant::revoked(grant, ctx.now)),
        purge,
    )];
    puts.extend(purged(ctx, refresh_key, Record::RefreshToken, purge)?);
    puts.extend(purged(ctx, long_lived_key, Record::AccessToken, purge)?);
    Ok(puts)
}

/// The record under `key` as it is, with a purge time: a conditional write at the version read
/// (none if the record is gone).
fn purged<R: RecordKind + Clone>(
    ctx: &Ctx<'_>,
    key: Option<RecordKey>,
    wrap: fn(R) -> Record,
    purge: Option<UnixTime>,
) -> Flow<Option<Put>> {
    let Some(key) = key else { return Ok(None) };
    Ok(ctx
        .load::<R>(&key)?
        .map(|found| replace(key, Some(found.version), &wrap(found.record.clone()), purge)))
}
