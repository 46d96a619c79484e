//! `grant_type=refresh_token` (RFC 6749 §6): a new short-lived access token from a grant's
//! refresh token, which stays as it is or — where the standards profile rotates it (RFC 9700
//! §4.14.2) — is superseded by a new one.

use crate::config::{Config, Rotation};
use crate::credentials::{RefreshToken, RotationSeed, ServerKey};
use crate::ctx::{create, replace, Ctx, Decision, Flow, Loaded};
use crate::ending::{Ending, TokenBody};
use crate::endpoints::client_auth::Client;
use crate::endpoints::issue::{link_epoch, minting_ledger, revoke_grant};
use crate::endpoints::token::{asked_scope, one, AskedScope};
use crate::machines::access_token::TokenTerms;
use crate::machines::grant::{self, Standing};
use crate::machines::refresh_token::{Position, Rotated};
use crate::machines::{access_token, refresh_token};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{
    AccessTokenRecord, GrantRecord, MemberRecord, Record, RecordKey, RefreshTokenRecord, Resources,
    TokenAccessType,
};
use crate::refusal::Refusal;
use crate::scope::ScopeSet;
use crate::step::{AuditEvent, Transaction};
use crate::wire::form::Params;

/// A refresh as parsed.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub client: Client,
    /// Where the token's record is; `None` if it is not of the shape the core mints (refused
    /// unread).
    pub token: Option<RecordKey>,
    /// The token as presented, kept only where tokens rotate (a rotation derives its
    /// successors from it); the reference profile has no use for a copy.
    presented: Option<RefreshToken>,
    /// `scope`: `Err` when malformed, refused only once the token checks out.
    scope: AskedScope,
    /// `resource`, as for the exchange: a narrowing of the grant's.
    resources: Resources,
}

pub(super) fn parse(
    config: &Config,
    client: Client,
    params: &Params<'_>,
    resources: Resources,
) -> Result<Parsed, Ending> {
    let Some(token) = one(params, &client, "refresh_token")? else {
        return Err(client.refuse(Refusal::RefreshTokenMissing));
    };
    let scope = asked_scope(config, params, &client)?;
    Ok(Parsed {
        token: RecordKey::of_refresh_token(config.server_key(), token),
        presented: config.rotation().map(|_| RefreshToken::presented(token)),
        client,
        scope,
        resources,
    })
}

pub(super) fn decide(ctx: &Ctx<'_>, parsed: &Parsed) -> Flow<Decision> {
    let Some(token) = &parsed.token else {
        return Ok(Decision::End(
            parsed.client.refuse(Refusal::UnknownRefreshToken),
        ));
    };
    let request = RefreshRequest {
        token,
        presented: parsed.presented.as_ref(),
        scope: parsed.scope.as_ref(),
        resources: &parsed.resources,
    };
    refresh(ctx, &parsed.client, &request)
}

/// A refresh as asked.
struct RefreshRequest<'p> {
    /// Where the presented token's record is.
    token: &'p RecordKey,
    /// The token itself, where tokens rotate.
    presented: Option<&'p RefreshToken>,
    /// `scope`: `Err` when malformed.
    scope: Option<&'p Result<ScopeSet, ()>>,
    resources: &'p Resources,
}

