//! Issuing a grant with its tokens (shared by the code exchange and the legacy implicit flow),
//! and revoking one (shared by the revoke endpoint and the code exchange's reuse detection).

use crate::credentials::{AccessToken, RefreshToken};
use crate::ctx::{create, replace, Ctx, Flow, Loaded, RecordKind};
use crate::ids::GrantId;
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{access_token, link, refresh_token};
use crate::partition::Partition;
use crate::records::Resources;
use crate::records::{
    AccessTokenRecord, GrantRecord, LinkRecord, MemberRecord, Record, RecordKey,
    RefreshTokenRecord, TokenAccessType,
};
use crate::step::Put;
use crate::time::{Seconds, UnixTime};

/// A new grant with its tokens, and the writes that store them.
pub(crate) struct IssuedGrant {
    pub grant_id: GrantId,
    pub grant: GrantRecord,
    pub access_token: AccessToken,
    pub expires_in: Option<Seconds>,
    pub refresh_token: Option<RefreshToken>,
    /// The grant's member place if it never ends by itself (it has a refresh token or a
    /// long-lived access token): its member record is among the puts, and the caller counts
    /// the place on the link ([`link::with_member`]), for an unlink to sweep it.
    pub member: Option<u64>,
    pub puts: Vec<Put>,
}

/// Issues grant `grant_id` (drawn from the request's entropy by the caller, which may need it
/// first): an access token, and a refresh token for offline access.
///
/// Everything lies in `partition`, the user's. The access token is for `audience` (RFC 8707).
/// A grant that never ends by itself takes member place `next_member` of its link.
pub(crate) fn issue_grant(
    ctx: &Ctx<'_>,
    partition: Partition,
    grant_id: GrantId,
    terms: GrantTerms<'_>,
    access_type: TokenAccessType,
    audience: Resources,
    next_member: u64,
) -> IssuedGrant {
    let mut grant = grant::new(terms);
    let expires_at = access_token::expires_at(access_type, ctx.now, ctx.config.policy());
    let access_token = partition.access_token(ctx.config.server_key(), &ctx.entropy.primary());
    let access_record = access_token::mint(
        &grant_id,
        &grant,
        grant.scopes.clone(),
        expires_at,
        audience,
    );
    let refresh = (access_type == TokenAccessType::Offline).then(|| {
        (
            partition.refresh_token(ctx.config.server_key(), &ctx.entropy.secondary()),
            refresh_token::mint(&grant_id, &grant),
        )
    });
    // The grant knows the tokens that never expire by themselves, to purge them when it ends.
    grant.refresh_token = refresh.as_ref().map(|(token, _)| token.digest());
    grant.long_lived_token = expires_at.is_none().then(|| access_token.digest());
    let outlives_tokens = grant.refresh_token.is_some() || grant.long_lived_token.is_some();
    grant.member = outlives_tokens.then_some(next_member);
    // Under an idle lifetime an offline grant ends unless its refresh token is used in time;
    // it and what it owns go one access-token lifetime after that.
    let policy = ctx.config.policy();
    grant.idle_until = policy
        .refresh_idle_lifetime
        .filter(|_| refresh.is_some())
        .map(|idle| ctx.now.plus(idle));
    let kept_until = grant::purge_after(&grant, policy);
    let member_key = |place| {
        RecordKey::Member(
            partition,
            grant.app.clone(),
            grant.account_id.clone(),
            place,
        )
    };
    let member_put = grant.member.map(|place| {
        create(
            member_key(place),
            &Record::Member(MemberRecord {
                grant: grant_id.clone(),
            }),
            kept_until,
        )
    });
    // An online grant is worthless once its only access token is purged; an offline or
    // long-lived one lives as long as its tokens can.
    let grant_purge = match refresh {
        None => access_token::purge_after(expires_at, policy),
        Some(_) => kept_until,
    };
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
            kept_until,
        ));
        token
    });
    puts.extend(member_put);
    IssuedGrant {
        grant_id,
        expires_in: expires_at.map(|at| at.seconds_from(ctx.now)),
        member: grant.member,
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
/// — then nothing can refer to them any more, and the host may purge them all. The grant
/// leaves its link's list (nothing is left for an unlink to end).
pub(crate) fn revoke_grant(
    ctx: &Ctx<'_>,
    key: RecordKey,
    loaded: &Loaded<'_, GrantRecord>,
) -> Flow<Vec<Put>> {
    let grant = loaded.record;
    let partition = key.partition();
    let members = owned_keys(partition, grant);
    let link_key = RecordKey::Link(partition, grant.app.clone(), grant.account_id.clone());
    let mut needed: Vec<&RecordKey> = members.iter().collect();
    needed.push(&link_key);
    ctx.need(&needed)?;
    let purge = Some(ctx.now.plus(ctx.config.policy().access_token_ttl));
    let mut puts = vec![replace(
        key.clone(),
        Some(loaded.version),
        &Record::Grant(grant::revoked(grant, ctx.now)),
        purge,
    )];
    puts.extend(purged_tokens(ctx, members, purge)?);
    if let (RecordKey::Grant(_, grant_id), Some(found)) = (&key, ctx.load::<LinkRecord>(&link_key)?)
    {
        if let Some(next) = link::without_grant(found.record, grant_id) {
            puts.push(replace(
                link_key,
                Some(found.version),
                &Record::Link(next),
                None,
            ));
        }
    }
    Ok(puts)
}

/// The grants an unlink ends (its link's list): each kept as it is — refused as unlinked, by
/// the link's new epoch — with its tokens that cannot expire, all with a purge time one access
/// token lifetime away, when the last short-lived token of the grants has expired.
pub(crate) fn unlinked_grants(
    ctx: &Ctx<'_>,
    partition: Partition,
    grants: &[GrantId],
) -> Flow<Vec<Put>> {
    let keys: Vec<RecordKey> = grants
        .iter()
        .map(|id| RecordKey::Grant(partition, id.clone()))
        .collect();
    ctx.need(&keys.iter().collect::<Vec<_>>())?;
    let mut found = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(loaded) = ctx.load::<GrantRecord>(&key)? {
            found.push((key, loaded));
        }
    }
    let members: Vec<RecordKey> = found
        .iter()
        .flat_map(|(_, loaded)| owned_keys(partition, loaded.record))
        .collect();
    ctx.need(&members.iter().collect::<Vec<_>>())?;
    let purge = Some(ctx.now.plus(ctx.config.policy().access_token_ttl));
    let mut puts: Vec<Put> = found
        .into_iter()
        .map(|(key, loaded)| {
            replace(
                key,
                Some(loaded.version),
                &Record::Grant(loaded.record.clone()),
                purge,
            )
        })
        .collect();
    puts.extend(purged_tokens(ctx, members, purge)?);
    Ok(puts)
}

