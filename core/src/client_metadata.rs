//! Client metadata (RFC 7591 §2), as a registration sends it and a Client ID Metadata Document
//! holds it: read, checked against what this server supports, and made an [`App`].
//!
//! What the server lacks is left out rather than refused (RFC 7591 §3.2.1: a server may
//! register less than asked, and answers what it registered); what it cannot honour is refused
//! with the reason.

use crate::prelude::*;
use serde_json::{Map, Value};

use crate::config::{check_redirect_uri, App, Config, DefaultTokenType, Permissions};
use crate::credentials::SecretDigest;
use crate::grant_type::{GrantType, GrantTypes};
use crate::ids::{https_host, is_displayable, AppKey, RedirectUri};
use crate::jose::client_keys;
use crate::records::{AboutClient, AuthMethod, ClientKeys, RemoteKeys};
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::time::UnixTime;
use crate::wire::uri::{HttpUri, Scheme};

/// The most redirect URIs, contacts or characters of one text a client's metadata may carry.
const MAX_REDIRECT_URIS: usize = 16;
const MAX_CONTACTS: usize = 8;
const MAX_TEXT: usize = 256;

/// What a client's metadata says, checked: what it will be registered with (the key, secret and
/// token are minted on deciding), or what its document makes it.
#[derive(Clone, Debug)]
pub(crate) struct Draft {
    pub name: Option<String>,
    pub redirect_uris: Vec<RedirectUri>,
    pub scopes: ScopeSet,
    pub auth_method: AuthMethod,
    /// Its public keys, for `private_key_jwt`: by value, or its `jwks_uri` (not fetched yet).
    pub keys: ClientKeys,
    pub grant_types: GrantTypes,
    pub native: bool,
    pub about: AboutClient,
}

/// Where the metadata comes from: what it may hold differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A registration (RFC 7591): a secret or none.
    Registration,
    /// A Client ID Metadata Document: never a shared secret.
    Document,
}

/// Why metadata cannot be taken: a redirect URI (RFC 7591 `invalid_redirect_uri`) or anything
/// else (`invalid_client_metadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MetadataFault {
    RedirectUri(String),
    Metadata(String),
}

fn metadata<T>(why: impl Into<String>) -> Result<T, MetadataFault> {
    Err(MetadataFault::Metadata(why.into()))
}

impl Draft {
    /// The app this metadata makes under `key`, with `secret` (a registration's).
    pub fn app(&self, key: AppKey, secret: Option<SecretDigest>) -> App {
        App {
            name: self.name.clone().unwrap_or_else(|| key.as_str().to_owned()),
            key,
            secret_digest: secret,
            redirect_uris: self.redirect_uris.clone(),
            permissions: Permissions::Scoped {
                scopes: self.scopes.clone(),
            },
            // A client that lists the refresh_token grant gets refresh tokens without asking
            // (the MCP TypeScript SDK 1.x never asks).
            default_token_type: if self.grant_types.contains(GrantType::RefreshToken) {
                DefaultTokenType::Offline
            } else {
                DefaultTokenType::ShortLived
            },
            implicit_allowed: false,
        }
    }
}

/// The redirect URIs a client nobody configured may name (RFC 8252 §7, RFC 9700 §4.11): https,
/// http on a loopback address (a native app's listener), or a private-use scheme in
/// reverse-domain form (§7.1: `com.example.app:/cb`) — never another scheme a browser hands to
/// some program of the user's (`ms-msdt:`, `search-ms:`, `intent:`, `vscode:`), nor http on a
/// network host, whatever the policy allows configured apps.
fn unannounced_redirect_uri(uri: &RedirectUri) -> Result<(), &'static str> {
    let text = uri.as_str();
    match HttpUri::parse(text).map(|parsed| (parsed.scheme, parsed.is_loopback())) {
        Some((Scheme::Https, _) | (Scheme::Http, true)) => Ok(()),
        Some((Scheme::Http, false)) => {
            Err("http is allowed only on the loopback interface (127.0.0.1, [::1], localhost)")
        }
        None => match text.split_once(':') {
            // (`http` and `https` hold no dot: written without `//`, they are refused here.)
            Some((scheme, _)) if scheme.contains('.') => Ok(()),
            _ => Err(
                "must be https, http on a loopback address, or a private-use scheme in \
                 reverse-domain form (com.example.app:/callback, RFC 8252 §7.1)",
            ),
        },
    }
}

