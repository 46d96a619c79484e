//! `POST /oauth2/token`: the authorization-code and refresh-token grants (RFC 6749 §4.1.3, §6,
//! RFC 7636 §4.5), client authentication (§2.3.1) and errors (§5.2).
//!
//! Parsing reads the parameters, authenticates the client (the secret compared in constant
//! time) and hashes the presented code or refresh token, once; deciding loads the records.

use crate::config::{Config, Rotation};
use crate::credentials::{RefreshToken, RotationSeed, ServerKey};
use crate::ctx::{create, replace, Ctx, Decision, Flow, Loaded};
use crate::ending::{Ending, TokenBody};
use crate::endpoints::authorize;
use crate::endpoints::client_auth::{
    authenticate, consume_assertion, decide_failed, form_parameters, refuse, verify, Client,
    FailedClient,
};
use crate::endpoints::issue::{
    issue_grant, minting_ledger, outlives_tokens, revoke_grant, FirstToken, Revoked,
};
use crate::ids::{AppKey, User};
use crate::machines::access_token::TokenTerms;
use crate::machines::code::{self, Exchange};
use crate::machines::grant::{self, GrantTerms, Standing};
use crate::machines::refresh_token::{Position, Rotated};
use crate::machines::{access_token, link, refresh_token};
use crate::partition::Partition;
use crate::pkce::CodeVerifier;
use crate::prelude::*;
use crate::records::Resources;
use crate::records::{
    AccessTokenRecord, CodeRecord, CodeState, GrantRecord, LinkRecord, MemberRecord, Record,
    RecordKey, RefreshTokenRecord, TokenAccessType,
};
use crate::refusal::Refusal;
use crate::scope::ScopeSet;
use crate::step::{AuditEvent, Transaction};
use crate::wire::form::Repeated;
use crate::wire::http::HttpRequest;

/// A token request, parsed and its client authenticated.
#[derive(Clone, Debug)]
pub(crate) enum Parsed {
    /// `code`, `token`: where the credential's record is, `None` if the credential is not of
    /// the shape the core mints (refused unread).
    Exchange {
        client: Client,
        code: Option<RecordKey>,
        redirect_uri: Option<String>,
        verifier: Option<CodeVerifier>,
        /// `resource` (RFC 8707; standards profile): the audience asked for, sorted.
        resources: Resources,
    },
    Refresh {
        client: Client,
        token: Option<RecordKey>,
        /// The token as presented, kept only where tokens rotate (a rotation derives its
        /// successors from it); the reference profile has no use for a copy.
        presented: Option<RefreshToken>,
        /// `scope`: `Err` when malformed, refused only once the token checks out.
        scope: Option<Result<ScopeSet, ()>>,
        /// `resource`, as for the exchange: a narrowing of the grant's.
        resources: Resources,
    },
    /// The client authentication failed.
    Failed(FailedClient),
}

impl Parsed {
    /// Where the presented code or refresh token would be stored, if it is of the core's shape
    /// and the client authenticated.
    pub fn credential(&self) -> Option<&RecordKey> {
        match self {
            Parsed::Exchange { code, .. } => code.as_ref(),
            Parsed::Refresh { token, .. } => token.as_ref(),
            Parsed::Failed(_) => None,
        }
    }

    /// The authenticated app.
    pub fn client(&self) -> Option<&AppKey> {
        match self {
            Parsed::Exchange { client, .. } | Parsed::Refresh { client, .. } => Some(&client.app),
            Parsed::Failed(_) => None,
        }
    }
}

