//! Token administration, in the standards profile: revocation (RFC 7009) at `/oauth2/revoke`
//! and introspection (RFC 7662) at `/oauth2/introspect`. Both authenticate the client as the
//! token endpoint does (with the same counts of failures) and take the token in a `token`
//! parameter; its shape says whether it is an access or a refresh token, so
//! `token_type_hint` is ignored (RFC 7009 §2.1 allows it).

use crate::config::{App, Config};
use crate::ctx::{replace, Ctx, Decision, Flow, Loaded};
use crate::ending::{Ending, Introspected, Revocation};
use crate::endpoints::client_auth::{
    authenticate, consume_assertion, decide_failed, form_parameters, verify, Client, FailedClient,
};
use crate::endpoints::issue::{link_epoch, revoke_grant};
use crate::ids::{AppKey, GrantId, Subject};
use crate::machines::grant::{self, Standing};
use crate::machines::{access_token, refresh_token};
use crate::prelude::*;
use crate::records::{AccessTokenRecord, GrantRecord, Record, RecordKey, RefreshTokenRecord};
use crate::refusal::Refusal;
use crate::step::{AuditEvent, Transaction};
use crate::wire::form::Repeated;
use crate::wire::http::HttpRequest;

/// What a client asks of a token it holds (standards profile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// RFC 7009: end its grant.
    Revoke,
    /// RFC 7662: is it live, and what does it carry.
    Introspect,
}

/// A request to revocation or introspection, parsed and its client authenticated.
#[derive(Clone, Debug)]
pub(crate) enum Parsed {
    /// The operation on `token`: the access or refresh token's record, `None` if it is of no
    /// shape the core mints (or not this server's).
    Manage {
        client: Client,
        token: Option<RecordKey>,
        operation: Operation,
    },
    /// The client authentication failed.
    Failed(FailedClient),
}

impl Parsed {
    /// Where the token would be stored, if the client authenticated.
    pub fn credential(&self) -> Option<&RecordKey> {
        match self {
            Parsed::Manage { token, .. } => token.as_ref(),
            Parsed::Failed(_) => None,
        }
    }

    /// The authenticated app.
    pub fn client(&self) -> Option<&AppKey> {
        match self {
            Parsed::Manage { client, .. } => Some(&client.app),
            Parsed::Failed(_) => None,
        }
    }
}

/// Parses a request to revocation or introspection (the route table routes only `POST`s
/// here, and only in the standards profile).
pub(crate) fn parse(
    config: &Config,
    request: &HttpRequest,
    operation: Operation,
) -> Result<Parsed, Ending> {
    let params = form_parameters(config, request)?;
    let client = match authenticate(config, request, &params)? {
        Ok(client) => client,
        Err(failed) => return Ok(Parsed::Failed(failed)),
    };
    // A stored app's is checked once its record is read.
    if let Some(app) = config.app(client.app.as_str()) {
        if !authenticated_enough(app, &client, operation) {
            return Err(client.refuse(Refusal::ConfidentialClientRequired));
        }
    }
    let token = params
        .one("token")
        .map_err(|Repeated(name)| client.refuse(Refusal::Repeated(name)))?;
    let Some(token) = token else {
        return Err(client.refuse(Refusal::TokenMissing));
    };
    let token = if token.starts_with("sl.") {
        RecordKey::of_access_token(config.server_key(), token)
    } else {
        RecordKey::of_refresh_token(config.server_key(), token)
    };
    Ok(Parsed::Manage {
        client,
        token,
        operation,
    })
}

