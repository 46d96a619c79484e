//! The client's side of the wire: the authorization URL, the token and revocation requests, the
//! redirect and token responses.

use crate::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ClientConfig, ClientError, HeldAccessToken, HeldRefreshToken, ProofToSign, Session};
use crate::grant_type::GrantType;
use crate::time::{Seconds, UnixTime};
use crate::wire::form::Params;
use crate::wire::http::HttpResponse;

/// An HTTP request for the host to send.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRequest {
    /// Always `POST` for the OAuth endpoints.
    pub method: String,
    /// The absolute URL.
    pub url: String,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// The body (form-encoded for the token endpoint, empty for revocation).
    pub body: String,
    /// With DPoP, the proof to sign and send as the request's `DPoP` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<ProofToSign>,
}

pub(super) fn is_http_url(url: &str) -> bool {
    ["https://", "http://"].iter().any(|scheme| {
        url.len() > scheme.len()
            && url
                .get(..scheme.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    })
}

fn encode(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// The authorization URL (RFC 6749 §4.1.1, RFC 7636 §4.3, plus `token_access_type`), binding
/// the code to the DPoP key of thumbprint `dpop_jkt` if there is one (RFC 9449 §10).
pub(super) fn authorization_url(
    config: &ClientConfig,
    state: &str,
    challenge: &str,
    dpop_jkt: Option<&str>,
) -> String {
    let scope = config.scopes.join(" ");
    let mut pairs = vec![
        ("client_id", config.client_id.as_str()),
        ("response_type", "code"),
    ];
    if let Some(uri) = &config.redirect_uri {
        pairs.push(("redirect_uri", uri));
    }
    pairs.push(("state", state));
    pairs.push(("token_access_type", config.access_type.as_str()));
    if !scope.is_empty() {
        pairs.push(("scope", &scope));
    }
    pairs.push(("code_challenge", challenge));
    pairs.push(("code_challenge_method", "S256"));
    if let Some(thumbprint) = dpop_jkt {
        pairs.push(("dpop_jkt", thumbprint));
    }
    let joiner = if config.authorize_url.contains('?') {
        '&'
    } else {
        '?'
    };
    format!("{}{joiner}{}", config.authorize_url, encode(&pairs))
}

fn form_post(url: &str, pairs: &[(&str, &str)]) -> ClientRequest {
    ClientRequest {
        method: "POST".into(),
        url: url.into(),
        headers: vec![(
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: encode(pairs),
        proof: None,
    }
}

/// The code exchange (RFC 6749 §4.1.3 with `code_verifier`): a public client names itself with
/// `client_id` and proves possession with the verifier.
pub(super) fn exchange_request(config: &ClientConfig, code: &str, verifier: &str) -> ClientRequest {
    let mut pairs = vec![
        ("grant_type", GrantType::AuthorizationCode.name()),
        ("code", code),
        ("client_id", config.client_id.as_str()),
        ("code_verifier", verifier),
    ];
    if let Some(uri) = &config.redirect_uri {
        pairs.push(("redirect_uri", uri));
    }
    form_post(&config.token_url, &pairs)
}

/// A refresh (RFC 6749 §6).
pub(super) fn refresh_request(config: &ClientConfig, refresh_token: &str) -> ClientRequest {
    form_post(
        &config.token_url,
        &[
            ("grant_type", GrantType::RefreshToken.name()),
            ("refresh_token", refresh_token),
            ("client_id", config.client_id.as_str()),
        ],
    )
}

/// The revocation: authenticated by the access token it ends (`authorization`, with its
/// `proof` when the token is bound).
pub(super) fn revoke_request(
    config: &ClientConfig,
    authorization: String,
    proof: Option<ProofToSign>,
) -> ClientRequest {
    ClientRequest {
        method: "POST".into(),
        url: config.revoke_url.clone(),
        headers: vec![("Authorization".into(), authorization)],
        body: String::new(),
        proof,
    }
}

/// The parameters the server put on the redirect.
pub(super) struct Redirect {
    pub state: Option<String>,
    pub code: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

/// Reads the redirect back at `url`, which must be the configured redirect URI plus the
/// server's query parameters.
pub(super) fn parse_redirect(config: &ClientConfig, url: &str) -> Result<Redirect, ClientError> {
    let registered = config
        .redirect_uri
        .as_deref()
        .ok_or(ClientError::WrongRedirectTarget)?;
    let without_fragment = url.split('#').next().unwrap_or_default();
    let (base, query) = without_fragment
        .split_once('?')
        .unwrap_or((without_fragment, ""));
    let registered_base = registered.split('?').next().unwrap_or_default();
    if base != registered_base {
        return Err(ClientError::WrongRedirectTarget);
    }
    let params = Params::parse(query.as_bytes());
    let one = |name: &'static str| {
        params
            .one(name)
            .map(|v| v.map(str::to_owned))
            .map_err(|_| ClientError::MalformedResponse {
                reason: format!("the redirect repeats {name}"),
            })
    };
    Ok(Redirect {
        state: one("state")?,
        code: one("code")?,
        error: one("error")?,
        error_description: one("error_description")?,
    })
}

/// A successful token response, checked (RFC 6749 §5.1).
pub(super) struct Tokens {
    access_token: String,
    /// `token_type: DPoP`: bound to the client's key.
    bound: bool,
    expires_in: Option<u64>,
    refresh_token: Option<String>,
    scope: Option<String>,
    account_id: Option<String>,
    uid: Option<String>,
}

impl Tokens {
    /// The session these tokens make, keeping from `previous` what a refresh does not resend.
    pub(super) fn into_session(
        self,
        sent_at: UnixTime,
        previous: Option<&Session>,
        config: &ClientConfig,
    ) -> Session {
        let scopes = match (self.scope, previous) {
            (Some(scope), _) => scope
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            (None, Some(previous)) => previous.scopes.clone(),
            (None, None) => config.scopes.clone(),
        };
        Session {
            access_token: HeldAccessToken(self.access_token),
            expires_at: self.expires_in.map(|s| sent_at.plus(Seconds(s))),
            refresh_token: self
                .refresh_token
                .map(HeldRefreshToken)
                .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
            scopes,
            account_id: self
                .account_id
                .or_else(|| previous.and_then(|p| p.account_id.clone())),
            uid: self.uid.or_else(|| previous.and_then(|p| p.uid.clone())),
            after_refusal: false,
            bound: self.bound,
            server_nonce: previous.and_then(|p| p.server_nonce.clone()),
            api_nonce: previous.and_then(|p| p.api_nonce.clone()),
        }
    }
}

/// The nonce a server hands out with `response` (`DPoP-Nonce`, RFC 9449 §8), if any.
pub(super) fn nonce_of(response: &HttpResponse) -> Option<String> {
    response
        .header("dpop-nonce")
        .filter(|nonce| !nonce.is_empty())
        .map(str::to_owned)
}

/// Whether a token endpoint's `response` refuses a proof for want of a nonce (§8:
/// `use_dpop_nonce`).
pub(super) fn asks_for_nonce(response: &HttpResponse) -> bool {
    response.status == 400
        && serde_json::from_str::<Value>(&response.body)
            .ok()
            .and_then(|json| json.get("error").and_then(Value::as_str).map(str::to_owned))
            .is_some_and(|error| error == "use_dpop_nonce")
}

/// Whether a `WWW-Authenticate` challenge names `error` (`error="<error>"` among its
/// parameters, RFC 6750 §3): `use_dpop_nonce` (RFC 9449 §9), `invalid_token`.
pub(super) fn challenge_names(challenge: &str, error: &str) -> bool {
    challenge.split(',').any(|part| {
        part.trim()
            .rsplit(' ')
            .next()
            .and_then(|parameter| parameter.strip_prefix("error=\""))
            .and_then(|quoted| quoted.strip_suffix('"'))
            == Some(error)
    })
}

/// Reads a token endpoint answer: tokens, the server's OAuth error, or a malformed response.
/// A client with a DPoP key (`dpop`) takes tokens bound to it (`token_type: DPoP`) or bearer
/// tokens from a server that binds none (RFC 9449 §5); one without takes bearer tokens only.
pub(super) fn parse_token_response(
    response: &HttpResponse,
    dpop: bool,
) -> Result<Tokens, ClientError> {
    let malformed = |reason: &str| ClientError::MalformedResponse {
        reason: reason.to_owned(),
    };
    let json: Option<Value> = serde_json::from_str(&response.body).ok();
    let text = |name: &str| {
        json.as_ref()
            .and_then(|j| j.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if response.status != 200 {
        return match text("error") {
            Some(error) => Err(ClientError::TokenRefused {
                status: response.status,
                error,
                description: text("error_description"),
            }),
            None => Err(malformed(&format!(
                "status {} without an OAuth error",
                response.status
            ))),
        };
    }
    let access_token = text("access_token")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| malformed("no access_token"))?;
    let token_type = text("token_type").unwrap_or_default();
    let bound = match token_type {
        t if t.eq_ignore_ascii_case("bearer") => false,
        t if t.eq_ignore_ascii_case("dpop") && dpop => true,
        t if t.eq_ignore_ascii_case("dpop") => {
            return Err(malformed(
                "token_type is DPoP, and this client has no DPoP key",
            ))
        }
        _ => return Err(malformed("token_type is neither Bearer nor DPoP")),
    };
    let expires_in = match json.as_ref().and_then(|j| j.get("expires_in")) {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .ok_or_else(|| malformed("expires_in is not a whole number of seconds"))?,
        ),
    };
    Ok(Tokens {
        access_token,
        bound,
        expires_in,
        refresh_token: text("refresh_token").filter(|t| !t.is_empty()),
        scope: text("scope"),
        account_id: text("account_id"),
        uid: text("uid"),
    })
}
