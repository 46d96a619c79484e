//! The route table: every endpoint the core answers, found by path, with the methods it takes,
//! the methods it takes cross-origin, the channel a refusal of the request as a whole goes by,
//! and where the partition of its records is named. Request parsing, [`partition_of`], CORS
//! preflights and the metadata documents all read it; no other module knows a path or compares
//! a method.

use crate::config::{Config, Issuer};
use crate::credentials::AccessToken;
use crate::grant_type::{GrantType, RoutedBy};
use crate::ids::AppKey;
use crate::partition::Partition;
use crate::step::Input;
use crate::wire::bearer::access_token;
use crate::wire::client_auth::presented;
use crate::wire::form::Params;
use crate::wire::http::HttpRequest;

/// The authorization endpoint (RFC 6749 §3.1): the consent page, and its form.
pub(crate) const AUTHORIZE: &str = "/oauth2/authorize";
/// The token endpoint (RFC 6749 §3.2).
pub(crate) const TOKEN: &str = "/oauth2/token";
/// The reference service's revocation: the bearer token revokes its own grant.
pub(crate) const REVOKE: &str = "/2/auth/token/revoke";
/// RFC 7009 revocation (standards profile).
pub(crate) const REVOCATION: &str = "/oauth2/revoke";
/// RFC 7662 introspection (standards profile).
pub(crate) const INTROSPECTION: &str = "/oauth2/introspect";
/// RFC 7591 dynamic client registration (standards profile, where the configuration turns it on).
pub(crate) const REGISTRATION: &str = "/oauth2/register";
/// RFC 8414 §3: the authorization server's metadata, followed by the issuer's path if it has one.
pub(crate) const AUTHORIZATION_SERVER_METADATA: &str = "/.well-known/oauth-authorization-server";
/// RFC 9728 §3.1: the API's metadata (its resource identifier is this host's origin, which has
/// no path); followed by an API endpoint's path, that endpoint's, as a resource of its own.
pub(crate) const PROTECTED_RESOURCE_METADATA: &str = "/.well-known/oauth-protected-resource";

/// An HTTP method, compared one way everywhere: as the Fetch standard normalizes it (the
/// methods it names match in any case; any other only as sent, so it is none of these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Other,
}

impl Method {
    /// The method a request names.
    pub(crate) fn of(text: &str) -> Method {
        const NAMED: [(&str, Method); 6] = [
            ("GET", Method::Get),
            ("HEAD", Method::Head),
            ("POST", Method::Post),
            ("PUT", Method::Put),
            ("DELETE", Method::Delete),
            ("OPTIONS", Method::Options),
        ];
        NAMED
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(text))
            .map_or(Method::Other, |(_, method)| *method)
    }
}

/// Which metadata document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Document {
    /// RFC 8414: this authorization server.
    AuthorizationServer,
    /// RFC 9728: the API served beside it, protected by it: the whole API (at the well-known
    /// path), or one endpoint (the well-known path followed by the endpoint's).
    ProtectedResource,
}

/// An endpoint the core answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Authorize,
    Token,
    /// The reference service's `/2/auth/token/revoke`.
    Revoke,
    /// RFC 7009 (standards profile).
    Revocation,
    /// RFC 7662 (standards profile).
    Introspection,
    /// RFC 7591 (standards profile, registration on).
    Registration,
    /// RFC 7592: a registered client's configuration, `/oauth2/register/<client_id>`.
    ClientConfiguration,
    /// RFC 8414 or RFC 9728 (standards profile).
    Metadata(Document),
    /// One of the host's API endpoints, with its Required Scope in the configuration.
    Api,
}

/// The channel a refusal of a request as a whole (a wrong method, a body over the limit) goes
/// by: what the endpoint's callers can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Channel {
    /// An error page: the authorization endpoint is navigated to by a browser.
    Page,
    /// An RFC 6749 §5.2 JSON error: the endpoints that authenticate a client.
    Token,
    /// An RFC 6750 challenge: the endpoints that take a bearer token.
    Bearer,
    /// A bare status.
    Plain,
}