/// `grant_type=refresh_token`: a new short-lived access token. The refresh token stays as it
/// is, or — when the standards profile rotates it — is superseded by a new one.
fn refresh(ctx: &Ctx<'_>, client: &Client, request: &RefreshRequest<'_>) -> Flow<Decision> {
    let end = |refusal| Ok(Decision::End(client.refuse(refusal)));
    let token = request.token;
    let partition = token.partition();
    let Some(loaded) = ctx.load::<RefreshTokenRecord>(token)? else {
        return end(Refusal::UnknownRefreshToken);
    };
    let record = loaded.record;
    if let Err(refusal) = refresh_token::check_app(record, &client.app) {
        return end(refusal);
    }
    let grant_key = RecordKey::Grant(partition, record.grant.clone());
    let link_key = grant::link_key(partition, &record.app, &record.subject);
    match &link_key {
        Some(link_key) => ctx.need(&[&grant_key, link_key])?,
        None => ctx.need(&[&grant_key])?,
    }
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return end(Refusal::UnknownRefreshToken);
    };
    if let Err(refusal) = refresh_token::check_client(grant.record, client.has_secret) {
        return end(refusal);
    }
    // A refresh token bound to a key (a public client's, RFC 9449 §5) is used only with a proof
    // of it — judged before reuse, so that a thief without the key cannot end the grant.
    if grant
        .record
        .refresh_bound_to
        .as_ref()
        .is_some_and(|key| client.proven_key() != Some(key))
    {
        return end(Refusal::GrantBoundToAnotherKey);
    }
    match grant::standing(
        grant.record.revoked_at.is_some(),
        grant.record.link_epoch,
        link_epoch(ctx, link_key.as_ref())?,
    ) {
        Standing::Live => {}
        Standing::Revoked => return end(Refusal::RefreshTokenRevoked),
        Standing::Unlinked => return end(Refusal::RefreshTokenUnlinked),
    }
    if let Err(refusal) = refresh_token::check_idle(grant.record, ctx.now) {
        return end(refusal);
    }
    // Reuse is judged before the parameters: a superseded token revokes whatever it asks.
    let RecordKey::RefreshToken(_, digest) = token else {
        return end(Refusal::UnknownRefreshToken);
    };
    let digest = *digest;
    // Where tokens rotate, the token as presented was kept for the rotation to derive from.
    let rotation = ctx
        .config
        .rotation()
        .zip(request.presented)
        .map(|(policy, presented)| Rotating {
            policy,
            presented,
            key: ctx.config.server_key(),
        });
    let policy = rotation.as_ref().map(|r| r.policy);
    let position = refresh_token::position(grant.record, &digest, ctx.now, policy);
    if position == Position::Reused {
        return refresh_token_reused(ctx, client, grant_key, &grant);
    }
    let requested = match request.scope {
        None => None,
        Some(Ok(set)) => Some(set),
        Some(Err(())) => return end(Refusal::MalformedScope),
    };
    let scopes =
        match refresh_token::scopes(grant.record, requested, ctx.config.offers_offline_access()) {
            Ok(scopes) => scopes,
            Err(refusal) => return end(refusal),
        };
    // RFC 6749 §5.1: the answer names the scopes when they are not those asked for.
    let named = requested
        .filter(|asked| **asked != scopes)
        .map(|_| scopes.clone());
    let audience = match grant::audience(&grant.record.resources, request.resources, ctx.config) {
        Ok(audience) => audience,
        Err(refusal) => return end(refusal),
    };
    if let (Position::Retry(last), Some(rotating)) = (&position, &rotation) {
        let retried = Retried {
            partition,
            seed: &last.seed,
            presented: rotating.presented,
            key: rotating.key,
            grant_key,
            grant: &grant,
        };
        return retry(ctx, client, &retried, &scopes, named.as_ref(), &audience);
    }
    let expires_at =
        access_token::expires_at(TokenAccessType::Offline, ctx.now, ctx.config.policy());
    let rotating = rotation.filter(|_| refresh_token::rotates(policy, client.has_secret));
    let seed = RotationSeed::draw(ctx.entropy);
    let access = match &rotating {
        Some(r) => partition.access_token(r.key, &seed.access_secret(r.key, r.presented)),
        None => partition.access_token(ctx.config.server_key(), &ctx.entropy.primary()),
    };
    let (generation, ledger_put) = minting_ledger(ctx, partition, expires_at, false)?;
    let access_record = access_token::mint(
        &record.grant,
        grant.record,
        TokenTerms {
            scopes,
            expires_at,
            audience,
            generation,
            bound_to: client.proven_key().cloned(),
        },
    );
    let mut puts = vec![create(
        RecordKey::AccessToken(partition, access.digest()),
        &Record::AccessToken(access_record),
        access_token::purge_after(expires_at, ctx.config.policy()),
    )];
    puts.extend(ledger_put);
    let successor = rotating
        .as_ref()
        .map(|r| partition.refresh_token(r.key, &seed.refresh_secret(r.key, r.presented)));
    let rotated = rotating
        .as_ref()
        .zip(successor.as_ref())
        .map(|(r, next)| Rotated {
            seed,
            successor: next.digest(),
            policy: r.policy,
        });
    let refreshed =
        refresh_token::refreshed(grant.record, digest, ctx.now, ctx.config.policy(), rotated);
    if let Some(next) = &successor {
        puts.push(create(
            RecordKey::RefreshToken(partition, next.digest()),
            &Record::RefreshToken(refresh_token::mint(&record.grant, grant.record)),
            refreshed.kept_until,
        ));
    }
    if let Some(until) = refreshed.presented_until {
        puts.push(replace(
            token.clone(),
            Some(loaded.version),
            &Record::RefreshToken(record.clone()),
            until,
        ));
    }
    if let Some((place, account)) = refreshed.member_moves.zip(record.subject.account_id()) {
        let member = RecordKey::Member(partition, record.app.clone(), account.clone(), place);
        if let Some(found) = ctx.load::<MemberRecord>(&member)? {
            puts.push(replace(
                member,
                Some(found.version),
                &Record::Member(found.record.clone()),
                refreshed.kept_until,
            ));
        }
    }
    if let Some(next_grant) = refreshed.grant {
        puts.push(replace(
            grant_key,
            Some(grant.version),
            &Record::Grant(next_grant),
            refreshed.kept_until,
        ));
    }
    let audit = if successor.is_some() {
        AuditEvent::RefreshTokenRotated {
            app: record.app.clone(),
            subject: record.subject.clone(),
            grant: record.grant.clone(),
        }
    } else {
        AuditEvent::AccessTokenRefreshed {
            app: record.app.clone(),
            subject: record.subject.clone(),
            grant: record.grant.clone(),
        }
    };
    Ok(Decision::Commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        Ending::Tokens(Box::new(TokenBody {
            access_token: access,
            expires_in: expires_at.map(|at| at.seconds_from(ctx.now)),
            refresh_token: successor,
            scope: named,
            person: None,
            retried: None,
            exchanged: false,
            bound: client.proof().is_some(),
        })),
    ))
}

