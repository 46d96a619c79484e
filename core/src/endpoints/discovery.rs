//! Metadata, in the standards profile: the authorization server's (RFC 8414), served at the
//! issuer's well-known path, and that of the API this host protects (RFC 9728), which names
//! this server as its authorization server — documents computed from the configuration, served
//! to anyone, from any origin. They read no record and name no secret.

use crate::config::{Config, Issuer};
use crate::routes::{
    Document, AUTHORIZE, INTROSPECTION, PROTECTED_RESOURCE_METADATA, REVOCATION, TOKEN,
};
use crate::scope::ScopeSet;
use crate::wire::json::JsonObject;

/// Secrets in the Authorization header or the body; public clients with PKCE (or, to revoke,
/// their client_id) alone.
const CLIENT_AUTH: [&str; 3] = ["client_secret_basic", "client_secret_post", "none"];

/// What a request to a metadata path gets (the route table refuses other methods).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Metadata {
    /// `GET`: the document.
    Document(Document),
    /// `OPTIONS`: a CORS preflight (a browser-based client sending headers of its own).
    Preflight,
}

/// The URL of the API's metadata, for the `resource_metadata` of its challenges (RFC 9728 §5.1).
pub(crate) fn resource_metadata_url(issuer: &Issuer) -> String {
    format!("{}{PROTECTED_RESOURCE_METADATA}", issuer.origin())
}

/// RFC 9728 §2: the API this host serves — its identifier (the origin), the authorization
/// server that protects it, the scopes its endpoints require, and how to present a token.
pub(crate) fn resource_document(config: &Config, issuer: &Issuer) -> String {
    // A scope set: sorted, each once, with the code the core has for scopes anyway.
    let scopes = ScopeSet::from_scopes(config.required_scopes().cloned());
    JsonObject::new()
        .strings("authorization_servers", [issuer.as_str()])
        .strings("bearer_methods_supported", ["header"])
        .string("resource", issuer.resource())
        .strings("scopes_supported", scopes.iter())
        .finish()
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
        .string("authorization_endpoint", &format!("{origin}{AUTHORIZE}"))
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
            &format!("{origin}{INTROSPECTION}"),
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
        .string("revocation_endpoint", &format!("{origin}{REVOCATION}"))
        .strings("revocation_endpoint_auth_methods_supported", CLIENT_AUTH)
        .strings("scopes_supported", scopes.iter())
        .string("token_endpoint", &format!("{origin}{TOKEN}"))
        .strings("token_endpoint_auth_methods_supported", CLIENT_AUTH)
        .finish()
}