/// Where the partition of a request's records is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Locator {
    /// The signed-in user's account.
    SignedInUser,
    /// The credential a token request presents: its code, or its refresh token.
    GrantCredential,
    /// The `token` parameter (revocation, introspection).
    TokenParameter,
    /// The bearer token in the Authorization header.
    BearerToken,
    /// The registered client named in the path (its app's own partition).
    ClientInPath,
    /// Nowhere: the request reads no record.
    Nothing,
}

impl Endpoint {
    /// The endpoint served at `path`, if any: the standards profile's only with an issuer, the
    /// API's as the configuration names them.
    pub(crate) fn at(config: &Config, path: &str) -> Option<Endpoint> {
        let endpoint = match path {
            AUTHORIZE => Endpoint::Authorize,
            TOKEN => Endpoint::Token,
            REVOKE => Endpoint::Revoke,
            _ => match config.issuer() {
                Some(_) if path == REVOCATION => Endpoint::Revocation,
                Some(_) if path == INTROSPECTION => Endpoint::Introspection,
                Some(_) if path == REGISTRATION && config.registers_clients() => {
                    Endpoint::Registration
                }
                Some(_) if client_in_path(path).is_some() && config.registers_clients() => {
                    Endpoint::ClientConfiguration
                }
                Some(_) if endpoint_of_metadata(config, path).is_some() => {
                    Endpoint::Metadata(Document::ProtectedResource)
                }
                Some(issuer) if is_issuer_metadata(issuer, path) => {
                    Endpoint::Metadata(Document::AuthorizationServer)
                }
                _ if config.required_scope(path).is_some() => Endpoint::Api,
                _ => return None,
            },
        };
        Some(endpoint)
    }

    /// Whether it takes `method` (an `OPTIONS` preflight is answered apart, by [`cors`](Self::cors)).
    pub(crate) fn takes(self, method: Method) -> bool {
        match self {
            Endpoint::Authorize => matches!(method, Method::Get | Method::Post),
            Endpoint::Token
            | Endpoint::Revoke
            | Endpoint::Revocation
            | Endpoint::Introspection
            | Endpoint::Registration => method == Method::Post,
            Endpoint::Metadata(_) => matches!(method, Method::Get | Method::Options),
            Endpoint::ClientConfiguration => {
                matches!(method, Method::Get | Method::Put | Method::Delete)
            }
            // The host's handler decides which methods its API takes.
            Endpoint::Api => true,
        }
    }

    /// What a `405`'s `Allow` header lists.
    pub(crate) fn allow(self) -> &'static str {
        match self {
            Endpoint::Authorize => "GET, POST",
            Endpoint::Metadata(_) => "GET, OPTIONS",
            Endpoint::ClientConfiguration => "GET, PUT, DELETE",
            _ => "POST",
        }
    }

    /// The methods a page on another origin may use (answered in a preflight), or `None`: the
    /// endpoint is not fetched cross-origin (the authorization endpoint is navigated to; the
    /// metadata answers its own preflights, to anyone; introspection is server to server, and
    /// so is a registration's management, RFC 7592).
    pub(crate) fn cors(self) -> Option<&'static str> {
        match self {
            Endpoint::Token | Endpoint::Revoke | Endpoint::Revocation | Endpoint::Registration => {
                Some("POST")
            }
            Endpoint::Api => Some("GET, POST"),
            Endpoint::Authorize
            | Endpoint::Introspection
            | Endpoint::ClientConfiguration
            | Endpoint::Metadata(_) => None,
        }
    }

    /// The channel a refusal of the request as a whole goes by.
    pub(crate) fn channel(self) -> Channel {
        match self {
            Endpoint::Authorize => Channel::Page,
            Endpoint::Token
            | Endpoint::Revocation
            | Endpoint::Introspection
            | Endpoint::Registration
            | Endpoint::ClientConfiguration => Channel::Token,
            Endpoint::Revoke | Endpoint::Api => Channel::Bearer,
            Endpoint::Metadata(_) => Channel::Plain,
        }
    }

    /// Where the partition of its records is named.
    pub(crate) fn locator(self) -> Locator {
        match self {
            Endpoint::Authorize => Locator::SignedInUser,
            Endpoint::Token => Locator::GrantCredential,
            Endpoint::Revocation | Endpoint::Introspection => Locator::TokenParameter,
            Endpoint::Revoke | Endpoint::Api => Locator::BearerToken,
            Endpoint::ClientConfiguration => Locator::ClientInPath,
            // A registration's record is in a partition of its own, named by the key it mints.
            Endpoint::Registration | Endpoint::Metadata(_) => Locator::Nothing,
        }
    }
}