/// A refresh where tokens rotate: the policy, the token as presented (what a rotation derives
/// from) and the server key the derivation is under.
struct Rotating<'a> {
    policy: &'a Rotation,
    presented: &'a RefreshToken,
    key: &'a ServerKey,
}

/// What a retried rotation's tokens are derived from, and the grant it rotated.
struct Retried<'p> {
    partition: Partition,
    seed: &'p RotationSeed,
    presented: &'p RefreshToken,
    key: &'p ServerKey,
    grant_key: RecordKey,
    grant: &'p Loaded<'p, GrantRecord>,
}

/// A retry inside the window of the rotation that superseded the presented token: the same
/// answer again — its access token (still live: the window is shorter than its lifetime) and
/// its successor — if the retry asks for what that refresh asked. The grant is written back
/// as it is, at the version read (with its purge time), with the audit event
/// `refresh_token_retried`: every retry is on record, and one racing the successor's first use
/// loses and is judged again (as a reuse, which revokes the grant).
///
/// A retry whose write-back lost to another retry of the same rotation — it finds the grant
/// written back byte for byte since it read it, the rotation still open — answers from that
/// state, writing nothing more, its event on the reply ([`Reply::audit`](crate::Reply::audit)):
/// every retry is still on record, and the order against the successor's first use is the
/// winner's (it read the grant after the winner wrote it, the window still open). Without that,
/// retries sent at once (a client's, and the same request from its other tabs or hosts) would
/// each write in turn, the last losing one race per retry before it, and from
/// [`Policy::max_attempts`](crate::Policy) at once the last would get `503` (issue 47, item 14).
/// So a refresh loses at most twice: the rotation, then its retry's write-back.
fn retry(
    ctx: &Ctx<'_>,
    client: &Client,
    retried: &Retried<'_>,
    scopes: &ScopeSet,
    named: Option<&ScopeSet>,
    audience: &Resources,
) -> Flow<Decision> {
    let access = retried.partition.access_token(
        retried.key,
        &retried.seed.access_secret(retried.key, retried.presented),
    );
    let key = RecordKey::AccessToken(retried.partition, access.digest());
    // Stored with the rotation, and live for longer than the window: if it is not found, the
    // store does not show it yet.
    let Some(found) = ctx.load::<AccessTokenRecord>(&key)? else {
        return Ok(Decision::End(client.refuse(Refusal::RetryNotYetVisible)));
    };
    let first = found.record;
    if &first.scopes != scopes
        || &first.audience != audience
        || first.bound_to.as_ref() != client.proven_key()
    {
        return Ok(Decision::End(client.refuse(Refusal::RetryDiffers)));
    }
    let grant = retried.grant.record;
    let mut answer = Box::new(TokenBody {
        expires_in: first.expires_at.map(|at| at.seconds_from(ctx.now)),
        access_token: access,
        refresh_token: Some(retried.partition.refresh_token(
            retried.key,
            &retried.seed.refresh_secret(retried.key, retried.presented),
        )),
        scope: named.cloned(),
        person: None,
        retried: None,
        exchanged: false,
        bound: first.bound_to.is_some(),
    });
    if ctx.rewritten_as_read(&retried.grant_key) {
        // Answered from another retry's write: none of its own, so the reply carries its event.
        answer.retried = Some((
            grant.app.clone(),
            grant.subject.clone(),
            first.grant.clone(),
        ));
        return Ok(Decision::End(Ending::Tokens(answer)));
    }
    let audit = AuditEvent::RefreshTokenRetried {
        app: grant.app.clone(),
        subject: grant.subject.clone(),
        grant: first.grant.clone(),
    };
    let kept = replace(
        retried.grant_key.clone(),
        Some(retried.grant.version),
        &Record::Grant(grant.clone()),
        grant::purge_after(grant, ctx.config.policy()),
    );
    Ok(Decision::commit_one(kept, audit, Ending::Tokens(answer)))
}

/// A superseded refresh token presented outside its retry window: refuse, and revoke its grant
/// (RFC 9700 §4.14.2: one of its two holders is not the user's app).
fn refresh_token_reused(
    ctx: &Ctx<'_>,
    client: &Client,
    grant_key: RecordKey,
    grant: &Loaded<'_, GrantRecord>,
) -> Flow<Decision> {
    let RecordKey::Grant(_, grant_id) = &grant_key else {
        return Ok(Decision::End(client.refuse(Refusal::RefreshTokenReused)));
    };
    let audit = AuditEvent::RefreshTokenReused {
        app: grant.record.app.clone(),
        subject: grant.record.subject.clone(),
        grant: grant_id.clone(),
    };
    let puts = revoke_grant(ctx, grant_key.clone(), grant)?.puts;
    Ok(Decision::Commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        client.refuse(Refusal::RefreshTokenReused),
    ))
}
