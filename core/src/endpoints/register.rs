//! `POST /oauth2/register`: dynamic client registration (RFC 7591), and
//! `/oauth2/register/<client_id>`: its management (RFC 7592), in the standards profile when the
//! configuration lets clients arrive unannounced and registration is on.
//!
//! Parsing reads the client's metadata and keeps what this server supports (RFC 7591 §3.2.1:
//! a server may register less than asked, and answers what it registered); deciding counts the
//! registration against its source, then stores the new app, minted from the request's entropy.

use crate::prelude::*;
use serde_json::{Map, Value};

use crate::client_metadata::{draft, Draft, MetadataFault, Origin};
use crate::config::Config;
use crate::credentials::{ClientSecret, RegistrationToken, RegistrationTokenDigest, SecretDigest};
use crate::ctx::{app_record, create, is_stored, replace, Ctx, Decision, Flow};
use crate::ending::{Ending, Registered, Via};
use crate::endpoints::attempts::{self, Guard};
use crate::endpoints::within_limit;
use crate::ids::AppKey;
use crate::records::{AppRecord, Provenance, Record, RecordKey, Registration};
use crate::refusal::Refusal;
use crate::routes::{client_in_path, Method};
use crate::step::{AuditEvent, Transaction};
use crate::time::UnixTime;
use crate::wire::bearer::bearer_token;
use crate::wire::http::HttpRequest;

/// A registration, its metadata validated; or a request to a registered client's
/// configuration (RFC 7592).
#[derive(Clone, Debug)]
pub(crate) enum Parsed {
    Register {
        draft: Box<Draft>,
        /// The count of registrations from the request's source, if it has one and is limited.
        guards: Vec<Guard>,
    },
    Manage(Box<Managed>),
}

impl Parsed {
    /// The partition of the client a management request names (a registration's is not known
    /// before it mints its key).
    pub fn partition(&self) -> Option<crate::partition::Partition> {
        match self {
            Parsed::Manage(managed) => Some(managed.record.partition()),
            Parsed::Register { .. } => None,
        }
    }
}

/// A request to `/oauth2/register/<client_id>` with the client's registration access token.
#[derive(Clone, Debug)]
pub(crate) struct Managed {
    app: AppKey,
    record: RecordKey,
    token: RegistrationTokenDigest,
    operation: Management,
}

/// What RFC 7592 §2 lets a client do with its registration.
#[derive(Clone, Debug)]
enum Management {
    /// `GET`: its client information (§2.1).
    Read,
    /// `PUT`: its metadata replaced (§2.2), with the secret it presented, if any.
    Update(Box<Draft>, Option<SecretDigest>),
    /// `DELETE`: the client is gone, and its grants with it (§2.3).
    Delete,
}

fn refuse<T>(refusal: Refusal) -> Result<T, Ending> {
    Err(Ending::Refused(refusal, Via::Token { basic: false }))
}

fn metadata<T>(why: impl Into<String>) -> Result<T, Ending> {
    refuse(Refusal::InvalidClientMetadata(why.into()))
}

/// Metadata as registered, or RFC 7591 §3.2.2's error for why not.
fn checked(draft: Result<Draft, MetadataFault>) -> Result<Draft, Ending> {
    draft.or_else(|fault| match fault {
        MetadataFault::RedirectUri(why) => refuse(Refusal::InvalidRedirectUri(why)),
        MetadataFault::Metadata(why) => metadata(why),
    })
}

pub(crate) fn parse(config: &Config, request: &HttpRequest) -> Result<Parsed, Ending> {
    within_limit(config, request, Via::Token { basic: false })?;
    let Some((clients, Some(policy))) = config
        .unannounced()
        .map(|clients| (clients, clients.registration.as_ref()))
    else {
        // The route table serves this path only when registration is on.
        return refuse(Refusal::NotFound);
    };
    // RFC 7591 §3: an initial access token, where the policy asks for one, as a bearer token.
    if !policy.initial_access_tokens.is_empty() {
        let presented = bearer_token(request).ok().map(ClientSecret::digest_of);
        let known = presented.is_some_and(|presented| {
            // Every digest compared, each in constant time.
            policy
                .initial_access_tokens
                .iter()
                .fold(false, |found, digest| digest.is(&presented) | found)
        });
        if !known {
            return Err(Ending::Refused(
                Refusal::InitialAccessTokenInvalid,
                Via::Bearer(None),
            ));
        }
    }
    let fields = json_object(request)?;
    let draft = checked(draft(
        config,
        &clients.scopes,
        &fields,
        Origin::Registration,
    ))?;
    // Counted against the source, and against all sources together: however many addresses
    // a registrant holds, the store grows by at most `all_sources` apps per window.
    let mut guards = Vec::with_capacity(2);
    if let (Some(source), 1..) = (&request.source, policy.per_source) {
        guards.push(attempts::registrations(
            config,
            Some(source),
            policy.per_source,
        ));
    }
    if policy.all_sources > 0 {
        guards.push(attempts::registrations(config, None, policy.all_sources));
    }
    Ok(Parsed::Register {
        draft: Box::new(draft),
        guards,
    })
}