/// A confidential client authenticates (RFC 7009 §2.1); a public one is known by its
/// client_id. Introspection tells about tokens of any app: only a confidential client with its
/// secret may ask (RFC 7662 §2.1, §4).
fn authenticated_enough(app: &App, client: &Client, operation: Operation) -> bool {
    client.has_secret || !(app.is_confidential() || operation == Operation::Introspect)
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let (client, token, operation) = match parsed {
        Parsed::Manage {
            client,
            token,
            operation,
        } => (client, token.as_ref(), *operation),
        Parsed::Failed(failed) => return decide_failed(failed, ctx),
    };
    // A stored app's authentication is checked with its record, read beside the token's.
    let app = match verify(ctx, client, &token.into_iter().collect::<Vec<_>>())? {
        Ok(app) => app,
        Err(failed) => return decide_failed(&failed, ctx),
    };
    if !authenticated_enough(app, client, operation) {
        return Ok(Decision::End(
            client.refuse(Refusal::ConfidentialClientRequired),
        ));
    }
    let held = match token {
        Some(key) => held(ctx, key)?,
        None => None,
    };
    let decision = match operation {
        Operation::Revoke => revoke(ctx, client, held)?,
        Operation::Introspect => Decision::End(Ending::Introspection(
            held.and_then(|held| introspected(ctx, client, held))
                .map(Box::new),
        )),
    };
    // A client assertion is used once, whatever it was used for.
    Ok(consume_assertion(ctx, client, decision))
}

/// A token found, with its grant and where that grant stands.
struct Held<'a> {
    app: &'a AppKey,
    subject: &'a Subject,
    grant_id: &'a GrantId,
    grant_key: RecordKey,
    grant: Loaded<'a, GrantRecord>,
    /// Whether the grant stands (not revoked, not unlinked).
    grant_live: bool,
    /// Whether the token itself is live: its grant and its app stand and, for a refresh token,
    /// it was not superseded by a rotation.
    live: bool,
    /// For an access token, its record and the version read; `None` for a refresh token.
    access: Option<(&'a AccessTokenRecord, u64)>,
    /// Where the token is.
    key: RecordKey,
}

/// The token under `key` and its grant (with the link, in one batch), if both are there.
fn held<'a>(ctx: &Ctx<'a>, key: &RecordKey) -> Flow<Option<Held<'a>>> {
    let partition = key.partition();
    let (app, subject, grant_id, access) = match key {
        RecordKey::AccessToken(..) => match ctx.load::<AccessTokenRecord>(key)? {
            Some(found) => {
                let r = found.record;
                (&r.app, &r.subject, &r.grant, Some((r, found.version)))
            }
            None => return Ok(None),
        },
        RecordKey::RefreshToken(..) => match ctx.load::<RefreshTokenRecord>(key)? {
            Some(found) => {
                let r = found.record;
                (&r.app, &r.subject, &r.grant, None)
            }
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    let grant_key = RecordKey::Grant(partition, grant_id.clone());
    let link_key = grant::link_key(partition, app, subject);
    match &link_key {
        Some(link_key) => ctx.need_with_app(&[&grant_key, link_key], app)?,
        None => ctx.need_with_app(&[&grant_key], app)?,
    }
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return Ok(None);
    };
    // Removing an app (from the configuration, or a stored app expiring) ends its tokens.
    let app_stands = ctx.app(app)?.is_some();
    let grant_live = grant::standing(
        grant.record.revoked_at.is_some(),
        grant.record.link_epoch,
        link_epoch(ctx, link_key.as_ref())?,
    ) == Standing::Live;
    // A refresh token a rotation superseded is no longer live, even inside its retry window.
    let superseded = match (key, &grant.record.refresh_token) {
        (RecordKey::RefreshToken(_, presented), Some(current)) => presented != current,
        _ => false,
    };
    Ok(Some(Held {
        app,
        subject,
        grant_id,
        grant_key,
        grant,
        grant_live,
        live: grant_live && !superseded && app_stands,
        access,
        key: key.clone(),
    }))
}

