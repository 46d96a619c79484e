//! Metadata, in the standards profile: the authorization server's (RFC 8414), served at the
//! issuer's well-known path, and that of the API this host protects (RFC 9728), which names
//! this server as its authorization server — documents computed from the configuration, served
//! to anyone, from any origin. They read no record and name no secret.

use crate::config::{CalledEndpoint, Config, Issuer};
use crate::dpop;
use crate::grant_type::GrantType;
use crate::jose::SigningAlg;
use crate::prelude::*;
use crate::routes::{
    AUTHORIZE, INTROSPECTION, PROTECTED_RESOURCE_METADATA, REGISTRATION, REVOCATION, TOKEN,
};
use crate::scope::{Scope, ScopeSet, OFFLINE_ACCESS};
use crate::wire::json::JsonObject;

/// Secrets in the Authorization header or the body; public clients with PKCE (or, to revoke,
/// their client_id) alone.
const CLIENT_AUTH: [&str; 3] = ["client_secret_basic", "client_secret_post", "none"];
const PRIVATE_KEY_JWT: &str = "private_key_jwt";

/// What a request to a metadata path gets (the route table refuses other methods).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Metadata {
    /// `GET`: the authorization server's document (RFC 8414).
    AuthorizationServer,
    /// `GET`: the document of the API served here (RFC 9728): the whole API's, or one
    /// endpoint's, as a resource of its own.
    ProtectedResource(Option<CalledEndpoint>),
    /// `OPTIONS`: a CORS preflight (a browser-based client sending headers of its own).
    Preflight,
}

/// The identifier of a resource served here: the whole API's (the issuer's origin), or an
/// endpoint's own URL (the origin followed by its path).
fn resource_here(issuer: &Issuer, endpoint: Option<&CalledEndpoint>) -> String {
    match endpoint {
        Some(endpoint) => format!("{}{}", issuer.resource(), endpoint.path),
        None => issuer.resource().to_owned(),
    }
}

/// The URL of the metadata of the resource a client called (the API endpoint, or the whole
/// API), for the `resource_metadata` of its challenges (RFC 9728 §5.1): the document whose
/// `resource` is the URL the client used, as §3.3 has the client check.
pub(crate) fn resource_metadata_url(issuer: &Issuer, endpoint: Option<&CalledEndpoint>) -> String {
    protected_resource_metadata_url(&resource_here(issuer, endpoint))
}

/// Where the metadata of the protected resource `resource` (canonical, see
/// [`Resource::canonical`](crate::Resource::canonical)) is served (RFC 9728 §3.1): the
/// well-known segment between its host and its path, without a trailing `/`.
///
/// ```
/// # use edgegrant::protected_resource_metadata_url;
/// assert_eq!(protected_resource_metadata_url("https://mcp.example/mcp"), "https://mcp.example/.well-known/oauth-protected-resource/mcp");
/// assert_eq!(protected_resource_metadata_url("https://api.example"), "https://api.example/.well-known/oauth-protected-resource");
/// ```
pub fn protected_resource_metadata_url(resource: &str) -> String {
    // After `scheme://` (the first `:`: a scheme holds none).
    let after_scheme = resource
        .find(':')
        .filter(|at| {
            resource
                .get(at + 1..)
                .is_some_and(|rest| rest.starts_with("//"))
        })
        .map_or(0, |at| at + 3);
    let path_at = resource
        .get(after_scheme..)
        .and_then(|rest| rest.find('/'))
        .map_or(resource.len(), |at| after_scheme + at);
    let (origin, path) = resource.split_at_checked(path_at).unwrap_or((resource, ""));
    format!(
        "{origin}{PROTECTED_RESOURCE_METADATA}{}",
        path.trim_end_matches('/')
    )
}

/// RFC 9728 §2: the API this host serves — its identifier (the origin), the authorization
/// server that protects it, the scopes its endpoints require, and how to present a token; or
/// the same for one of its endpoints, whose identifier is its own URL and whose scope is its
/// Required Scope.
pub(crate) fn resource_document(
    config: &Config,
    issuer: &Issuer,
    endpoint: Option<&CalledEndpoint>,
) -> String {
    // One call, one copy of the writer in the module.
    let scopes: Vec<&str> = match endpoint {
        Some(endpoint) => vec![endpoint.scope.as_str()],
        None => config.required_scopes().map(Scope::as_str).collect(),
    };
    protected_resource_metadata(
        &resource_here(issuer, endpoint),
        issuer,
        scopes,
        config.dpop().is_some(),
    )
}

