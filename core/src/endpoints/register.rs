//! `POST /oauth2/register`: dynamic client registration (RFC 7591), and
//! `/oauth2/register/<client_id>`: its management (RFC 7592), in the standards profile when the
//! configuration lets clients arrive unannounced and registration is on.
//!
//! Parsing reads the client's metadata and keeps what this server supports (RFC 7591 §3.2.1:
//! a server may register less than asked, and answers what it registered); deciding counts the
//! registration against its source, then stores the new app, minted from the request's entropy.

use serde_json::{Map, Value};

use crate::config::{check_redirect_uri, App, Config, DefaultTokenType, Permissions};
use crate::credentials::{ClientSecret, RegistrationToken, RegistrationTokenDigest, SecretDigest};
use crate::ctx::{app_record, create, replace, Ctx, Decision, Flow};
use crate::ending::{Ending, Registered, Via};
use crate::endpoints::attempts::{self, Guard};
use crate::endpoints::within_limit;
use crate::ids::{AppKey, RedirectUri};
use crate::records::{
    AboutClient, AppRecord, AuthMethod, Provenance, Record, RecordKey, Registration,
};
use crate::refusal::Refusal;
use crate::routes::{client_in_path, Method};
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::step::{AuditEvent, Transaction};
use crate::time::UnixTime;
use crate::wire::bearer::bearer_token;
use crate::wire::http::HttpRequest;

/// The most redirect URIs, contacts or characters of one text a registration may carry.
const MAX_REDIRECT_URIS: usize = 16;
const MAX_CONTACTS: usize = 8;
const MAX_TEXT: usize = 256;

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

/// What the client will be registered with (the key, secret and token are minted on deciding).
#[derive(Clone, Debug)]
pub(crate) struct Draft {
    name: Option<String>,
    redirect_uris: Vec<RedirectUri>,
    scopes: ScopeSet,
    auth_method: AuthMethod,
    refresh_tokens: bool,
    native: bool,
    about: AboutClient,
}

fn refuse<T>(refusal: Refusal) -> Result<T, Ending> {
    Err(Ending::Refused(refusal, Via::Token { basic: false }))
}

fn metadata<T>(why: impl Into<String>) -> Result<T, Ending> {
    refuse(Refusal::InvalidClientMetadata(why.into()))
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
                Via::Bearer,
            ));
        }
    }
    let fields = json_object(request)?;
    let draft = draft(config, &clients.scopes, &fields)?;
    let guards = match (&request.source, policy.per_source) {
        (Some(source), limit) if limit > 0 => vec![attempts::registrations(config, source, limit)],
        _ => Vec::new(),
    };
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
            Via::Bearer,
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
            Management::Update(Box::new(draft(config, &clients.scopes, &fields)?), secret)
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
    let body = std::str::from_utf8(&request.body).unwrap_or_default();
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(fields)) => Ok(fields),
        _ => metadata("the body must be a JSON object"),
    }
}