/// A `jwks_uri`, if this server can fetch it: an https URL by the rules of a metadata document's
/// (no credentials, no fragment, a path), on a host the document policy allows — which must be
/// on, as it is the policy every fetch is made under.
fn key_set_url(config: &Config, url: String) -> Result<String, MetadataFault> {
    if https_host(&url).is_none() {
        return metadata(
            "jwks_uri must be an https URL with a host and a path, without credentials or a \
             fragment",
        );
    }
    match config.fetch_policy(&url) {
        Some(_) => Ok(url),
        None if config.documents().is_none() => metadata(
            "this server fetches no documents (profile.clients.documents is off): give the keys \
             as jwks",
        ),
        None => metadata("jwks_uri is on a host this server does not fetch from"),
    }
}

/// The metadata of RFC 7591 §2 this server takes, checked; anything else is ignored (§2: "MUST
/// ignore any client metadata it does not understand").
pub(crate) fn draft(
    config: &Config,
    grantable: &ScopeSet,
    fields: &Map<String, Value>,
    origin: Origin,
) -> Result<Draft, MetadataFault> {
    let text = |name: &str| -> Result<Option<String>, MetadataFault> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.len() <= MAX_TEXT && is_displayable(text) => {
                Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty()))
            }
            Some(_) => metadata(format!(
                "{name} must be a string of at most {MAX_TEXT} bytes without control or invisible \
                 format characters"
            )),
        }
    };
    let list = |name: &str, max: usize| -> Result<Option<Vec<&str>>, MetadataFault> {
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
    // The grant types this server has for such a client; the rest is left out of the
    // registration (§3.2.1). The code flow, or client credentials where the deployment lets
    // unannounced clients have them: a machine, with no redirect URI and no response type.
    let listed = list("grant_types", 8)?.unwrap_or(vec![GrantType::AuthorizationCode.name()]);
    let machines = config
        .client_credentials()
        .is_some_and(|grant| grant.unannounced);
    let kept: Vec<GrantType> = GrantType::ALL
        .into_iter()
        .filter(|grant| listed.contains(&grant.name()))
        .filter(|grant| *grant != GrantType::ClientCredentials || machines)
        .collect();
    let grant_types = GrantTypes::of(&kept);
    let code_flow = grant_types.contains(GrantType::AuthorizationCode);
    if !code_flow && !grant_types.contains(GrantType::ClientCredentials) {
        return metadata(if machines {
            "grant_types must include authorization_code or client_credentials"
        } else {
            "grant_types must include authorization_code"
        });
    }
    // Redirect URIs: required for the code flow (§2), each by the rules of configured apps;
    // none for a machine.
    let uris = list("redirect_uris", MAX_REDIRECT_URIS)?.unwrap_or_default();
    match (code_flow, uris.is_empty()) {
        (true, true) => {
            return Err(MetadataFault::RedirectUri(
                "redirect_uris must name at least one redirect URI".into(),
            ))
        }
        (false, false) => {
            return Err(MetadataFault::RedirectUri(
                "a client without the authorization_code grant has no redirect_uris".into(),
            ))
        }
        _ => {}
    }
    let mut redirect_uris = Vec::with_capacity(uris.len());
    for uri in uris {
        let checked = RedirectUri::new(uri)
            .map_err(|e| e.to_string())
            .and_then(|parsed| {
                check_redirect_uri(&parsed, config.policy())
                    .and_then(|()| unannounced_redirect_uri(&parsed))
                    .map(|()| parsed)
                    .map_err(str::to_owned)
            });
        match checked {
            Ok(parsed) => redirect_uris.push(parsed),
            Err(why) => return Err(MetadataFault::RedirectUri(format!("{uri}: {why}"))),
        }
    }
    let auth_method = match (origin, text("token_endpoint_auth_method")?.as_deref()) {
        // RFC 7591 §2: a registration's default is client_secret_basic.
        (Origin::Registration, None | Some("client_secret_basic")) => AuthMethod::ClientSecretBasic,
        (Origin::Registration, Some("client_secret_post")) => AuthMethod::ClientSecretPost,
        (_, Some("none")) => AuthMethod::None,
        (_, Some("private_key_jwt")) => AuthMethod::PrivateKeyJwt,
        (Origin::Registration, Some(other)) => {
            return metadata(format!(
                "token_endpoint_auth_method {other} is not supported: none, \
                 client_secret_basic, client_secret_post or private_key_jwt"
            ))
        }
        // A document names no shared secret: nobody could have handed its client one (CIMD
        // §4.1); it is public, or proves itself with its keys.
        (Origin::Document, None) => AuthMethod::None,
        (Origin::Document, Some(other)) => {
            return metadata(format!(
                "token_endpoint_auth_method {other} is not supported for a metadata document's \
                 client: none or private_key_jwt"
            ))
        }
    };
    if origin == Origin::Document
        && (fields.contains_key("client_secret") || fields.contains_key("client_secret_expires_at"))
    {
        return metadata("a metadata document holds no client_secret (CIMD §4.1)");
    }
    // §4.4.2: a machine's token is had by authenticating, so it must be able to.
    if grant_types.contains(GrantType::ClientCredentials) && auth_method == AuthMethod::None {
        return metadata(
            "the client_credentials grant needs a client that authenticates: \
             client_secret_basic, client_secret_post or private_key_jwt",
        );
    }
    // The code flow's response type (a machine's are ignored: it has none).
    let response_types = list("response_types", 8)?.unwrap_or(vec!["code"]);
    if code_flow && !response_types.contains(&"code") {
        return metadata("response_types must include code");
    }
    let native = match text("application_type")?.as_deref() {
        None | Some("web") => false,
        Some("native") => true,
        Some(_) => return metadata("application_type must be web or native"),
    };
    // RFC 7591 §2: keys by value or by reference, never both; only for private_key_jwt.
    let keys = match (fields.get("jwks"), text("jwks_uri")?, auth_method) {
        (Some(_), Some(_), _) => return metadata("jwks and jwks_uri must not both be present"),
        (None, Some(url), AuthMethod::PrivateKeyJwt) => ClientKeys::Remote(RemoteKeys {
            url: key_set_url(config, url)?,
            keys: Vec::new(),
            fetched_at: None,
            fresh_until: UnixTime(0),
        }),
        (Some(set), None, AuthMethod::PrivateKeyJwt) => match client_keys(set) {
            Ok(keys) => ClientKeys::Inline(keys),
            Err(why) => return metadata(why),
        },
        (None, None, AuthMethod::PrivateKeyJwt) => {
            return metadata("private_key_jwt needs the client's public keys (jwks or jwks_uri)")
        }
        (None, None, _) => ClientKeys::none(),
        (_, _, _) => return metadata("jwks and jwks_uri are for private_key_jwt only"),
    };
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
    let url = |name: &str| -> Result<Option<String>, MetadataFault> {
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
            .filter(|c| c.len() <= MAX_TEXT && is_displayable(c))
            .map(str::to_owned)
            .collect(),
        software_id: text("software_id")?,
        software_version: text("software_version")?,
    };
    // A document names its client (MCP 2026-07-28: client_id, client_name and redirect_uris
    // are required of it, and the server checks them); a registration may leave the name out.
    let name = text("client_name")?;
    if origin == Origin::Document && name.is_none() {
        return metadata("client_name is required of a metadata document");
    }
    Ok(Draft {
        name,
        redirect_uris,
        scopes,
        auth_method,
        grant_types,
        native,
        about,
        keys,
    })
}