/// The keys of what a grant owns that cannot expire by itself: its refresh token, a
/// long-lived access token, its member record.
fn owned_keys(partition: Partition, grant: &GrantRecord) -> Vec<RecordKey> {
    let refresh = grant
        .refresh_token
        .map(|d| RecordKey::RefreshToken(partition, d));
    let long_lived = grant
        .long_lived_token
        .map(|d| RecordKey::AccessToken(partition, d));
    let member = grant.member.map(|place| {
        RecordKey::Member(
            partition,
            grant.app.clone(),
            grant.account_id.clone(),
            place,
        )
    });
    refresh
        .into_iter()
        .chain(long_lived)
        .chain(member)
        .collect()
}

/// Each token record under `keys` as it is, with a purge time (none for a record that is gone).
fn purged_tokens(ctx: &Ctx<'_>, keys: Vec<RecordKey>, purge: Option<UnixTime>) -> Flow<Vec<Put>> {
    let mut puts = Vec::with_capacity(keys.len());
    for key in keys {
        let put = match key {
            RecordKey::RefreshToken(..) => {
                purged::<RefreshTokenRecord>(ctx, key, Record::RefreshToken, purge)?
            }
            RecordKey::AccessToken(..) => {
                purged::<AccessTokenRecord>(ctx, key, Record::AccessToken, purge)?
            }
            RecordKey::Member(..) => purged::<MemberRecord>(ctx, key, Record::Member, purge)?,
            _ => None,
        };
        puts.extend(put);
    }
    Ok(puts)
}

/// The record under `key` as it is, with a purge time: a conditional write at the version read
/// (none if the record is gone).
fn purged<R: RecordKind + Clone>(
    ctx: &Ctx<'_>,
    key: RecordKey,
    wrap: fn(R) -> Record,
    purge: Option<UnixTime>,
) -> Flow<Option<Put>> {
    Ok(ctx
        .load::<R>(&key)?
        .map(|found| replace(key, Some(found.version), &wrap(found.record.clone()), purge)))
}