/// A request to a registered client's configuration endpoint (RFC 7592 §2): the client in the
/// path, its registration access token as a bearer token, and for `PUT` its new metadata.
pub(crate) fn parse_management(config: &Config, request: &HttpRequest) -> Result<Parsed, Ending> {
    within_limit(config, request, Via::Token { basic: false })?;
    let unauthorized = || {
        Err(Ending::Refused(
            Refusal::RegistrationTokenInvalid,
            Via::Bearer(None),
        ))
    };
    let app = client_in_path(&request.path).and_then(|id| AppKey::new(id).ok());
    let (Some(app), Ok(token)) = (app, bearer_token(request)) else {
        return unauthorized();
    };
    let Some(record) = app_record(config, &app) else {
        // A configured app is managed in the configuration, not here.
        return unauthorized();
    };
    let operation = match Method::of(&request.method) {
        Method::Get => Management::Read,
        Method::Delete => Management::Delete,
        _ => {
            let fields = json_object(request)?;
            // §2.2: the body names the client it replaces.
            if fields.get("client_id").and_then(Value::as_str) != Some(app.as_str()) {
                return metadata("client_id must be the client's own");
            }
            let Some(clients) = config.unannounced() else {
                return refuse(Refusal::NotFound);
            };
            let secret = fields
                .get("client_secret")
                .and_then(Value::as_str)
                .map(ClientSecret::digest_of);
            Management::Update(
                Box::new(checked(draft(
                    config,
                    &clients.scopes,
                    &fields,
                    Origin::Registration,
                ))?),
                secret,
            )
        }
    };
    Ok(Parsed::Manage(Box::new(Managed {
        app,
        record,
        token: RegistrationToken::digest_of(token),
        operation,
    })))
}

/// The body as a JSON object (declared `application/json`).
fn json_object(request: &HttpRequest) -> Result<Map<String, Value>, Ending> {
    let mut content_types = request.header_values("content-type");
    let json = content_types.next().is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
    });
    if !json || content_types.next().is_some() {
        return metadata("the body must be a JSON object (Content-Type: application/json)");
    }
    // Read as text: the configuration's reader of JSON text is linked already, one of bytes
    // would be 5 KB of wasm more.
    let body = core::str::from_utf8(&request.body).unwrap_or_default();
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(fields)) => Ok(fields),
        _ => metadata("the body must be a JSON object"),
    }
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    match parsed {
        Parsed::Register { draft, guards } => register(draft, guards, ctx),
        Parsed::Manage(managed) => manage(managed, ctx),
    }
}

/// Counts the registration against its source (refused at the limit), then stores the app.
fn register(draft: &Draft, guards: &[Guard], ctx: &Ctx<'_>) -> Flow<Decision> {
    let count = match attempts::reserve(ctx, guards)? {
        Ok(count) => count,
        Err(wait) => {
            return Ok(Decision::End(Ending::Refused(
                Refusal::TooManyRegistrations(wait),
                Via::Token { basic: false },
            )))
        }
    };
    let Some(clients) = ctx.config.unannounced() else {
        return Ok(Decision::End(Ending::Refused(
            Refusal::NotFound,
            Via::Plain,
        )));
    };
    // The key: `dyn.` and 128 bits, never a configured app's (RFC 7591 §3.2.1: unique).
    let key = AppKey::new(format!("dyn.{}", ctx.entropy.grant_id()))
        .ok()
        .filter(|key| is_stored(ctx.config, key));
    let Some(key) = key else {
        return Ok(Decision::End(Ending::Refused(
            Refusal::Contention,
            Via::Token { basic: false },
        )));
    };
    let secret = draft
        .auth_method
        .uses_secret()
        .then(|| ClientSecret::minted(base64url(&ctx.entropy.primary())));
    let token = RegistrationToken::minted(base64url(&ctx.entropy.secondary()));
    // Kept for its trial lifetime until its first completed authorization renews it: a
    // registration nobody uses is gone within hours.
    let used_at = clients.trial_used_at(ctx.now);
    let record = registered(
        draft,
        key.clone(),
        secret.as_ref().map(ClientSecret::digest),
        &token,
        ctx.now,
        used_at,
    );
    let put = create(
        RecordKey::app(ctx.config.server_key(), key.clone()),
        &Record::App(record.clone()),
        Some(used_at.plus(clients.unused_lifetime)),
    );
    let audit = AuditEvent::ClientRegistered {
        app: key,
        auth_method: draft.auth_method,
    };
    let mut writes = count;
    writes.push(Transaction {
        puts: vec![put],
        audit: vec![audit],
    });
    Ok(Decision::Each(
        writes,
        Ending::Registered(Box::new(Registered {
            record,
            secret,
            token,
            created: true,
        })),
    ))
}

