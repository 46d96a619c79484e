//! Cross-origin calls from single-page apps (the Fetch standard's CORS protocol): SPEC.md lets
//! public apps complete the flow with PKCE, so a page on the app's own origin must be able to
//! call the token endpoint, the revoke endpoint and the API.
//!
//! An app's web origins are those of its registered `http(s)` redirect URIs (a loopback one with
//! any port, as for redirects). A response that carries tokens or an API answer is shared with
//! the origins of the app it is for; a refusal, which carries no secret but tells the page what
//! to do next (refresh after a 401), with the origins of any registered app — any web origin
//! where clients may arrive unannounced, whose origins are not known in advance; so is a
//! registration's answer (RFC 7591: a browser client registers itself, and learns its own
//! credentials). The authorization endpoint and the pages never answer cross-origin: they are
//! navigated to, not fetched.
//! Credentials are bearer tokens and client secrets in the request, never cookies, so no
//! response allows credentials.

use crate::config::{App, Config};
use crate::prelude::*;
use crate::routes::{Endpoint, Method};
use crate::wire::http::HttpRequest;
use crate::wire::uri::{origin, HttpUri};

/// The request headers a page may send: the token request's and the API's (the official
/// Dropbox JavaScript SDK's among them, and a DPoP proof).
const ALLOWED_HEADERS: &str =
    "Authorization, Content-Type, DPoP, Dropbox-API-Arg, Dropbox-API-Path-Root, Dropbox-API-Select-User, Dropbox-API-Select-Admin";

/// Response headers a page may read besides the safelisted ones: the bearer challenge, when
/// to retry, and the DPoP nonce to put in the next proof.
const EXPOSED_HEADERS: &str = "WWW-Authenticate, Retry-After, DPoP-Nonce";

/// The `Origin` of a request to an endpoint answered cross-origin (the route table's
/// [`Endpoint::cors`]), when it names a web origin (a preflight's answer is [`preflight`]'s
/// alone).
pub(crate) fn request_origin(config: &Config, request: &HttpRequest) -> Option<Box<str>> {
    if Method::of(&request.method) == Method::Options {
        return None;
    }
    Endpoint::at(config, &request.path)?.cors()?;
    let value = request.single_header("origin")?;
    origin(value).map(|_| value.trim().into())
}

/// Whether `origin` is one of `app`'s web origins.
pub(crate) fn app_allows(app: &App, origin_value: &str) -> bool {
    let Some(presented) = origin(origin_value) else {
        return false;
    };
    app.redirect_uris.iter().any(|uri| {
        HttpUri::parse(uri.as_str()).is_some_and(|registered| registered.same_origin(&presented))
    })
}

/// Whether a page at `origin` may be some app's: a configured app has it among its web origins,
/// or clients may arrive unannounced (a registered or document client's origins are known only
/// once its record is read, and a browser client must be able to register and ask at all).
/// Walks every redirect URI: it runs only for preflights and refusals, and a configuration holds
/// a few per app.
pub(crate) fn any_app_allows(config: &Config, origin_value: &str) -> bool {
    config.unannounced().is_some() && origin(origin_value).is_some()
        || config.apps().any(|app| app_allows(app, origin_value))
}

/// What a preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Preflight {
    pub origin: Box<str>,
    pub methods: &'static str,
}

/// Decides a preflight to an endpoint that takes `methods`: allowed when the origin is a
/// registered app's and the method one the endpoint takes. (The app is not known yet: a
/// preflight carries no credentials.)
pub(crate) fn preflight(
    config: &Config,
    request: &HttpRequest,
    methods: &'static str,
) -> Option<Preflight> {
    let origin_value = request.single_header("origin")?.trim();
    let method = request
        .single_header("access-control-request-method")?
        .trim();
    let takes = methods.split(',').any(|m| m.trim() == method);
    (takes && any_app_allows(config, origin_value)).then(|| Preflight {
        origin: origin_value.into(),
        methods,
    })
}

/// The headers of an allowed preflight's answer.
pub(crate) fn preflight_headers(preflight: &Preflight) -> [(&'static str, &str); 6] {
    [
        ("Access-Control-Allow-Origin", &preflight.origin),
        ("Access-Control-Allow-Methods", preflight.methods),
        ("Access-Control-Allow-Headers", ALLOWED_HEADERS),
        ("Access-Control-Max-Age", "600"),
        ("Vary", "Origin"),
        ("Cache-Control", "no-store"),
    ]
}

/// The headers that share an answer with the page at `origin`.
pub(crate) fn response_headers(origin: &str) -> [(&'static str, &str); 3] {
    [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Expose-Headers", EXPOSED_HEADERS),
        ("Vary", "Origin"),
    ]
}
