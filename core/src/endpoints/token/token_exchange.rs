//! `grant_type=urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693): a client that holds
//! an access token of this server — the app it was issued to, or a resource server it was
//! issued for — exchanges it for a narrower one to pass on: fewer scopes, a resource among
//! those its grant allows, never more of either, and never living past it. With its own client
//! credentials token as `actor_token`, the client is named the actor (introspection's `act`).
//! The new token belongs to the same grant, in the same partition: revoking the grant, or
//! anything else that ends it, ends the exchanged token too.

use crate::config::Config;
use crate::credentials::AccessToken;
use crate::ctx::{create, Ctx, Decision, Flow};
use crate::ending::{Ending, TokenBody};
use crate::endpoints::api::{authenticate, Check};
use crate::endpoints::client_auth::Client;
use crate::endpoints::issue::minting_ledger;
use crate::endpoints::token::{asked_scope, narrowed, one, AskedScope};
use crate::machines::{access_token, grant};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{AccessTokenRecord, GrantRecord, Record, RecordKey, Resources};
use crate::refusal::Refusal;
use crate::step::{AuditEvent, Transaction};
use crate::time::{Seconds, UnixTime};
use crate::wire::form::Params;

/// The only token type this server exchanges, and issues (RFC 8693 §3).
pub(crate) const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// A token exchange as parsed.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub client: Client,
    /// Where the subject token's record is; `None` if it is not of the shape the core mints.
    pub subject: Option<RecordKey>,
    /// Whether the client named itself the actor, with a token of its own partition.
    acting: bool,
    /// `scope`: `Err` when malformed.
    scope: AskedScope,
    /// `resource` (RFC 8707), among the configured ones.
    resources: Resources,
}

pub(super) fn parse(
    config: &Config,
    client: Client,
    params: &Params<'_>,
    resources: Resources,
) -> Result<Parsed, Ending> {
    let (Some(subject), Some(subject_type)) = (
        one(params, &client, "subject_token")?,
        one(params, &client, "subject_token_type")?,
    ) else {
        return Err(client.refuse(Refusal::SubjectTokenMissing));
    };
    // §2.1: the types of the tokens sent and asked for; only access tokens here.
    let requested_type = one(params, &client, "requested_token_type")?;
    let actor = one(params, &client, "actor_token")?;
    let actor_type = one(params, &client, "actor_token_type")?;
    let types = [Some(subject_type), requested_type, actor_type];
    if types.into_iter().flatten().any(|t| t != ACCESS_TOKEN_TYPE) {
        return Err(client.refuse(Refusal::UnsupportedTokenType));
    }
    // §2.1: an actor token comes with its type, and a type only with a token.
    if actor.is_some() != actor_type.is_some() {
        return Err(client.refuse(Refusal::SubjectTokenMissing));
    }
    // `audience` names logical targets this server does not have: only `resource` does.
    if one(params, &client, "audience")?.is_some() {
        return Err(client.refuse(Refusal::InvalidTarget));
    }
    let scope = asked_scope(config, params, &client)?;
    let key = config.server_key();
    // The actor: the client itself, by a token this server sealed for the client's own
    // partition — where only its grants to itself live. Its record is not read: a request
    // reads one partition, and that is the subject token's. (So a revoked or expired token of
    // the client's still names it; the actor adds no access, only its name to `act`.)
    let acting = match actor {
        None => false,
        Some(token) => {
            let sealed = token.strip_prefix(AccessToken::PREFIX).unwrap_or(token);
            if Partition::of_credential(key, sealed) != Some(Partition::of_app(key, &client.app)) {
                return Err(client.refuse(Refusal::ActorTokenInvalid));
            }
            true
        }
    };
    Ok(Parsed {
        subject: RecordKey::of_access_token(key, subject),
        acting,
        client,
        scope,
        resources,
    })
}