/// RFC 7009: the token's grant ends, with every token of it — also for a refresh token a
/// rotation superseded, which only its grant's holders can present. An unknown, garbled or
/// already ended token gets the same answer (§2.2); a token of another app is refused (§2.1).
fn revoke(ctx: &Ctx<'_>, client: &Client, held: Option<Held<'_>>) -> Flow<Decision> {
    let Some(held) = held else {
        return Ok(Decision::End(Ending::Revoked(Revocation::Standard)));
    };
    // A token exchanged by another client than the app (RFC 8693) was issued to that client:
    // its revocation ends that token alone — it expires now — never the app's grant.
    if let Some((token, version)) = held.access {
        if held.app != &client.app && token.exchanged_by.as_ref() == Some(&client.app) {
            return Ok(end_exchanged(ctx, &held.key, token, version));
        }
    }
    if held.app != &client.app {
        return Ok(Decision::End(client.refuse(Refusal::TokenOfAnotherApp)));
    }
    if !held.grant_live {
        return Ok(Decision::End(Ending::Revoked(Revocation::Standard)));
    }
    let audit = AuditEvent::GrantRevoked {
        app: held.app.clone(),
        subject: held.subject.clone(),
        grant: held.grant_id.clone(),
    };
    let puts = revoke_grant(ctx, held.grant_key, &held.grant)?.puts;
    Ok(Decision::Commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        Ending::Revoked(Revocation::Standard),
    ))
}

/// An exchanged access token ended by its holder: written back expiring now, on the condition
/// of the version read.
fn end_exchanged(
    ctx: &Ctx<'_>,
    key: &RecordKey,
    token: &AccessTokenRecord,
    version: u64,
) -> Decision {
    if token.expires_at.is_some_and(|at| at <= ctx.now) {
        return Decision::End(Ending::Revoked(Revocation::Standard));
    }
    let ended = AccessTokenRecord {
        expires_at: Some(ctx.now),
        ..token.clone()
    };
    Decision::Commit(
        Transaction {
            puts: vec![replace(
                key.clone(),
                Some(version),
                &Record::AccessToken(ended),
                access_token::purge_after(Some(ctx.now), ctx.config.policy()),
            )],
            audit: Vec::new(),
        },
        Ending::Revoked(Revocation::Standard),
    )
}

/// RFC 7662 §2.2: what a live token carries; `None` — `active: false` and nothing else — for
/// anything not live (expired, revoked, unlinked, of a removed app), and for anything `client`
/// may not learn of (§4): it learns of its own tokens, and a resource server of the access
/// tokens issued for a resource it serves — never of a refresh token it does not own, so no
/// resource can take one for an access token.
fn introspected(ctx: &Ctx<'_>, client: &Client, held: Held<'_>) -> Option<Introspected> {
    if !held.live {
        return None;
    }
    let own = held.app == &client.app
        || held
            .access
            .and_then(|(token, _)| token.exchanged_by.as_ref())
            .is_some_and(|by| by == &client.app);
    let grant = held.grant.record;
    match held.access {
        Some((token, _)) => {
            // A token naming no resource is for the API served here, the issuer's origin.
            let here = ctx.config.issuer().map(|issuer| issuer.resource());
            let served = || {
                token
                    .audience
                    .or_here(here)
                    .iter()
                    .any(|resource| ctx.config.serves(&client.app, resource))
            };
            if !own && !served() {
                return None;
            }
            access_token::check(token.expires_at, ctx.now).ok()?;
            Some(Introspected {
                app: held.app.clone(),
                subject: held.subject.clone(),
                scopes: token.scopes.clone(),
                expires_at: token.expires_at,
                access_token: true,
                audience: token.audience.clone(),
                exchanged_by: token.exchanged_by.clone().map(|by| (by, token.acting)),
                bound_to: token.bound_to.clone(),
            })
        }
        None if !own => None,
        // A refresh token that went unused for the idle lifetime is not live.
        None if refresh_token::check_idle(grant, ctx.now).is_err() => None,
        None => Some(Introspected {
            app: held.app.clone(),
            subject: held.subject.clone(),
            scopes: grant.scopes.clone(),
            expires_at: None,
            access_token: false,
            audience: grant.resources.clone(),
            exchanged_by: None,
            bound_to: None,
        }),
    }
}
