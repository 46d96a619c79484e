//! Authorization server metadata (RFC 8414), in the standards profile: a document computed from
//! the configuration, served at the issuer's well-known path to anyone, from any origin. It
//! reads no record and names no secret.

use crate::config::{Config, Issuer};
use crate::ctx::Ending;
use crate::endpoints::token_admin::{INTROSPECTION_PATH, REVOCATION_PATH};
use crate::scope::ScopeSet;
use crate::wire::http::HttpRequest;
use crate::wire::json::JsonObject;

/// Secrets in the Authorization header or the body; public clients with PKCE (or, to revoke,
/// their client_id) alone.
const CLIENT_AUTH: [&str; 3] = ["client_secret_basic", "client_secret_post", "none"];

/// What a request to the metadata path gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Metadata {
    /// `GET`: the document.
    Document,
    /// `OPTIONS`: a CORS preflight (a browser-based client sending headers of its own).
    Preflight,
    /// Any other method: 405.
    WrongMethod,
}

/// The ending of a request to the metadata path; `None` for any other path (or the reference
/// profile, which serves no metadata).
pub(crate) fn route(config: &Config, request: &HttpRequest) -> Option<Ending> {
    let issuer = config.issuer()?;
    let path = request.path.strip_prefix(WELL_KNOWN)?;
    if !is_issuer_path(issuer, path) {
        return None;
    }
    Some(Ending::Metadata(match request.method.as_str() {
        "GET" => Metadata::Document,
        "OPTIONS" => Metadata::Preflight,
        _ => Metadata::WrongMethod,
    }))
}

const WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";

/// Whether `path` (after the well-known prefix) is the issuer's own path, as RFC 8414 §3.1
/// inserts it: without a trailing `/`.
fn is_issuer_path(issuer: &Issuer, path: &str) -> bool {
    issuer.metadata_path().strip_prefix(WELL_KNOWN) == Some(path)
}

/// The metadata document (RFC 8414 §2), from the configuration: what a client needs to run the
/// code flow against this server without being told its endpoints. Keys in alphabetical order.
pub(crate) fn document(config: &Config, issuer: &Issuer) -> String {
    let origin = issuer.origin();
    let scopes = config
        .apps()
        .fold(ScopeSet::default(), |all, app| all.union(&app.scopes()));
    let implicit = config.apps().any(|app| app.implicit_allowed);
    let with_implicit = |always: &'static [&'static str], implicit_too: &'static str| {
        always
            .iter()
            .copied()
            .chain(implicit.then_some(implicit_too))
    };
    let challenge_methods: &[&str] = if config.policy().require_s256 {
        &["S256"]
    } else {
        &["S256", "plain"]
    };
    JsonObject::new()
        .string(
            "authorization_endpoint",
            &format!("{origin}/oauth2/authorize"),
        )
        .boolean("authorization_response_iss_parameter_supported", true)
        .strings(
            "code_challenge_methods_supported",
            challenge_methods.iter().copied(),
        )
        .strings(
            "grant_types_supported",
            with_implicit(&["authorization_code", "refresh_token"], "implicit"),
        )
        .string(
            "introspection_endpoint",
            &format!("{origin}{INTROSPECTION_PATH}"),
        )
        // Only a confidential client, with its secret, may introspect.
        .strings(
            "introspection_endpoint_auth_methods_supported",
            ["client_secret_basic", "client_secret_post"],
        )
        .string("issuer", issuer.as_str())
        .strings(
            "response_modes_supported",
            with_implicit(&["query"], "fragment"),
        )
        .strings(
            "response_types_supported",
            with_implicit(&["code"], "token"),
        )
        .string("revocation_endpoint", &format!("{origin}{REVOCATION_PATH}"))
        .strings("revocation_endpoint_auth_methods_supported", CLIENT_AUTH)
        .strings("scopes_supported", scopes.iter())
        .string("token_endpoint", &format!("{origin}/oauth2/token"))
        .strings("token_endpoint_auth_methods_supported", CLIENT_AUTH)
        .finish()
}