/// The client a path under the registration endpoint names (RFC 7592 §1: its
/// `registration_client_uri`).
pub(crate) fn client_in_path(path: &str) -> Option<&str> {
    path.strip_prefix(REGISTRATION)?
        .strip_prefix('/')
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// Which resource's metadata (RFC 9728 §3.1) is at `path`: `Some(None)` the whole API's,
/// `Some(Some(endpoint))` that API endpoint's.
pub(crate) fn endpoint_of_metadata<'c>(config: &'c Config, path: &str) -> Option<Option<&'c str>> {
    match path.strip_prefix(PROTECTED_RESOURCE_METADATA)? {
        "" => Some(None),
        suffix => config.api_endpoint_of_metadata(suffix).map(Some),
    }
}

/// Whether `path` is the issuer's metadata path (RFC 8414 §3.1: the well-known prefix, then the
/// issuer's own path without a trailing `/`).
fn is_issuer_metadata(issuer: &Issuer, path: &str) -> bool {
    path.strip_prefix(AUTHORIZATION_SERVER_METADATA) == Some(issuer.path())
}

/// The partition a request is routed to: where every record it reads and writes lives, but for
/// the counts of failed attempts (of an [`Input::Attempts`] with one attempter, that count's
/// partition). A pure function of the input, cheap (two HMACs to open a credential's route; no
/// secret digested, no client authenticated): a stateless front routes by it and the
/// partition's owner runs the [`Request`](crate::Request).
///
/// `None`: the request is answered without records of any account (a refusal decided from the
/// request alone, a sign-in page, a preflight), and may run anywhere. A credential whose route
/// is garbled, forged or another key's is `None` too: the core refuses it without reading, so a
/// front that runs `None` requests itself reaches no partition for it.
///
/// It equals [`Request::partition`](crate::Request::partition) of the same input whenever that
/// is `Some`.
///
/// ```
/// # use edgegrant::*;
/// # let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
/// # let config = Config::new(ConfigDocument { server_key: Some(key), ..Default::default() }).unwrap();
/// let unlink = Input::Unlink { app: AppKey::new("demo-app").unwrap(), account_id: AccountId::new("dbid:alice").unwrap(), by: Unlinker::User };
/// let alice = partition_of(&config, &unlink).unwrap();
/// assert_eq!(alice, Partition::of_account(config.server_key(), &AccountId::new("dbid:alice").unwrap()));
///
/// // A token this server never minted reaches no partition (it is refused without a read).
/// let mut call = HttpRequest::new("POST", "/2/auth/token/revoke", "");
/// let forged = format!("sl.{}.{}", "A".repeat(32), "s".repeat(43));
/// call.headers.push(("Authorization".into(), format!("Bearer {forged}")));
/// assert_eq!(partition_of(&config, &Input::Http { request: call, user: None }), None);
/// ```
pub fn partition_of(config: &Config, input: &Input) -> Option<Partition> {
    let key = config.server_key();
    let (request, user) = match input {
        Input::Unlink { account_id, .. } => return Some(Partition::of_account(key, account_id)),
        Input::Attempts { attempters, .. } => {
            return match attempters.as_slice() {
                [one] => Some(one.partition(key)),
                _ => None,
            }
        }
        Input::Http { request, user } => (request, user),
    };
    let credential = match Endpoint::at(config, &request.path)?.locator() {
        Locator::SignedInUser => {
            return user
                .as_ref()
                .map(|u| Partition::of_account(key, &u.account_id))
        }
        Locator::GrantCredential => {
            let params = token_params(config, request);
            let grant = GrantType::from_name(params.one("grant_type").ok()??)?;
            return match grant.routed_by() {
                RoutedBy::Credential(name) => {
                    // An access token (a token exchange's subject) routes as a bearer does.
                    let credential = params.one(name).ok()??;
                    let credential = credential
                        .strip_prefix(AccessToken::PREFIX)
                        .unwrap_or(credential);
                    Partition::of_credential(key, credential)
                }
                RoutedBy::Assertion(name) => {
                    // The account the provider's subject is: checked again when decided.
                    let found = config.identify(params.one(name).ok()??)?;
                    Some(Partition::of_account(key, &found.account?.account_id))
                }
                RoutedBy::Client => {
                    let assertions = config.unannounced().is_some();
                    let client = presented(request, &params, assertions).ok()?;
                    let app = AppKey::new(client.client_id).ok()?;
                    Some(Partition::of_app(key, &app))
                }
            };
        }
        Locator::TokenParameter => {
            let params = token_params(config, request);
            let token = params.one("token").ok()??;
            return Partition::of_credential(
                key,
                token.strip_prefix(AccessToken::PREFIX).unwrap_or(token),
            );
        }
        // Under either scheme where DPoP proofs are read.
        Locator::BearerToken => access_token(request, config.dpop().is_some())
            .ok()?
            .1
            .strip_prefix(AccessToken::PREFIX)?,
        Locator::ClientInPath => {
            let app = AppKey::new(client_in_path(&request.path)?).ok()?;
            return Some(Partition::of_app(key, &app));
        }
        Locator::Nothing => return None,
    };
    Partition::of_credential(key, credential)
}

