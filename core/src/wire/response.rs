//! Responses the core writes in full: RFC 6749 §5.1/§5.2 token responses and errors, RFC 6750
//! bearer challenges with the reference service's JSON error body.

use serde_json::{json, Value};

use crate::scope::Scope;
use crate::step::HttpResponse;

/// The RFC 6749 error codes the core produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OAuthError {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidScope,
    AccessDenied,
}

impl OAuthError {
    pub fn code(self) -> &'static str {
        match self {
            OAuthError::InvalidRequest => "invalid_request",
            OAuthError::InvalidClient => "invalid_client",
            OAuthError::InvalidGrant => "invalid_grant",
            OAuthError::UnauthorizedClient => "unauthorized_client",
            OAuthError::UnsupportedGrantType => "unsupported_grant_type",
            OAuthError::UnsupportedResponseType => "unsupported_response_type",
            OAuthError::InvalidScope => "invalid_scope",
            OAuthError::AccessDenied => "access_denied",
        }
    }
}

fn json_response(status: u16, body: &Value, extra: &[(&str, &str)]) -> HttpResponse {
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Cache-Control".to_owned(), "no-store".to_owned()),
        ("Pragma".to_owned(), "no-cache".to_owned()),
    ];
    headers.extend(
        extra
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    HttpResponse {
        status,
        headers,
        body: body.to_string(),
    }
}

/// A token-endpoint error (RFC 6749 §5.2): 400, or 401 for `invalid_client`, with
/// `WWW-Authenticate: Basic` when the client tried Basic.
pub(crate) fn token_error(error: OAuthError, description: &str, via_basic: bool) -> HttpResponse {
    let body = json!({ "error": error.code(), "error_description": description });
    if error == OAuthError::InvalidClient {
        let challenge: &[(&str, &str)] = if via_basic {
            &[("WWW-Authenticate", "Basic realm=\"oauth2\"")]
        } else {
            &[]
        };
        json_response(401, &body, challenge)
    } else {
        json_response(400, &body, &[])
    }
}

/// The token endpoint only accepts POST (RFC 6749 §3.2).
pub(crate) fn method_not_allowed() -> HttpResponse {
    let body = json!({ "error": "invalid_request", "error_description": "the token endpoint accepts POST only" });
    json_response(405, &body, &[("Allow", "POST")])
}

/// A successful token response (RFC 6749 §5.1), never cached.
pub(crate) fn token_success(body: &Value) -> HttpResponse {
    json_response(200, body, &[])
}

/// Why an API call's bearer token is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ApiRefusal {
    /// No bearer credentials: 401, challenge without error (RFC 6750 §3.1).
    Missing,
    /// A malformed Authorization header: 400 `invalid_request`.
    Malformed,
    /// Unknown, revoked or unlinked: 401 `invalid_token`.
    Invalid,
    /// Past its expiry: 401 `invalid_token`, tag `expired_access_token`.
    Expired,
    /// Valid, but lacking the endpoint's Required Scope: 403 `insufficient_scope`.
    MissingScope(Scope),
}

/// The `/2/` error response: RFC 6750 status and challenge, body in the reference service's
/// shape `{"error_summary": "<tag>/..", "error": {".tag": "<tag>", …}}`.
pub(crate) fn api_error(refusal: &ApiRefusal) -> HttpResponse {
    let (status, challenge, error) = match refusal {
        ApiRefusal::Missing => (
            401,
            "Bearer realm=\"api\"".to_owned(),
            json!({ ".tag": "invalid_access_token" }),
        ),
        ApiRefusal::Malformed => (
            400,
            "Bearer realm=\"api\", error=\"invalid_request\", error_description=\"malformed Authorization header\"".to_owned(),
            json!({ ".tag": "invalid_access_token" }),
        ),
        ApiRefusal::Invalid => (
            401,
            "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"the access token is invalid\"".to_owned(),
            json!({ ".tag": "invalid_access_token" }),
        ),
        ApiRefusal::Expired => (
            401,
            "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"the access token expired\"".to_owned(),
            json!({ ".tag": "expired_access_token" }),
        ),
        ApiRefusal::MissingScope(scope) => (
            403,
            format!("Bearer realm=\"api\", error=\"insufficient_scope\", scope=\"{scope}\""),
            json!({ ".tag": "missing_scope", "required_scope": scope.as_str() }),
        ),
    };
    let tag = error
        .get(".tag")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let body = json!({ "error_summary": format!("{tag}/.."), "error": error });
    json_response(status, &body, &[("WWW-Authenticate", &challenge)])
}

/// The revoke endpoint's answer: 200 with the JSON `null`.
pub(crate) fn revoked() -> HttpResponse {
    json_response(200, &Value::Null, &[])
}