pub(crate) fn parse(config: &Config, request: &HttpRequest) -> Result<Parsed, Ending> {
    let params = form_parameters(config, request)?;
    let grant_type = match params.one("grant_type") {
        Err(Repeated(name)) => return refuse(Refusal::Repeated(name)),
        Ok(None) => return refuse(Refusal::GrantTypeMissing),
        Ok(Some(g @ ("authorization_code" | "refresh_token"))) => g,
        Ok(Some(_)) => return refuse(Refusal::UnsupportedGrantType),
    };
    let client = match authenticate(config, request, &params)? {
        Ok(client) => client,
        Err(failed) => return Ok(Parsed::Failed(failed)),
    };
    let read = |name| {
        params
            .one(name)
            .map_err(|Repeated(name)| client.refuse(Refusal::Repeated(name)))
    };
    let resources =
        authorize::resources(config, &params).map_err(|refusal| client.refuse(refusal))?;
    if grant_type == "authorization_code" {
        let Some(code) = read("code")? else {
            return Err(client.refuse(Refusal::CodeMissing));
        };
        let redirect_uri = read("redirect_uri")?.map(str::to_owned);
        let verifier = match read("code_verifier")? {
            None if !client.has_secret => return Err(client.refuse(Refusal::ProofMissing)),
            None => None,
            Some(text) => match CodeVerifier::new(text) {
                Some(v) => Some(v),
                None => return Err(client.refuse(Refusal::MalformedVerifier)),
            },
        };
        let code = RecordKey::of_code(config.server_key(), code);
        Ok(Parsed::Exchange {
            client,
            code,
            redirect_uri,
            verifier,
            resources,
        })
    } else {
        let Some(token) = read("refresh_token")? else {
            return Err(client.refuse(Refusal::RefreshTokenMissing));
        };
        let scope = read("scope")?.map(|text| match ScopeSet::parse(text) {
            Ok(set) if config.takes_scope_names(&set) => Ok(set),
            _ => Err(()),
        });
        Ok(Parsed::Refresh {
            client,
            token: RecordKey::of_refresh_token(config.server_key(), token),
            presented: config.rotation().map(|_| RefreshToken::presented(token)),
            scope,
            resources,
        })
    }
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let client = match parsed {
        Parsed::Failed(failed) => return decide_failed(failed, ctx),
        Parsed::Exchange { client, .. } | Parsed::Refresh { client, .. } => client,
    };
    // A stored app's authentication is checked with its record, read beside the credential's
    // and its account's ledger. The ledger is read in this first batch, before the grant and
    // link a mint reads next: what lets a mint leave it unwritten (see `machines::ledger`).
    let ledger = parsed
        .credential()
        .map(|key| RecordKey::Ledger(key.partition()));
    let beside: Vec<&RecordKey> = parsed.credential().into_iter().chain(&ledger).collect();
    if let Err(failed) = verify(ctx, client, &beside)? {
        return decide_failed(&failed, ctx);
    }
    ctx.need(&beside)?;
    // A document's client gets tokens by its current document: fetched again once its cache
    // lifetime is over (a document that vanished or changed is seen here).
    // (Verified, it stands: the fresh copy is the same app or a refusal.)
    ctx.current_app(&client.app)?;
    // A stored app is renewed by its use (see `UnannouncedClients::unused_lifetime`).
    // A client assertion is used once, whatever came of the request.
    let decision = ctx.with_renewal(&client.app, decide_grant(parsed, ctx)?);
    Ok(consume_assertion(client, decision))
}

fn decide_grant(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    match parsed {
        Parsed::Failed(failed) => decide_failed(failed, ctx),
        Parsed::Exchange {
            client,
            code,
            redirect_uri,
            verifier,
            resources,
        } => {
            let Some(code) = code else {
                return Ok(Decision::End(client.refuse(Refusal::UnknownCode)));
            };
            exchange_code(
                ctx,
                client,
                code,
                redirect_uri.as_deref(),
                verifier.as_ref(),
                resources,
            )
        }
        Parsed::Refresh {
            client,
            token,
            presented,
            scope,
            resources,
        } => {
            let Some(token) = token else {
                return Ok(Decision::End(client.refuse(Refusal::UnknownRefreshToken)));
            };
            let request = RefreshRequest {
                token,
                presented: presented.as_ref(),
                scope: scope.as_ref(),
                resources,
            };
            refresh(ctx, client, &request)
        }
    }
}