/// The parameters of a request to the token endpoint or one sharing its rules (revocation,
/// introspection): the body, or the query when the body is empty and the policy allows it.
/// Only read for routing: the endpoint itself refuses what it must.
/// The client a request names, as it names it — the authorization request's `client_id`, the
/// client credentials of a token, revocation or introspection request (authenticated or not),
/// the client in a registration's path — if it is a well-formed app key: for a host's log of
/// refusals (it is never a secret). `None` for a bearer request (a token names its app only
/// once its record is read), and for a path no endpoint serves.
///
/// ```
/// # use edgegrant::*;
/// # let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
/// # let config = Config::new(ConfigDocument { server_key: Some(key), ..Default::default() }).unwrap();
/// let request = HttpRequest::new("GET", "/oauth2/authorize", "client_id=demo-app&response_type=code");
/// assert_eq!(named_client(&config, &request).unwrap().as_str(), "demo-app");
/// ```
pub fn named_client(config: &Config, request: &HttpRequest) -> Option<AppKey> {
    let named = |params: Params<'_>| {
        let id = params.one("client_id").ok()??;
        AppKey::new(id).ok()
    };
    match Endpoint::at(config, &request.path)? {
        // The consent form carries the request in its body.
        Endpoint::Authorize => named(Params::parse(request.query.as_bytes()))
            .or_else(|| named(Params::parse(&request.body))),
        Endpoint::Token | Endpoint::Revocation | Endpoint::Introspection => {
            let params = token_params(config, request);
            let client = presented(request, &params, config.unannounced().is_some()).ok()?;
            AppKey::new(client.client_id).ok()
        }
        Endpoint::ClientConfiguration => AppKey::new(client_in_path(&request.path)?).ok(),
        _ => None,
    }
}

fn token_params<'r>(config: &Config, request: &'r HttpRequest) -> Params<'r> {
    if request.body.is_empty() && config.policy().token_parameters_in_query {
        Params::parse(request.query.as_bytes())
    } else {
        Params::parse(&request.body)
    }
}
