//! Client credentials at the token endpoint: HTTP Basic or body parameters (RFC 6749 §2.3.1).

use crate::prelude::*;
use base64ct::{Base64UrlUnpadded, Encoding as _};

use super::form::{decode_component, Params, Repeated};
use super::http::HttpRequest;
use crate::credentials::ClientSecret;
use crate::jose::{self, Assertion};

/// Basic credentials are standard base64; some clients drop the padding, which we tolerate: any
/// number of `=` up to the canonical padding, none past it (and canonical trailing bits, as
/// base64ct requires). Decoded by the URL-safe decoder the credentials use, its two letters
/// swapped in (and refused where they stand in the text: they are not standard base64), so
/// that the wasm module carries one decoder, not two.
fn decode_basic(encoded: &str) -> Option<Vec<u8>> {
    let unpadded = encoded.trim_end_matches('=');
    let padding = encoded.len() - unpadded.len();
    if padding > (4 - unpadded.len() % 4) % 4 || unpadded.contains(['-', '_']) {
        return None;
    }
    let url_safe = unpadded.replace('+', "-").replace('/', "_");
    Base64UrlUnpadded::decode_vec(&url_safe).ok()
}

/// How the client presented itself.
pub(crate) struct Presented {
    /// The `client_id` (Basic user name, or body parameter).
    pub client_id: String,
    /// The secret, if any (Basic password, or `client_secret`).
    pub secret: Option<ClientSecret>,
    /// Whether HTTP Basic was used (failures then carry `WWW-Authenticate: Basic`).
    pub via_basic: bool,
    /// A client assertion (RFC 7523 §2.2: `client_assertion` with the JWT bearer type), read;
    /// `Err(())` for one that is not a client assertion at all.
    pub assertion: Option<Result<Box<Assertion>, ()>>,
}

/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Why the presented credentials cannot even be read.
pub(crate) enum CredentialError {
    /// No `client_id` anywhere: no client authentication (→ `invalid_client`).
    Missing,
    /// An `Authorization: Basic` header that does not decode (→ `invalid_client`).
    MalformedBasic,
    /// Basic and `client_secret` both, or two `Authorization` headers (→ `invalid_request`).
    MultipleMethods,
    /// Basic names one client and the body another (→ `invalid_request`).
    ConflictingClientId,
    /// `client_secret` without `client_id` (→ `invalid_request`).
    SecretWithoutId,
    /// An `Authorization` scheme other than Basic (→ `invalid_request`).
    UnsupportedScheme,
    /// A credential parameter sent twice (→ `invalid_request`).
    Repeated(&'static str),
}

impl From<Repeated> for CredentialError {
    fn from(r: Repeated) -> Self {
        CredentialError::Repeated(r.0)
    }
}

/// Reads the client credentials; never both methods at once.
pub(crate) fn presented(
    request: &HttpRequest,
    params: &Params,
    assertions: bool,
) -> Result<Presented, CredentialError> {
    let body_id = params.one("client_id")?;
    let body_secret = params.one("client_secret")?;
    // Where no client can hold keys (no client arrives unannounced), the assertion parameters
    // are unknown parameters, ignored as any other (RFC 6749 §3.2).
    let assertion = if assertions {
        params.one("client_assertion")?
    } else {
        None
    };
    if let Some(text) = assertion {
        let assertion_type = params.one("client_assertion_type")?;
        // A third way to authenticate, never beside another (RFC 6749 §2.3).
        if body_secret.is_some() || request.header_values("authorization").next().is_some() {
            return Err(CredentialError::MultipleMethods);
        }
        let assertion = (assertion_type == Some(JWT_BEARER))
            .then(|| jose::assertion(text))
            .flatten()
            .map(Box::new);
        // The client is named by `client_id`, or else by the assertion's subject (§3, item 2).
        let client_id = match (body_id, &assertion) {
            (Some(id), _) => id.to_owned(),
            (None, Some(assertion)) => assertion.claims.sub.clone(),
            (None, None) => return Err(CredentialError::Missing),
        };
        return Ok(Presented {
            client_id,
            secret: None,
            via_basic: false,
            assertion: Some(assertion.ok_or(())),
        });
    }
    let mut authorizations = request.header_values("authorization");
    let authorization = authorizations.next();
    if authorizations.next().is_some() {
        return Err(CredentialError::MultipleMethods);
    }
    if let Some(header) = authorization {
        let (id, secret) = basic(header)?;
        if body_secret.is_some() {
            return Err(CredentialError::MultipleMethods);
        }
        if body_id.is_some_and(|b| b != id) {
            return Err(CredentialError::ConflictingClientId);
        }
        // An empty password is no secret, as an empty `client_secret` is (RFC 6749 §3.1):
        // a public client may name itself over Basic and still prove itself with PKCE.
        return Ok(Presented {
            client_id: id,
            secret: (!secret.is_empty()).then(|| ClientSecret::presented(secret)),
            via_basic: true,
            assertion: None,
        });
    }
    match (body_id, body_secret) {
        (Some(id), secret) => Ok(Presented {
            client_id: id.to_owned(),
            secret: secret.map(ClientSecret::presented),
            via_basic: false,
            assertion: None,
        }),
        (None, Some(_)) => Err(CredentialError::SecretWithoutId),
        (None, None) => Err(CredentialError::Missing),
    }
}

/// Decodes `Basic <base64(id:secret)>`, both parts form-urldecoded (RFC 6749 §2.3.1).
fn basic(header: &str) -> Result<(String, String), CredentialError> {
    let header = header.trim();
    let (scheme, encoded) = header.split_once(' ').unwrap_or((header, ""));
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(CredentialError::UnsupportedScheme);
    }
    let decoded = decode_basic(encoded.trim_start()).ok_or(CredentialError::MalformedBasic)?;
    let text = String::from_utf8(decoded).map_err(|_| CredentialError::MalformedBasic)?;
    let (id, secret) = text
        .split_once(':')
        .ok_or(CredentialError::MalformedBasic)?;
    let id = decode_component(id).ok_or(CredentialError::MalformedBasic)?;
    let secret = decode_component(secret).ok_or(CredentialError::MalformedBasic)?;
    if id.is_empty() {
        return Err(CredentialError::MalformedBasic);
    }
    Ok((id, secret))
}
