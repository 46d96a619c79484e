//! `grant_type=client_credentials` (RFC 6749 §4.4): a client that authenticates gets an access
//! token for itself — a machine acting on its own behalf. No person, no consent, no refresh
//! token (§4.4.3); the grant lives in the client's own partition, its subject the client
//! ([`Subject::Client`]), and ends by revocation (RFC 7009), with its token's expiry, or with the
//! client (removed from the configuration).

use crate::config::{ClientCredentials, Config};
use crate::ctx::{create, Ctx, Decision, Flow};
use crate::ending::{Ending, TokenBody};
use crate::endpoints::client_auth::Client;
use crate::endpoints::issue::minting_ledger;
use crate::endpoints::token::one;
use crate::grant_type::GrantType;
use crate::ids::{AppKey, Subject};
use crate::machines::access_token::{self, TokenTerms};
use crate::machines::grant::{self, GrantTerms};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{Record, RecordKey, Resources};
use crate::refusal::Refusal;
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::step::{AuditEvent, Transaction};
use crate::wire::form::Params;

/// A client credentials request as parsed: the client authenticated (with a secret or a key)
/// and what it asked for. Whether it may have the grant, and the scopes, are checked once its
/// app is read (a stored app's record comes with the request's first batch).
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub client: Client,
    /// The client's own partition: where its grants to itself live.
    pub partition: Partition,
    /// The scopes asked for; `None`: all of the client's.
    asked: Option<ScopeSet>,
    /// `resource` (RFC 8707), among the configured ones; empty: the API served here.
    resources: Resources,
}

pub(super) fn parse(
    config: &Config,
    client: Client,
    params: &Params<'_>,
    resources: Resources,
) -> Result<Parsed, Ending> {
    // §4.4.2: the client must authenticate; one that proved only its id cannot.
    if !client.has_secret {
        return Err(client.refuse(Refusal::ConfidentialClientRequired));
    }
    let asked = match one(params, &client, "scope")? {
        None => None,
        Some(text) => match ScopeSet::parse(text) {
            Ok(asked) if config.takes_scope_names(&asked) => Some(asked),
            _ => return Err(client.refuse(Refusal::MalformedScope)),
        },
    };
    Ok(Parsed {
        partition: Partition::of_app(config.server_key(), &client.app),
        client,
        asked,
        resources,
    })
}

/// Whether `app` may get tokens for itself: a configured app the grant names, or a stored one
/// that registered the grant where the grant takes unannounced clients.
fn allowed(ctx: &Ctx<'_>, grant: &ClientCredentials, app: &AppKey) -> Flow<bool> {
    Ok(match ctx.stored_app(app)? {
        Some(record) => {
            grant.unannounced && record.grant_types().contains(GrantType::ClientCredentials)
        }
        None => grant.apps.contains(app),
    })
}

pub(super) fn decide(ctx: &Ctx<'_>, parsed: &Parsed) -> Flow<Decision> {
    let policy = ctx.config.policy();
    let client = &parsed.client;
    let (Some(grant), Some(app)) = (ctx.config.client_credentials(), ctx.app(&client.app)?) else {
        return Ok(Decision::End(client.refuse(Refusal::GrantNotAllowed)));
    };
    if !allowed(ctx, grant, &client.app)? {
        return Ok(Decision::End(client.refuse(Refusal::GrantNotAllowed)));
    }
    // §3.3: the scopes asked for, within the client's own; none asked, all of them. A token
    // for no person carries no offline access.
    let own = app.scopes().without(OFFLINE_ACCESS);
    let scopes = match &parsed.asked {
        None => own,
        Some(asked) if asked.is_subset(&own) => asked.clone(),
        Some(_) => return Ok(Decision::End(client.refuse(Refusal::ScopeNotEnabled))),
    };
    let lifetime = grant.access_token_lifetime;
    let partition = parsed.partition;
    let expires_at = ctx.now.plus(lifetime);
    let (generation, ledger_put) = minting_ledger(ctx, partition, Some(expires_at), false)?;
    let grant_id = ctx.entropy.grant_id();
    let grant = grant::new(GrantTerms {
        app: &client.app,
        subject: Subject::Client,
        uid: None,
        scopes: scopes.clone(),
        link_epoch: 0,
        pkce: false,
        resources: parsed.resources.clone(),
        refresh_bound_to: None,
        props: None,
    });
    let access = partition.access_token(ctx.config.server_key(), &ctx.entropy.primary());
    let record = access_token::mint(
        &grant_id,
        &grant,
        TokenTerms {
            scopes: scopes.clone(),
            expires_at: Some(expires_at),
            audience: parsed.resources.clone(),
            generation,
            bound_to: client.proven_key().cloned(),
        },
    );
    // The grant is worth nothing once its only token is gone: both go together.
    let purge = access_token::purge_after(Some(expires_at), policy);
    let mut puts = vec![
        create(
            RecordKey::Grant(partition, grant_id.clone()),
            &Record::Grant(grant),
            purge,
        ),
        create(
            RecordKey::AccessToken(partition, access.digest()),
            &Record::AccessToken(record),
            purge,
        ),
    ];
    puts.extend(ledger_put);
    let audit = AuditEvent::TokensIssued {
        app: client.app.clone(),
        subject: Subject::Client,
        grant: grant_id,
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
            expires_in: Some(lifetime),
            refresh_token: None,
            scope: Some(scopes.clone()),
            person: None,
            retried: None,
            exchanged: false,
            bound: client.proof().is_some(),
        })),
    ))
}
