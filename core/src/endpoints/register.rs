//! `POST /oauth2/register`: dynamic client registration (RFC 7591), in the standards profile
//! when the configuration lets clients arrive unannounced and registration is on.
//!
//! Parsing reads the client's metadata and keeps what this server supports (RFC 7591 §3.2.1:
//! a server may register less than asked, and answers what it registered); deciding counts the
//! registration against its source, then stores the new app, minted from the request's entropy.

use serde_json::{Map, Value};

use crate::config::{check_redirect_uri, App, Config, DefaultTokenType, Permissions};
use crate::credentials::{ClientSecret, RegistrationToken};
use crate::ctx::{app_record, create, Ctx, Decision, Flow};
use crate::ending::{Ending, Registered, Via};
use crate::endpoints::attempts::{self, Guard};
use crate::endpoints::within_limit;
use crate::ids::{AppKey, RedirectUri};
use crate::records::{
    AboutClient, AppRecord, AuthMethod, Provenance, Record, RecordKey, Registration,
};
use crate::refusal::Refusal;
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::step::{AuditEvent, Transaction};
use crate::wire::bearer::bearer_token;
use crate::wire::http::HttpRequest;

/// The most redirect URIs, contacts or characters of one text a registration may carry.
const MAX_REDIRECT_URIS: usize = 16;
const MAX_CONTACTS: usize = 8;
const MAX_TEXT: usize = 256;

/// A registration, its metadata validated.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    draft: Box<Draft>,
    /// The count of registrations from the request's source, if it has one and is limited.
    guards: Vec<Guard>,
}

/// What the client will be registered with (the key, secret and token are minted on deciding).
#[derive(Clone, Debug)]
struct Draft {
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
    let (Some(clients), Some(policy)) = (
        config.unannounced(),
        config
            .unannounced()
            .and_then(|clients| clients.registration.as_ref()),
    ) else {
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
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(body) else {
        return metadata("the body must be a JSON object");
    };
    let draft = draft(config, &clients.scopes, &fields)?;
    let guards = match (&request.source, policy.per_source) {
        (Some(source), limit) if limit > 0 => vec![attempts::registrations(config, source, limit)],
        _ => Vec::new(),
    };
    Ok(Parsed {
        draft: Box::new(draft),
        guards,
    })
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

/// Counts the registration against its source (refused at the limit), then stores the app.
pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let count = match attempts::reserve(ctx, &parsed.guards)? {
        Ok(count) => count,
        Err(wait) => {
            return Ok(Decision::End(Ending::Refused(
                Refusal::TooManyAttempts(wait),
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
    let draft = &parsed.draft;
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
    let app = App {
        key: key.clone(),
        name: draft.name.clone().unwrap_or_else(|| key.to_string()),
        secret_digest: secret.as_ref().map(ClientSecret::digest),
        redirect_uris: draft.redirect_uris.clone(),
        permissions: Permissions::Scoped {
            scopes: draft.scopes.clone(),
        },
        // A client that registered the refresh_token grant gets refresh tokens without asking
        // (the MCP TypeScript SDK 1.x never asks).
        default_token_type: if draft.refresh_tokens {
            DefaultTokenType::Offline
        } else {
            DefaultTokenType::ShortLived
        },
        implicit_allowed: false,
    };
    let record = AppRecord {
        app,
        provenance: Provenance::Registered(Registration {
            issued_at: ctx.now,
            token: token.digest(),
            auth_method: draft.auth_method,
            refresh_tokens: draft.refresh_tokens,
            native: draft.native,
            about: draft.about.clone(),
        }),
        used_at: ctx.now,
    };
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
        })),
    ))
}

fn base64url(bytes: &[u8; 32]) -> String {
    use base64ct::{Base64UrlUnpadded, Encoding as _};
    Base64UrlUnpadded::encode_string(bytes)
}