/// `grant_type=authorization_code`.
fn exchange_code(
    ctx: &Ctx<'_>,
    client: &Client,
    code_key: &RecordKey,
    redirect_uri: Option<&str>,
    verifier: Option<&CodeVerifier>,
    resources: &Resources,
) -> Flow<Decision> {
    let end = |refusal| Ok(Decision::End(client.refuse(refusal)));
    let partition = code_key.partition();
    let Some(loaded) = ctx.load::<CodeRecord>(code_key)? else {
        return end(Refusal::UnknownCode);
    };
    let record = loaded.record;
    let exchange = Exchange {
        app: &client.app,
        redirect_uri,
        verifier,
    };
    if let Err(mismatch) = code::bind(record, &exchange) {
        return end(mismatch);
    }
    let grant_id = ctx.entropy.grant_id();
    let redeemed = match code::redeem(record, ctx.now, grant_id.clone()) {
        Ok(redeemed) => redeemed,
        Err(Refusal::CodeReused) => match &record.state {
            CodeState::Redeemed { grant } => {
                return code_reused(ctx, client, RecordKey::Grant(partition, grant.clone()))
            }
            CodeState::Issued => return end(Refusal::CodeReused),
        },
        Err(refusal) => return end(refusal),
    };
    let link_key = RecordKey::Link(partition, record.app.clone(), record.account_id.clone());
    let link = ctx.load::<LinkRecord>(&link_key)?;
    let link_record = link.as_ref().map(|l| l.record);
    if !link::stands(link_record.map(|l| l.epoch), record.link_epoch) {
        return end(Refusal::CodeUnlinked);
    }
    let here = ctx.config.issuer().map(|issuer| issuer.resource());
    let audience = match grant::audience(&record.resources, resources, here) {
        Ok(audience) => audience,
        Err(refusal) => return end(refusal),
    };

    let user = User {
        account_id: record.account_id.clone(),
        uid: record.uid.clone(),
        name: None,
    };
    // A grant that never ends by itself takes the link's next member place; under a bound on
    // live grants that may evict the oldest, which ends it and so moves the ledger on: the
    // new token is minted at the generation that end leaves.
    let next_member = link_record.map_or(0, |l| l.members);
    let expires_at = access_token::expires_at(record.access_type, ctx.now, ctx.config.policy());
    let evicting = match link_record {
        Some(_) if outlives_tokens(record.access_type, expires_at) => {
            evicted(ctx, partition, &user, &record.app, next_member)?
        }
        _ => None,
    };
    let (generation, ledger_put) = match &evicting {
        Some((eviction, _)) => (expires_at.and(Some(eviction.generation)), None),
        None => minting_ledger(ctx, partition, expires_at, false)?,
    };
    let issued = issue_grant(
        ctx,
        partition,
        grant_id,
        GrantTerms {
            app: &record.app,
            user: &user,
            scopes: record.scopes.clone(),
            link_epoch: record.link_epoch,
            pkce: record.challenge.is_some(),
            resources: record.resources.clone(),
        },
        FirstToken {
            access_type: record.access_type,
            audience,
            generation,
        },
        next_member,
    );
    let audit = AuditEvent::TokensIssued {
        app: record.app.clone(),
        account_id: record.account_id.clone(),
        grant: issued.grant_id.clone(),
        refresh_token: issued.refresh_token.is_some(),
        access_expires_at: issued.expires_in.map(|s| ctx.now.plus(s)),
    };
    // Single use: the redemption applies only if the code is still at the version read. The
    // redeemed code is kept for an access token's lifetime past its own expiry: a replay until
    // then still revokes what the code produced (a slow client finding its code used by a
    // thief), and after that it finds nothing, which refuses it as well.
    let keep_until = record.expires_at.plus(ctx.config.policy().access_token_ttl);
    let mut puts = vec![replace(
        code_key.clone(),
        Some(loaded.version),
        &Record::Code(redeemed),
        Some(keep_until),
    )];
    puts.extend(issued.puts);
    puts.extend(ledger_put);
    let mut audit = vec![audit];
    if let (Some(_), Some(counted)) = (issued.member, link_record) {
        // Its member place counted on the link, at the version read (which also holds the
        // epoch checked above): of two exchanges racing for a place, one writes again.
        puts.push(replace(
            link_key,
            link.as_ref().map(|l| l.version),
            &Record::Link(link::with_member(counted).0),
            None,
        ));
    }
    if let Some((eviction, event)) = evicting {
        puts.extend(eviction.puts);
        audit.push(event);
    }
    Ok(Decision::Commit(
        Transaction { puts, audit },
        Ending::Tokens(Box::new(TokenBody {
            access_token: issued.access_token,
            expires_in: issued.expires_in,
            refresh_token: issued.refresh_token,
            scope: Some(issued.grant.scopes),
            person: Some((user.account_id, user.uid)),
            retried: None,
        })),
    ))
}

