//! `grant_type=client_credentials` (RFC 6749 §4.4): a client that authenticates gets an access
//! token for itself — a machine acting on its own behalf. No person, no consent, no refresh
//! token (§4.4.3); the grant lives in the client's own partition, its subject the client
//! ([`Subject::Client`]), and ends by revocation (RFC 7009), with its token's expiry, or with the
//! client (removed from the configuration).

use crate::config::Config;
use crate::ctx::{create, Ctx, Decision, Flow};
use crate::ending::{Ending, TokenBody};
use crate::endpoints::client_auth::Client;
use crate::endpoints::issue::minting_ledger;
use crate::endpoints::token::one;
use crate::ids::Subject;
use crate::machines::access_token::{self, TokenTerms};
use crate::machines::grant::{self, GrantTerms};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{Record, RecordKey, Resources};
use crate::refusal::Refusal;
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::step::{AuditEvent, Transaction};
use crate::wire::form::Params;

/// A client credentials request as parsed: the client authenticated with its secret, allowed
/// the grant, and what it asked for within what it may have.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub client: Client,
    /// The client's own partition: where its grants to itself live.
    pub partition: Partition,
    scopes: ScopeSet,
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
    let app = match config.app(client.app.as_str()) {
        Some(app) if config.allows_client_credentials(&client.app) => app,
        _ => return Err(client.refuse(Refusal::GrantNotAllowed)),
    };
    // §3.3: the scopes asked for, within the client's own; none asked, all of them. A token
    // for no person carries no offline access.
    let own = app.scopes().without(OFFLINE_ACCESS);
    let scopes = match one(params, &client, "scope")? {
        None => own,
        Some(text) => match ScopeSet::parse(text) {
            Ok(asked) if !config.takes_scope_names(&asked) => {
                return Err(client.refuse(Refusal::MalformedScope))
            }
            Ok(asked) if asked.is_subset(&own) => asked,
            Ok(_) => return Err(client.refuse(Refusal::ScopeNotEnabled)),
            Err(_) => return Err(client.refuse(Refusal::MalformedScope)),
        },
    };
    Ok(Parsed {
        partition: Partition::of_app(config.server_key(), &client.app),
        client,
        scopes,
        resources,
    })
}

pub(super) fn decide(ctx: &Ctx<'_>, parsed: &Parsed) -> Flow<Decision> {
    let policy = ctx.config.policy();
    let lifetime = match ctx.config.client_credentials() {
        Some(grant) => grant.access_token_lifetime,
        None => {
            return Ok(Decision::End(
                parsed.client.refuse(Refusal::GrantNotAllowed),
            ))
        }
    };
    let partition = parsed.partition;
    let expires_at = ctx.now.plus(lifetime);
    let (generation, ledger_put) = minting_ledger(ctx, partition, Some(expires_at), false)?;
    let grant_id = ctx.entropy.grant_id();
    let grant = grant::new(GrantTerms {
        app: &parsed.client.app,
        subject: Subject::Client,
        uid: None,
        scopes: parsed.scopes.clone(),
        link_epoch: 0,
        pkce: false,
        resources: parsed.resources.clone(),
    });
    let access = partition.access_token(ctx.config.server_key(), &ctx.entropy.primary());
    let record = access_token::mint(
        &grant_id,
        &grant,
        TokenTerms {
            scopes: parsed.scopes.clone(),
            expires_at: Some(expires_at),
            audience: parsed.resources.clone(),
            generation,
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
        app: parsed.client.app.clone(),
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
            scope: Some(parsed.scopes.clone()),
            person: None,
            retried: None,
        })),
    ))
}
