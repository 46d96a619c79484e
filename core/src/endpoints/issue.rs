//! Issuing a grant with its tokens (shared by the code exchange and the legacy implicit flow),
//! and revoking one (shared by the revoke endpoint and the code exchange's reuse detection).

use crate::credentials::{AccessToken, RefreshToken};
use crate::ctx::{create, replace, Ctx, Flow, Loaded, RecordKind};
use crate::ids::{GrantId, KeyThumbprint};
use crate::machines::access_token::TokenTerms;
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{access_token, ledger, link, refresh_token};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::view::LinkView;
use crate::records::Resources;
use crate::records::{
    AccessTokenRecord, GrantRecord, LedgerRecord, LinkRecord, MemberRecord, Record, RecordKey,
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

/// A new grant's first access token: the access asked for, the resources it is for (RFC
/// 8707), and the generation of the account's ledger it is minted at.
pub(crate) struct FirstToken {
    pub access_type: TokenAccessType,
    pub audience: Resources,
    pub generation: Option<u64>,
    /// The key it is bound to (DPoP), if any.
    pub bound_to: Option<KeyThumbprint>,
}

/// Whether a grant of `access_type` whose access token expires at `expires_at` never ends by
/// itself (it has a refresh token or a long-lived access token): it is then one of its link's
/// members.
pub(crate) fn outlives_tokens(access_type: TokenAccessType, expires_at: Option<UnixTime>) -> bool {
    access_type == TokenAccessType::Offline || expires_at.is_none()
}

/// Issues grant `grant_id` (drawn from the request's entropy by the caller, which may need it
/// first): an access token, and a refresh token for offline access.
///
/// Everything lies in `partition`, the user's. A grant that never ends by itself takes member
/// place `next_member` of its link.
pub(crate) fn issue_grant(
    ctx: &Ctx<'_>,
    partition: Partition,
    grant_id: GrantId,
    terms: GrantTerms<'_>,
    first: FirstToken,
    next_member: u64,
) -> IssuedGrant {
    let mut grant = grant::new(terms);
    let access_type = first.access_type;
    let expires_at = access_token::expires_at(access_type, ctx.now, ctx.config.policy());
    let access_token = partition.access_token(ctx.config.server_key(), &ctx.entropy.primary());
    let access_record = access_token::mint(
        &grant_id,
        &grant,
        TokenTerms {
            scopes: grant.scopes.clone(),
            expires_at,
            audience: first.audience,
            generation: first.generation,
            bound_to: first.bound_to,
        },
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
    grant.member = outlives_tokens(access_type, expires_at).then_some(next_member);
    // Under an idle lifetime an offline grant ends unless its refresh token is used in time;
    // it and what it owns go one access-token lifetime after that.
    let policy = ctx.config.policy();
    grant.idle_until = policy
        .refresh_idle_lifetime
        .filter(|_| refresh.is_some())
        .map(|idle| ctx.now.plus(idle));
    let kept_until = grant::purge_after(&grant, policy);
    let member_put = member_key(partition, &grant).map(|key| {
        create(
            key,
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
/// leaves its link's list (nothing is left for an unlink to end), and its account's ledger moves
/// on ([`ended_ledger`]).
pub(crate) fn revoke_grant(
    ctx: &Ctx<'_>,
    key: RecordKey,
    loaded: &Loaded<'_, GrantRecord>,
) -> Flow<Revoked> {
    let grant = loaded.record;
    let partition = key.partition();
    let members = owned_keys(partition, grant);
    let link_key = grant::link_key(partition, &grant.app, &grant.subject);
    let ledger_key = RecordKey::Ledger(partition);
    let mut needed: Vec<&RecordKey> = members.iter().collect();
    needed.extend(link_key.iter().chain([&ledger_key]));
    ctx.need(&needed)?;
    let purge = Some(ctx.now.plus(ctx.config.policy().access_token_ttl));
    let mut puts = vec![replace(
        key.clone(),
        Some(loaded.version),
        &Record::Grant(grant::revoked(grant, ctx.now)),
        purge,
    )];
    puts.extend(purged_tokens(ctx, members, purge)?);
    let (generation, ledger) = ended_ledger(ctx, partition)?;
    puts.push(ledger);
    let link = match &link_key {
        Some(link_key) => ctx.load::<LinkRecord>(link_key)?,
        None => None,
    };
    if let (RecordKey::Grant(_, grant_id), Some(found), Some(link_key)) = (&key, link, link_key) {
        if let Some(next) = link::without_grant(found.record, grant_id) {
            puts.push(replace(
                link_key,
                Some(found.version),
                &Record::Link(next),
                None,
            ));
        }
    }
    Ok(Revoked { puts, generation })
}

/// Where a grant's place among its link's members is kept, if it has one (only a person's
/// grant that never ends by itself has).
fn member_key(partition: Partition, grant: &GrantRecord) -> Option<RecordKey> {
    let (place, account) = grant.member.zip(grant.subject.account_id())?;
    Some(RecordKey::Member(
        partition,
        grant.app.clone(),
        account.clone(),
        place,
    ))
}

/// The epoch of the link under `link_key`, for [`grant::standing`]: `None` for a grant with no
/// link (to the app itself), `Some(None)` when its link is gone. Read in place: a refresh
/// decoded the whole link (its members, its consented scopes) for this one number.
pub(crate) fn link_epoch(ctx: &Ctx<'_>, link_key: Option<&RecordKey>) -> Flow<Option<Option<u64>>> {
    link_key
        .map(|key| Ok(ctx.view::<LinkView>(key)?.map(|(_, link)| link.epoch)))
        .transpose()
}

/// A grant's revocation ([`revoke_grant`]).
pub(crate) struct Revoked {
    /// The writes that end the grant, its tokens and its place on the link, and move the ledger.
    pub puts: Vec<Put>,
    /// The ledger's generation after them: what a token minted in the same transaction records.
    pub generation: u64,
}

/// The ledger of the account in `partition` after an end there ([`ledger::ended`]): its new
/// generation, and the write, conditional on the version read (or on its absence), so that
/// it conflicts with every other write of the ledger.
pub(crate) fn ended_ledger(ctx: &Ctx<'_>, partition: Partition) -> Flow<(u64, Put)> {
    let key = RecordKey::Ledger(partition);
    let found = ctx.load::<LedgerRecord>(&key)?;
    let next = ledger::ended(
        found.as_ref().map(|l| l.record),
        ctx.entropy.ledger_generation(),
        ctx.now,
        ctx.config.policy().access_token_ttl,
    );
    Ok((next.generation, ledger_put(key, found, next)))
}

/// A mint, in `partition`, of an access token expiring at `expires_at` ([`ledger::minting`]):
/// the generation the token records, and the ledger's write if the mint must write it.
/// `always`: the ledger was read with the grant or link minted under, not before them.
pub(crate) fn minting_ledger(
    ctx: &Ctx<'_>,
    partition: Partition,
    expires_at: Option<UnixTime>,
    always: bool,
) -> Flow<(Option<u64>, Option<Put>)> {
    if expires_at.is_none() {
        // A long-lived token is always checked against its grant and link.
        return Ok((None, None));
    }
    let key = RecordKey::Ledger(partition);
    let found = ctx.load::<LedgerRecord>(&key)?;
    let minting = ledger::minting(
        found.as_ref().map(|l| l.record),
        ctx.entropy.ledger_generation(),
        expires_at,
        ctx.config.policy().access_token_ttl,
        always,
    );
    let put = minting.write.map(|next| ledger_put(key, found, next));
    Ok((minting.generation, put))
}

/// The ledger written over the one `found` (at its version; absent: created).
fn ledger_put(key: RecordKey, found: Option<Loaded<'_, LedgerRecord>>, next: LedgerRecord) -> Put {
    let kept_until = Some(next.kept_until);
    replace(
        key,
        found.map(|l| l.version),
        &Record::Ledger(next),
        kept_until,
    )
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
    let member = member_key(partition, grant);
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