/// Under a bound on live grants per user and app ([`Policy::live_grants_per_link`](crate::Policy::live_grants_per_link)), a new
/// member at `place` revokes the one `bound` places before it, if that one still stands: so
/// every live member is among the newest `bound`. The revocation and its audit event, if any.
fn evicted(
    ctx: &Ctx<'_>,
    partition: Partition,
    user: &User,
    app: &AppKey,
    place: u64,
) -> Flow<Option<(Revoked, AuditEvent)>> {
    let Some(oldest) = ctx
        .config
        .policy()
        .live_grants_per_link
        .and_then(|bound| place.checked_sub(u64::from(bound)))
    else {
        return Ok(None);
    };
    let member_key = RecordKey::Member(partition, app.clone(), user.account_id.clone(), oldest);
    let Some(member) = ctx.load::<MemberRecord>(&member_key)? else {
        return Ok(None);
    };
    let grant_key = RecordKey::Grant(partition, member.record.grant.clone());
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return Ok(None);
    };
    if grant.record.revoked_at.is_some() {
        return Ok(None);
    }
    let event = AuditEvent::GrantEvicted {
        app: app.clone(),
        account_id: user.account_id.clone(),
        grant: member.record.grant.clone(),
    };
    Ok(Some((revoke_grant(ctx, grant_key, &grant)?, event)))
}

/// A verified client presented a used code: refuse, and revoke what the code produced
/// (RFC 6749 §4.1.2, RFC 9700 §4.2.4).
fn code_reused(ctx: &Ctx<'_>, client: &Client, key: RecordKey) -> Flow<Decision> {
    let refusal = client.refuse(Refusal::CodeReused);
    let RecordKey::Grant(_, grant_id) = &key else {
        return Ok(Decision::End(refusal));
    };
    match ctx.load::<GrantRecord>(&key)? {
        Some(loaded) if loaded.record.revoked_at.is_none() => {
            let audit = AuditEvent::CodeReused {
                app: loaded.record.app.clone(),
                account_id: loaded.record.account_id.clone(),
                grant: grant_id.clone(),
            };
            let puts = revoke_grant(ctx, key.clone(), &loaded)?.puts;
            Ok(Decision::Commit(
                Transaction {
                    puts,
                    audit: vec![audit],
                },
                refusal,
            ))
        }
        _ => Ok(Decision::End(refusal)),
    }
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
    let link_key = RecordKey::Link(partition, record.app.clone(), record.account_id.clone());
    ctx.need(&[&grant_key, &link_key])?;
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return end(Refusal::UnknownRefreshToken);
    };
    if let Err(refusal) = refresh_token::check_client(grant.record, client.has_secret) {
        return end(refusal);
    }
    let link = ctx.load::<LinkRecord>(&link_key)?;
    match grant::standing(
        grant.record.revoked_at.is_some(),
        grant.record.link_epoch,
        link.map(|l| l.record.epoch),
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
    let here = ctx.config.issuer().map(|issuer| issuer.resource());
    let audience = match grant::audience(&grant.record.resources, request.resources, here) {
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
    if let Some(place) = refreshed.member_moves {
        let member = RecordKey::Member(
            partition,
            record.app.clone(),
            record.account_id.clone(),
            place,
        );
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
            account_id: record.account_id.clone(),
            grant: record.grant.clone(),
        }
    } else {
        AuditEvent::AccessTokenRefreshed {
            app: record.app.clone(),
            account_id: record.account_id.clone(),
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
    if &first.scopes != scopes || &first.audience != audience {
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
    });
    if ctx.rewritten_as_read(&retried.grant_key) {
        // Answered from another retry's write: none of its own, so the reply carries its event.
        answer.retried = Some((
            grant.app.clone(),
            grant.account_id.clone(),
            first.grant.clone(),
        ));
        return Ok(Decision::End(Ending::Tokens(answer)));
    }
    let audit = AuditEvent::RefreshTokenRetried {
        app: grant.app.clone(),
        account_id: grant.account_id.clone(),
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
        account_id: grant.record.account_id.clone(),
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