/// RFC 9728 §2: the metadata of a protected resource — its identifier, the authorization
/// server that protects it (`issuer`), the scopes it requires (sorted, each once), how to
/// present a token, and with `dpop` the algorithms its DPoP proofs may be signed with (RFC 9449
/// §5.1). For the API served here, and for a resource server elsewhere (the package's
/// `edgegrant/resource`).
///
/// [`OFFLINE_ACCESS`](crate::OFFLINE_ACCESS) is never listed, even when `scopes` names it: a
/// refresh token is no requirement of a resource, and MCP (2026-07-28, Refresh Tokens) says a
/// protected resource should not list it; clients find it in the authorization server's
/// metadata.
///
/// ```
/// # use edgegrant::{protected_resource_metadata, Issuer};
/// let issuer = Issuer::new("https://auth.example").unwrap();
/// let document = protected_resource_metadata("https://mcp.example/mcp", &issuer, ["offline_access", "mcp:tools"], true);
/// assert!(document.contains("\"scopes_supported\":[\"mcp:tools\"]"));
/// assert!(document.contains("\"dpop_signing_alg_values_supported\":[\"ES256\",\"RS256\"]"));
/// ```
pub fn protected_resource_metadata<'s>(
    resource: &str,
    issuer: &Issuer,
    scopes: impl IntoIterator<Item = &'s str>,
    dpop: bool,
) -> String {
    // Sorted, each once, by insertion: a handful of names (a set type or a sort of its own
    // would cost the module kilobytes).
    let mut sorted: Vec<&str> = Vec::new();
    for scope in scopes.into_iter().filter(|scope| *scope != OFFLINE_ACCESS) {
        if let Err(at) = sorted.binary_search(&scope) {
            sorted.insert(at, scope);
        }
    }
    let json = JsonObject::new()
        .strings("authorization_servers", [issuer.as_str()])
        .strings("bearer_methods_supported", ["header"]);
    let json = match dpop {
        true => json.strings("dpop_signing_alg_values_supported", dpop::ALG_NAMES),
        false => json,
    };
    json.string("resource", resource)
        .strings("scopes_supported", sorted)
        .finish()
}

/// The metadata document (RFC 8414 §2), from the configuration: what a client needs to run the
/// code flow against this server without being told its endpoints. Keys in alphabetical order.
pub(crate) fn document(config: &Config, issuer: &Issuer) -> String {
    let origin = issuer.origin();
    // Every app's scopes, and the one any app may ask for a refresh token with.
    let scopes = config.apps().fold(
        ScopeSet::parse(OFFLINE_ACCESS).unwrap_or_default(),
        |all, app| all.union(&app.scopes()),
    );
    // And those a client nobody configured may be granted.
    let scopes = match config.unannounced() {
        Some(clients) => scopes.union(&clients.scopes),
        None => scopes,
    };
    let implicit = config.apps().any(|app| app.implicit_allowed);
    let with_implicit = |always: &'static [&'static str], implicit_too: &'static str| {
        always
            .iter()
            .copied()
            .chain(implicit.then_some(implicit_too))
    };
    // Clients that arrive unannounced may prove themselves with their keys (RFC 7523).
    let keys = config.unannounced().is_some();
    let methods = || {
        CLIENT_AUTH
            .into_iter()
            .chain(keys.then_some(PRIVATE_KEY_JWT))
    };
    let json = JsonObject::new().string("authorization_endpoint", &format!("{origin}{AUTHORIZE}"));
    // ID-JAG §7.2 (and MCP's enterprise-managed authorization): the identity assertion's
    // profile of the JWT-bearer grant — never which providers are trusted.
    let json = match config.identity_assertions() {
        Some(_) => json.strings("authorization_grant_profiles_supported", [ID_JAG_PROFILE]),
        None => json,
    };
    let json = json.boolean("authorization_response_iss_parameter_supported", true);
    // CIMD §5: a client whose client_id is a URL tries it only where this says so.
    let json = match config.documents() {
        Some(_) => json.boolean("client_id_metadata_document_supported", true),
        None => json,
    };
    let json = json
        // The profile with metadata takes S256 alone (OAuth 2.1).
        .strings("code_challenge_methods_supported", ["S256"]);
    // RFC 9449 §5.1: the algorithms proofs may be signed with, where proofs are read.
    let json = match config.dpop() {
        Some(_) => json.strings("dpop_signing_alg_values_supported", dpop::ALG_NAMES),
        None => json,
    };
    let json = json
        .strings(
            "grant_types_supported",
            GrantType::ALL
                .into_iter()
                .filter(|grant| config.offers(*grant))
                .map(GrantType::name)
                .chain(implicit.then_some("implicit")),
        )
        .string(
            "introspection_endpoint",
            &format!("{origin}{INTROSPECTION}"),
        )
        // Only a confidential client, with its secret (or its keys), may introspect.
        .strings(
            "introspection_endpoint_auth_methods_supported",
            ["client_secret_basic", "client_secret_post"]
                .into_iter()
                .chain(keys.then_some(PRIVATE_KEY_JWT)),
        );
    let json = signing_algs(json, "introspection", keys)
        .string("issuer", issuer.as_str())
        .strings(
            "response_modes_supported",
            with_implicit(&["query"], "fragment"),
        )
        .strings(
            "response_types_supported",
            with_implicit(&["code"], "token"),
        )
        .optional_string(
            "registration_endpoint",
            config
                .registers_clients()
                .then(|| format!("{origin}{REGISTRATION}"))
                .as_deref(),
        )
        .string("revocation_endpoint", &format!("{origin}{REVOCATION}"))
        .strings("revocation_endpoint_auth_methods_supported", methods());
    let json = signing_algs(json, "revocation", keys)
        .strings("scopes_supported", scopes.iter())
        .string("token_endpoint", &format!("{origin}{TOKEN}"))
        .strings("token_endpoint_auth_methods_supported", methods());
    signing_algs(json, "token", keys).finish()
}

/// The profile of the JWT-bearer grant that identity assertions are (ID-JAG §7.2).
const ID_JAG_PROFILE: &str = "urn:ietf:params:oauth:grant-profile:id-jag";

/// RFC 8414 §2: the algorithms client assertions may be signed with, beside every list of
/// methods that names `private_key_jwt` (it MUST be there then).
fn signing_algs(json: JsonObject, endpoint: &str, keys: bool) -> JsonObject {
    if keys {
        json.strings(
            &format!("{endpoint}_endpoint_auth_signing_alg_values_supported"),
            [SigningAlg::Es256.name(), SigningAlg::Rs256.name()],
        )
    } else {
        json
    }
}