pub(super) fn decide(ctx: &Ctx<'_>, parsed: &Parsed) -> Flow<Decision> {
    let client = &parsed.client;
    let end = |refusal| Ok(Decision::End(client.refuse(refusal)));
    let Some(exchange) = ctx.config.token_exchange() else {
        return end(Refusal::UnsupportedGrantType);
    };
    // §2.1: the client exchanging a token must be able to authenticate.
    if !client.has_secret {
        return end(Refusal::ConfidentialClientRequired);
    }
    let Ok(subject) = authenticate(ctx, parsed.subject.as_ref(), Check::Exchange)? else {
        return end(Refusal::SubjectTokenInvalid);
    };
    let key = subject.key;
    let (Some(token), Some((grant_key, _))) = (ctx.load::<AccessTokenRecord>(key)?, &subject.grant)
    else {
        return end(Refusal::SubjectTokenInvalid);
    };
    let token = token.record;
    let Some(grant) = ctx.load::<GrantRecord>(grant_key)? else {
        return end(Refusal::SubjectTokenInvalid);
    };
    let grant = grant.record;
    // The client holds the token: it was issued to it (or exchanged by it), or for a resource
    // it serves (RFC 7662 §4's rule for what a resource server may learn of).
    let here = ctx.config.issuer().map(|issuer| issuer.resource());
    let holds = token.app == client.app
        || token.exchanged_by.as_ref() == Some(&client.app)
        || token
            .audience
            .or_here(here)
            .iter()
            .any(|resource| ctx.config.serves(&client.app, resource));
    if !holds {
        return end(Refusal::SubjectTokenInvalid);
    }
    let acting = parsed.acting;
    // §2.1: the scopes asked for, among the subject token's; none asked, all of them.
    let scopes = match narrowed(&parsed.scope, &token.scopes) {
        Ok(scopes) => scopes,
        Err(refusal) => return end(refusal),
    };
    // A resource among those the grant allows; none asked, the subject token's own.
    let audience = if parsed.resources.is_empty() {
        token.audience.clone()
    } else {
        match grant::audience(&grant.resources, &parsed.resources, ctx.config) {
            Ok(audience) => audience,
            Err(refusal) => return end(refusal),
        }
    };
    // Never past the token it came from.
    let lifetime_end = ctx.now.plus(exchange.access_token_lifetime);
    let expires_at = match token.expires_at {
        Some(at) if at < lifetime_end => at,
        _ => lifetime_end,
    };
    let partition = key.partition();
    let (generation, ledger_put) = minting_ledger(ctx, partition, Some(expires_at), false)?;
    let access = partition.access_token(ctx.config.server_key(), &ctx.entropy.primary());
    let record = AccessTokenRecord {
        grant: token.grant.clone(),
        app: token.app.clone(),
        subject: token.subject.clone(),
        scopes: scopes.clone(),
        expires_at: Some(expires_at),
        audience,
        generation,
        uid: token.uid.clone(),
        exchanged_by: Some(client.app.clone()),
        acting,
        bound_to: client.proven_key().cloned(),
        props: token.props.clone(),
    };
    let mut puts = vec![create(
        RecordKey::AccessToken(partition, access.digest()),
        &Record::AccessToken(record),
        access_token::purge_after(Some(expires_at), ctx.config.policy()),
    )];
    puts.extend(ledger_put);
    let audit = AuditEvent::TokensIssued {
        app: token.app.clone(),
        subject: token.subject.clone(),
        grant: token.grant.clone(),
        refresh_token: false,
        access_expires_at: Some(expires_at),
    };
    Ok(Decision::Commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        Ending::Tokens(Box::new(TokenBody {
            access_token: access,
            expires_in: Some(seconds_until(ctx.now, expires_at)),
            refresh_token: None,
            scope: Some(scopes),
            person: None,
            retried: None,
            exchanged: true,
            bound: client.proof().is_some(),
        })),
    ))
}

fn seconds_until(now: UnixTime, at: UnixTime) -> Seconds {
    Seconds(at.0.saturating_sub(now.0))
}