/// The stored app a registration makes, with what the server minted and when.
fn registered(
    draft: &Draft,
    key: AppKey,
    secret: Option<SecretDigest>,
    token: &RegistrationToken,
    issued_at: UnixTime,
    used_at: UnixTime,
) -> AppRecord {
    AppRecord {
        app: draft.app(key, secret),
        provenance: Provenance::Registered(Registration {
            issued_at,
            token: token.digest(),
            auth_method: draft.auth_method,
            grant_types: draft.grant_types,
            native: draft.native,
            about: draft.about.clone(),
            keys: draft.keys.clone(),
        }),
        used_at,
    }
}

/// RFC 7592 §2: the client authenticated by its registration access token (compared as a
/// digest, in constant time) reads, replaces or deletes its registration. Every answer with
/// client information carries a new registration access token (the old one is void: only its
/// digest was kept, so the token cannot be given back), never the client secret (likewise).
fn manage(managed: &Managed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let unauthorized = || {
        Ok(Decision::End(Ending::Refused(
            Refusal::RegistrationTokenInvalid,
            Via::Bearer(None),
        )))
    };
    let Some(clients) = ctx.config.unannounced() else {
        return unauthorized();
    };
    let lifetime = clients.unused_lifetime;
    let Some(loaded) = ctx.load::<AppRecord>(&managed.record)? else {
        return unauthorized();
    };
    let current = loaded.record;
    let Provenance::Registered(registration) = &current.provenance else {
        // A document's client is its document's to change, not managed here.
        return unauthorized();
    };
    // §2.1: an unknown client and a wrong token are answered alike (401), so that neither
    // tells whether the client exists; an expired client is unknown.
    if ctx.now >= current.used_at.plus(lifetime) || !registration.token.is(&managed.token) {
        return unauthorized();
    }
    let token = RegistrationToken::minted(base64url(&ctx.entropy.secondary()));
    let purge = Some(current.used_at.plus(lifetime));
    let (record, audit) = match &managed.operation {
        Management::Read => {
            let mut record = current.clone();
            if let Provenance::Registered(registration) = &mut record.provenance {
                registration.token = token.digest();
            }
            (record, None)
        }
        Management::Update(draft, presented) => {
            let secret = current.app.secret_digest;
            // §2.2: a secret sent must be the current one; public and confidential stay so.
            if presented.is_some_and(|p| !secret.is_some_and(|s| s.is(&p))) {
                return Ok(Decision::End(Ending::Refused(
                    Refusal::InvalidClientMetadata("client_secret is not the client's".into()),
                    Via::Token { basic: false },
                )));
            }
            if draft.auth_method.uses_secret() != secret.is_some() {
                return Ok(Decision::End(Ending::Refused(
                    Refusal::InvalidClientMetadata(
                        "token_endpoint_auth_method cannot change to or from a secret: \
                         register a new client"
                            .into(),
                    ),
                    Via::Token { basic: false },
                )));
            }
            // A client cannot prove less of itself than it registered to prove: whoever holds
            // its registration token must not turn a key-bound client into a public one.
            if draft.auth_method.strength() < registration.auth_method.strength() {
                return Ok(Decision::End(Ending::Refused(
                    Refusal::InvalidClientMetadata(format!(
                        "token_endpoint_auth_method cannot change from {} to the weaker {}: \
                         register a new client",
                        registration.auth_method.as_str(),
                        draft.auth_method.as_str()
                    )),
                    Via::Token { basic: false },
                )));
            }
            let mut record = registered(
                draft,
                managed.app.clone(),
                secret,
                &token,
                registration.issued_at,
                current.used_at,
            );
            // The key set of a jwks_uri it keeps is kept too (fetched again when due).
            if let Provenance::Registered(updated) = &mut record.provenance {
                updated.keys = updated.keys.clone().carried_from(Some(&registration.keys));
            }
            let audit = AuditEvent::ClientUpdated {
                app: managed.app.clone(),
            };
            (record, Some(audit))
        }
        Management::Delete => {
            // Expired at once, purged now: its grants end with it (the bearer check, refresh
            // and introspection read it beside them).
            let record = AppRecord {
                used_at: UnixTime(ctx.now.0.saturating_sub(lifetime.0)),
                ..current.clone()
            };
            let put = replace(
                managed.record.clone(),
                Some(loaded.version),
                &Record::App(record),
                Some(ctx.now),
            );
            let audit = AuditEvent::ClientDeleted {
                app: managed.app.clone(),
            };
            return Ok(Decision::commit_one(put, audit, Ending::Unregistered));
        }
    };
    let put = replace(
        managed.record.clone(),
        Some(loaded.version),
        &Record::App(record.clone()),
        purge,
    );
    Ok(Decision::Commit(
        Transaction {
            puts: vec![put],
            audit: audit.into_iter().collect(),
        },
        Ending::Registered(Box::new(Registered {
            record,
            secret: None,
            token,
            created: false,
        })),
    ))
}

fn base64url(bytes: &[u8; 32]) -> String {
    use base64ct::{Base64UrlUnpadded, Encoding as _};
    Base64UrlUnpadded::encode_string(bytes)
}