/// The metadata of RFC 7591 §2 this server takes, checked; anything else is ignored (§2: "MUST
/// ignore any client metadata it does not understand").
fn draft(
    config: &Config,
    grantable: &ScopeSet,
    fields: &Map<String, Value>,
) -> Result<Draft, Ending> {
    let text = |name: &str| -> Result<Option<String>, Ending> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text))
                if text.len() <= MAX_TEXT && !text.chars().any(char::is_control) =>
            {
                Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty()))
            }
            Some(_) => metadata(format!(
                "{name} must be a string of at most {MAX_TEXT} bytes without control characters"
            )),
        }
    };
    let list = |name: &str, max: usize| -> Result<Option<Vec<&str>>, Ending> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) if items.len() <= max => items
                .iter()
                .map(|item| item.as_str())
                .collect::<Option<Vec<&str>>>()
                .map(Some)
                .map_or_else(|| metadata(format!("{name} must be a list of strings")), Ok),
            Some(_) => metadata(format!("{name} must be a list of at most {max} strings")),
        }
    };
    // Redirect URIs: required for the code flow (§2), each by the rules of configured apps.
    let uris = list("redirect_uris", MAX_REDIRECT_URIS)?.unwrap_or_default();
    if uris.is_empty() {
        return refuse(Refusal::InvalidRedirectUri(
            "redirect_uris must name at least one redirect URI".into(),
        ));
    }
    let mut redirect_uris = Vec::with_capacity(uris.len());
    for uri in uris {
        let checked = RedirectUri::new(uri)
            .map_err(|e| e.to_string())
            .and_then(|parsed| {
                check_redirect_uri(&parsed, config.policy())
                    .map(|()| parsed)
                    .map_err(str::to_owned)
            });
        match checked {
            Ok(parsed) => redirect_uris.push(parsed),
            Err(why) => return refuse(Refusal::InvalidRedirectUri(format!("{uri}: {why}"))),
        }
    }
    let auth_method = match text("token_endpoint_auth_method")?.as_deref() {
        // §2: the default is client_secret_basic.
        None | Some("client_secret_basic") => AuthMethod::ClientSecretBasic,
        Some("client_secret_post") => AuthMethod::ClientSecretPost,
        Some("none") => AuthMethod::None,
        Some(other) => {
            return metadata(format!(
                "token_endpoint_auth_method {other} is not supported: none, \
                 client_secret_basic or client_secret_post"
            ))
        }
    };
    // The grant and response types this server has for such a client; the rest is left out
    // of the registration (§3.2.1), but the code flow must be among them.
    let grant_types = list("grant_types", 8)?.unwrap_or(vec!["authorization_code"]);
    if !grant_types.contains(&"authorization_code") {
        return metadata("grant_types must include authorization_code");
    }
    let response_types = list("response_types", 8)?.unwrap_or(vec!["code"]);
    if !response_types.contains(&"code") {
        return metadata("response_types must include code");
    }
    let native = match text("application_type")?.as_deref() {
        None | Some("web") => false,
        Some("native") => true,
        Some(_) => return metadata("application_type must be web or native"),
    };
    if fields.contains_key("jwks") || fields.contains_key("jwks_uri") {
        return metadata("jwks and jwks_uri are not supported: register a client_secret or none");
    }
    // The scopes asked for, among those such a client may be granted (offline_access is any
    // client's to ask for at authorization).
    let scopes = match text("scope")? {
        None => grantable.clone(),
        Some(asked) => {
            let Ok(asked) = ScopeSet::parse(&asked) else {
                return metadata("scope must be space-separated scope tokens (RFC 6749 §3.3)");
            };
            let kept = ScopeSet::parse(
                &asked
                    .iter()
                    .filter(|name| *name != OFFLINE_ACCESS && grantable.iter().any(|g| g == *name))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            match kept {
                Ok(kept) => kept,
                Err(_) if asked.iter().all(|name| name == OFFLINE_ACCESS) => grantable.clone(),
                Err(_) => {
                    return metadata(format!(
                        "none of the scopes asked for can be granted here: {}",
                        grantable
                    ))
                }
            }
        }
    };
    let url = |name: &str| -> Result<Option<String>, Ending> {
        match text(name)? {
            Some(value) if !value.starts_with("https://") => {
                metadata(format!("{name} must be an https URL"))
            }
            other => Ok(other),
        }
    };
    let about = AboutClient {
        client_uri: url("client_uri")?,
        logo_uri: url("logo_uri")?,
        tos_uri: url("tos_uri")?,
        policy_uri: url("policy_uri")?,
        contacts: list("contacts", MAX_CONTACTS)?
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.len() <= MAX_TEXT && !c.chars().any(char::is_control))
            .map(str::to_owned)
            .collect(),
        software_id: text("software_id")?,
        software_version: text("software_version")?,
    };
    Ok(Draft {
        name: text("client_name")?,
        redirect_uris,
        scopes,
        auth_method,
        refresh_tokens: grant_types.contains(&"refresh_token"),
        native,
        about,
    })
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
        .filter(|key| app_record(ctx.config, key).is_some());
    let Some(key) = key else {
        return Ok(Decision::End(Ending::Refused(
            Refusal::Contention,
            Via::Token { basic: false },
        )));
    };
    let secret = (draft.auth_method != AuthMethod::None)
        .then(|| ClientSecret::minted(base64url(&ctx.entropy.primary())));
    let token = RegistrationToken::minted(base64url(&ctx.entropy.secondary()));
    let record = draft.record(
        key.clone(),
        secret.as_ref().map(ClientSecret::digest),
        &token,
        ctx.now,
        ctx.now,
    );
    let put = create(
        RecordKey::app(ctx.config.server_key(), key.clone()),
        &Record::App(record.clone()),
        Some(ctx.now.plus(clients.unused_lifetime)),
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

impl Draft {
    /// The stored app this metadata makes, with what the server minted and when.
    fn record(
        &self,
        key: AppKey,
        secret: Option<SecretDigest>,
        token: &RegistrationToken,
        issued_at: UnixTime,
        used_at: UnixTime,
    ) -> AppRecord {
        let app = App {
            name: self.name.clone().unwrap_or_else(|| key.to_string()),
            key,
            secret_digest: secret,
            redirect_uris: self.redirect_uris.clone(),
            permissions: Permissions::Scoped {
                scopes: self.scopes.clone(),
            },
            // A client that registered the refresh_token grant gets refresh tokens without
            // asking (the MCP TypeScript SDK 1.x never asks).
            default_token_type: if self.refresh_tokens {
                DefaultTokenType::Offline
            } else {
                DefaultTokenType::ShortLived
            },
            implicit_allowed: false,
        };
        AppRecord {
            app,
            provenance: Provenance::Registered(Registration {
                issued_at,
                token: token.digest(),
                auth_method: self.auth_method,
                refresh_tokens: self.refresh_tokens,
                native: self.native,
                about: self.about.clone(),
            }),
            used_at,
        }
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
            Via::Bearer,
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
    let Provenance::Registered(registration) = &current.provenance;
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
            let Provenance::Registered(registration) = &mut record.provenance;
            registration.token = token.digest();
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
            if (draft.auth_method == AuthMethod::None) != secret.is_none() {
                return Ok(Decision::End(Ending::Refused(
                    Refusal::InvalidClientMetadata(
                        "token_endpoint_auth_method cannot change between none and a secret: \
                         register a new client"
                            .into(),
                    ),
                    Via::Token { basic: false },
                )));
            }
            let record = draft.record(
                managed.app.clone(),
                secret,
                &token,
                registration.issued_at,
                current.used_at,
            );
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
