//! Every ending, written out as a complete HTTP response — the one place that maps a
//! [`Refusal`] to the wire (RFC 6749 §4.1.2.1 and §5.2, RFC 6750 §3, the reference service's
//! JSON error body) and fills in the pages.

use crate::prelude::*;
use alloc::borrow::Cow;

use crate::config::{CalledEndpoint, Config, Issuer};
use crate::cors;
use crate::dpop;
use crate::ending::{ConsentPage, Ending, Introspected, Registered, Revocation, TokenBody, Via};
use crate::endpoints::discovery::{self, Metadata};
use crate::endpoints::token::ACCESS_TOKEN_TYPE;
use crate::grant_type::GrantType;
use crate::ids::Subject;
use crate::jose::ClientKey;
use crate::pages::{lookup, page_data};
use crate::records::{ClientKeys, Provenance, TokenAccessType};
use crate::refusal::{DpopFault, Refusal};
use crate::routes::{Channel, Endpoint, REGISTRATION};
use crate::scope::{Scope, OFFLINE_ACCESS};
use crate::step::{AuditEvent, Authorized, Outcome, Reply, Step};
use crate::wire::html::{Template, Value as Shown};
use crate::wire::http::HttpResponse;
use crate::wire::json::JsonObject;
use crate::wire::uri::HttpUri;

impl Refusal {
    /// The RFC 6749 / 6750 error code this reason is answered with.
    pub fn error_code(&self) -> &'static str {
        use Refusal::*;
        match self {
            UnsupportedResponseType => "unsupported_response_type",
            ImplicitNotAllowed | GrantNotAllowed => "unauthorized_client",
            MalformedScope | ScopeNotEnabled | ScopeWidened => "invalid_scope",
            AccessDenied => "access_denied",
            UnsupportedGrantType => "unsupported_grant_type",
            ClientAuthenticationMissing
            | MalformedBasic
            | ClientAuthenticationFailed
            | ProofMissing
            | SecretRequired
            | ConfidentialClientRequired
            | ClientDocument(_)
            | ClientKeys(_) => "invalid_client",
            UnknownCode
            | CodeOfAnotherApp
            | RedirectUriMismatch
            | VerifierMissing
            | VerifierMismatch
            | VerifierWithoutChallenge
            | CodeReused
            | CodeExpired
            | CodeUnlinked
            | UnknownRefreshToken
            | RefreshTokenRevoked
            | RefreshTokenIdle
            | RefreshTokenUnlinked
            | RefreshTokenReused
            | RetryDiffers
            | RefreshTokenOfAnotherApp
            | AssertionInvalid
            | AssertionReused
            | AssertionSubjectUnknown
            | ProviderKeys(_)
            | GrantBoundToAnotherKey
            | TokenOfAnotherApp => "invalid_grant",
            DpopProofInvalid(_) | DpopProofRequired => "invalid_dpop_proof",
            DpopNonceRequired => "use_dpop_nonce",
            UnknownAccessToken
            | AccessTokenExpired
            | AccessTokenRevoked
            | AccessTokenUnlinked
            | AppRemoved
            | TokenBoundToAnotherKey
            | TokenForAnotherResource => "invalid_token",
            InvalidTarget => "invalid_target",
            InvalidRedirectUri(_) => "invalid_redirect_uri",
            InvalidClientMetadata(_) => "invalid_client_metadata",
            InitialAccessTokenInvalid | RegistrationTokenInvalid => "invalid_token",
            MissingScope(_) => "insufficient_scope",
            Defect(_) => "server_error",
            // Whatever waiting cures (the one list: `Refusal::retry_after`).
            TooManyAttempts(_)
            | TooManyRegistrations(_)
            | Contention
            | StorageUnavailable
            | StorageFault(_)
            | RetryNotYetVisible => "temporarily_unavailable",
            NotFound => "not_found",
            // No catch-all: a new refusal is mapped here on purpose, or the build fails.
            TooLarge
            | BodyTooLarge(_)
            | MethodNotAllowed
            | MalformedAttempter
            | CrossOriginRefused
            | Repeated(_)
            | ClientIdMissing
            | UnknownClient
            | RedirectUriNotRegistered
            | RedirectUriRequired
            | ResponseTypeMissing
            | ImplicitWithoutRedirectUri
            | ImplicitWithChallenge
            | InvalidTokenAccessType
            | OfflineRequiresCode
            | OfflineAccessWithOnline
            | ChallengeMethodWithoutChallenge
            | PkceRequired
            | UnsupportedChallengeMethod
            | S256Required
            | MalformedChallenge
            | CrossSiteConsent
            | IncompleteConsentForm
            | NotAForm
            | ParametersInQuery
            | ParametersSplit
            | GrantTypeMissing
            | MultipleClientAuthentications
            | ConflictingClientId
            | SecretWithoutClientId
            | UnsupportedAuthenticationScheme
            | CodeMissing
            | MalformedVerifier
            | RefreshTokenMissing
            | SubjectTokenMissing
            | UnsupportedTokenType
            | SubjectTokenInvalid
            | ActorTokenInvalid
            | AssertionMissing
            | BearerMissing
            | MalformedBearer
            | DpopJktMalformed
            | TokenMissing => "invalid_request",
        }
    }

    /// The sentence sent as `error_description`.
    pub fn description(&self) -> Cow<'static, str> {
        use Refusal::*;
        Cow::Borrowed(match self {
            Repeated(name) => return Cow::Owned(format!("{name} is repeated")),
            InvalidRedirectUri(why) | InvalidClientMetadata(why) => return Cow::Owned(why.clone()),
            ClientDocument(unusable) | ClientKeys(unusable) | ProviderKeys(unusable) => {
                let what = match self {
                    ClientDocument(_) => "the client's metadata document",
                    ClientKeys(_) => "the client's key set (its jwks_uri)",
                    _ => "the identity provider's key set",
                };
                return Cow::Owned(unusable.fault.described(what, &unusable.url));
            }
            InitialAccessTokenInvalid => "registration takes an initial access token",
            RegistrationTokenInvalid => "not this client's registration access token",
            MissingScope(scope) => {
                return Cow::Owned(format!("the access token lacks the scope {scope}"))
            }
            TooLarge => "the request is too large",
            BodyTooLarge(bound) => {
                return Cow::Owned(format!(
                    "the request body is over the {bound} bytes this endpoint takes"
                ))
            }
            NotFound => "no endpoint at this path",
            MethodNotAllowed => "the endpoint does not accept this method",
            Contention => "storage contention, retry",
            Defect(_) => "an internal error ended the request; it was reported",
            StorageUnavailable => "storage is unavailable, retry",
            StorageFault(_) => "a stored record could not be read, retry later",
            RetryNotYetVisible => "the answer to this retry is not stored yet, retry",
            TooManyAttempts(wait) => {
                return Cow::Owned(format!(
                    "too many failed attempts; retry in {} seconds",
                    wait.0
                ))
            }
            TooManyRegistrations(wait) => {
                return Cow::Owned(format!(
                    "too many registrations; retry in {} seconds",
                    wait.0
                ))
            }
            CrossOriginRefused => "this origin may not call this endpoint",
            MalformedAttempter => {
                "an attempter is empty, too long or has control characters, or there are too many"
            }
            ClientIdMissing => "client_id is missing",
            UnknownClient => "no app is registered under this client_id",
            RedirectUriNotRegistered => "redirect_uri is not registered for this app",
            RedirectUriRequired => "this app must name one of its redirect URIs (redirect_uri)",
            ResponseTypeMissing => "response_type is missing",
            UnsupportedResponseType => "response_type must be code or token",
            ImplicitNotAllowed => "this app may not use response_type=token",
            ImplicitWithoutRedirectUri => "response_type=token requires a redirect_uri",
            ImplicitWithChallenge => "code_challenge applies to response_type=code only",
            InvalidTokenAccessType => "token_access_type must be online or offline",
            OfflineRequiresCode => "offline access requires response_type=code",
            OfflineAccessWithOnline => {
                "offline_access asks for a refresh token; token_access_type=online refuses one"
            }
            MalformedScope => "scope is malformed",
            ScopeNotEnabled => "a requested scope is not enabled for this app",
            ChallengeMethodWithoutChallenge => {
                "code_challenge_method was sent without code_challenge"
            }
            PkceRequired => "this app has no secret and must use PKCE (code_challenge)",
            UnsupportedChallengeMethod => "code_challenge_method must be plain or S256",
            S256Required => "code_challenge_method must be S256",
            MalformedChallenge => "code_challenge must be 43-128 characters of A-Z a-z 0-9 - . _ ~",
            AccessDenied => "the user denied access",
            CrossSiteConsent => "the consent form was posted from another site",
            IncompleteConsentForm => "the consent form is incomplete",
            NotAForm => "the body must be application/x-www-form-urlencoded",
            ParametersInQuery => {
                "the parameters must be in an application/x-www-form-urlencoded body"
            }
            ParametersSplit => "parameters in both the URL and the body",
            GrantTypeMissing => "grant_type is missing",
            UnsupportedGrantType => "this server does not take this grant_type",
            GrantNotAllowed => "this client may not use this grant_type",
            ClientAuthenticationMissing => "client authentication is missing",
            MalformedBasic => "the Basic credentials are malformed",
            MultipleClientAuthentications => "use one client authentication method only",
            ConflictingClientId => "client_id differs from the Basic credentials",
            SecretWithoutClientId => "client_secret was sent without client_id",
            UnsupportedAuthenticationScheme => "the Authorization scheme must be Basic",
            ClientAuthenticationFailed => "client authentication failed",
            ProofMissing => "client_secret or code_verifier is required",
            CodeMissing => "code is missing",
            MalformedVerifier => "code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~",
            UnknownCode => "the code is invalid, expired or already used",
            CodeOfAnotherApp => "the code was issued to another app",
            RedirectUriMismatch => "redirect_uri differs from the authorization request",
            VerifierMissing => "code_verifier is required for this code",
            VerifierMismatch => "code_verifier does not match the code_challenge",
            VerifierWithoutChallenge => {
                "code_verifier was sent for a code issued without code_challenge"
            }
            CodeReused => "the code was already used; the tokens issued from it are revoked",
            CodeExpired => "the code has expired",
            CodeUnlinked => "the user unlinked the app since consenting",
            RefreshTokenMissing => "refresh_token is missing",
            SubjectTokenMissing => "subject_token and subject_token_type are required",
            UnsupportedTokenType => {
                "this server exchanges access tokens only \
                 (urn:ietf:params:oauth:token-type:access_token)"
            }
            SubjectTokenInvalid => "subject_token is not a live access token this client holds",
            AssertionMissing => "assertion is missing",
            AssertionInvalid => {
                "the assertion is not an identity assertion (typ oauth-id-jag+jwt) of a trusted \
                 provider for this server and this client, live and correctly signed"
            }
            AssertionReused => "the assertion was used before",
            DpopProofInvalid(fault) => match fault {
                DpopFault::Malformed => "the DPoP proof is not a proof: a JWS typed dpop+jwt, signed with an asymmetric algorithm by the public key in its header, with jti, htm, htu and iat",
                DpopFault::Method => "the DPoP proof is for another method (htm)",
                DpopFault::Uri => "the DPoP proof is for another URI (htu)",
                DpopFault::TokenHash => "the DPoP proof does not carry the hash of this access token (ath)",
                DpopFault::Time => "the DPoP proof was made too long ago or ahead of this server's clock (iat)",
                DpopFault::Signature => "the DPoP proof's signature does not hold",
                DpopFault::Replayed => "the DPoP proof was presented before (jti)",
            },
            DpopProofRequired => "this client must present a DPoP proof",
            DpopJktMalformed => "dpop_jkt must be a JWK SHA-256 thumbprint (43 base64url characters), with response_type=code",
            DpopNonceRequired => "the DPoP proof must carry the nonce this server gives in DPoP-Nonce",
            GrantBoundToAnotherKey => "the grant is bound to a DPoP key this request did not prove",
            TokenBoundToAnotherKey => "the access token is bound to a DPoP key this request did not prove",
            AssertionSubjectUnknown => "the identity provider's subject is no account here",
            ActorTokenInvalid => {
                "actor_token must be this client's own live client credentials token"
            }
            TokenMissing => "token is missing",
            TokenOfAnotherApp => "the token was issued to another app",
            ConfidentialClientRequired => {
                "this endpoint takes a confidential client authenticated with its secret"
            }
            InvalidTarget => "the resource is unknown or was not consented to",
            TokenForAnotherResource => "the access token is for another resource",
            UnknownRefreshToken | RefreshTokenRevoked | RefreshTokenUnlinked => {
                "the refresh token is invalid or revoked"
            }
            RefreshTokenIdle => "the refresh token went unused too long: authorize again",
            RefreshTokenReused => {
                "the refresh token was replaced by a newer one; its grant is revoked"
            }
            RetryDiffers => "a retried refresh must ask for what the first one asked",
            RefreshTokenOfAnotherApp => "the refresh token was issued to another app",
            SecretRequired => "client_secret is required for this refresh token",
            ScopeWidened => "scope must be a subset of the granted scopes",
            BearerMissing => "no bearer token",
            MalformedBearer => "malformed Authorization header",
            UnknownAccessToken | AccessTokenRevoked | AccessTokenUnlinked | AppRemoved => {
                "the access token is invalid"
            }
            AccessTokenExpired => "the access token expired",
        })
    }
}

fn json_response(status: u16, body: String, extra: &[(&str, &str)]) -> HttpResponse {
    let mut response = HttpResponse::new(
        status,
        &[
            ("Content-Type", "application/json"),
            ("Cache-Control", "no-store"),
            ("Pragma", "no-cache"),
            ("X-Content-Type-Options", "nosniff"),
        ],
        body,
    );
    for (name, value) in extra {
        response = response.with_header(name, value);
    }
    response
}

/// A short text answer for a request no endpoint takes (a wrong path, method or origin).
fn plain_response(status: u16, body: String) -> HttpResponse {
    let content_type = if body.is_empty() {
        &[][..]
    } else {
        &[("Content-Type", "text/plain; charset=utf-8")][..]
    };
    let mut response = HttpResponse::new(status, content_type, body);
    response = response
        .with_header("Cache-Control", "no-store")
        .with_header("X-Content-Type-Options", "nosniff");
    response
}

/// The headers of every page: those of the flow, and a host's own (sign-in, home), which take
/// them from here. Pages must not be framed (clickjacking), cached, or sniffed, and codes in
/// their URLs must not leak through `Referer`.
pub const PAGE_HEADERS: [(&str, &str); 6] = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("Cache-Control", "no-store"),
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
];

fn html_response(status: u16, template: &Template, values: &[(&str, Shown<'_>)]) -> HttpResponse {
    HttpResponse::new(status, &PAGE_HEADERS, template.render(&lookup(values)))
}

fn redirect(location: &str) -> HttpResponse {
    HttpResponse::new(
        302,
        &[
            ("Location", location),
            ("Cache-Control", "no-store"),
            ("Referrer-Policy", "no-referrer"),
            ("X-Content-Type-Options", "nosniff"),
        ],
        String::new(),
    )
}

/// A refusal, on the channel its endpoint answers on.
fn refusal_response(refusal: &Refusal, via: &Via, config: &Config) -> HttpResponse {
    let code = refusal.error_code();
    let description = refusal.description();
    let error_body = |description: &str| {
        JsonObject::new()
            .string("error", code)
            .string("error_description", description)
            .finish()
    };
    let error_page = |status| {
        let data = page_data("error", &[("error", code)]);
        html_response(
            status,
            &config.pages().error,
            &[
                ("page_data", Shown::Markup(&data)),
                ("error", Shown::Text(code)),
                ("description", Shown::Text(&description)),
            ],
        )
    };
    // RFC 9110 §15.5.14: an API body over its endpoint's bound, refused before any token was
    // looked at; the body says so, and the bound (in the API's error shape).
    if let Refusal::BodyTooLarge(bound) = refusal {
        let error = JsonObject::new()
            .string(".tag", "body_too_large")
            .number("max_body_bytes", *bound as u64);
        let body = JsonObject::new()
            .object("error", error)
            .string("error_description", &description)
            .string("error_summary", "body_too_large/..")
            .finish();
        return json_response(413, body, &[]);
    }
    let retry_after = refusal.retry_after().map(|wait| wait.0.to_string());
    // A defect is the server's fault, whatever channel it surfaced on: 500, never a redirect.
    if let Refusal::Defect(_) = refusal {
        return match via {
            Via::Page => error_page(500),
            Via::Plain => plain_response(500, "Internal Server Error".to_owned()),
            _ => json_response(500, error_body(&description), &[]),
        };
    }
    match (via, retry_after) {
        // RFC 6585 §4: 429 with how long to wait; the credentials were not even checked.
        (via, Some(wait))
            if matches!(
                refusal,
                Refusal::TooManyAttempts(_) | Refusal::TooManyRegistrations(_)
            ) =>
        {
            match via {
                Via::Plain => plain_response(429, "Too Many Requests".to_owned())
                    .with_header("Retry-After", &wait),
                _ => json_response(429, error_body(&description), &[("Retry-After", &wait)]),
            }
        }
        // The request as a whole could not be carried out: the client may retry it as it is.
        (Via::Page, Some(wait)) => error_page(503).with_header("Retry-After", &wait),
        (_, Some(wait)) => json_response(503, error_body(&description), &[("Retry-After", &wait)]),
        (Via::Plain, None) => match refusal {
            Refusal::CrossOriginRefused => plain_response(403, "Forbidden".to_owned()),
            Refusal::MalformedAttempter => plain_response(400, "Bad Request".to_owned()),
            _ => plain_response(404, "Not Found".to_owned()),
        },
        (Via::Page, None) => error_page(400),
        (Via::Redirect(reply), None) => {
            redirect(&reply.location(&[("error", code), ("error_description", &description)]))
        }
        (Via::Token { basic }, None) => {
            let body = error_body(&description);
            match refusal {
                // RFC 6749 §5.2: a client that tried Basic gets 401 and the challenge of its
                // scheme; one that authenticated in the body (or not at all) gets 400, since a
                // 401 must carry a challenge (RFC 9110 §15.5.2) and a Basic one would make a
                // browser prompt for credentials the client never meant to send that way.
                _ if code == "invalid_client" && *basic => {
                    json_response(401, body, &[("WWW-Authenticate", "Basic realm=\"oauth2\"")])
                }
                _ => json_response(400, body, &[]),
            }
        }
        (Via::Bearer(endpoint), None) => bearer_refusal(refusal, endpoint.as_ref(), config, false),
        (Via::Dpop(endpoint), None) => bearer_refusal(refusal, endpoint.as_ref(), config, true),
    }
}

/// RFC 7662 §2.2: `active`, and for a live token what it carries (keys in alphabetical order).
fn introspection_body(found: Option<&Introspected>, config: &Config) -> String {
    let Some(token) = found else {
        return JsonObject::new().boolean("active", false).finish();
    };
    let mut body = JsonObject::new();
    // RFC 8693 §4.1: the client that acts, where an exchange named it.
    if let Some((actor, true)) = &token.exchanged_by {
        body = body.json(
            "act",
            &JsonObject::new().string("sub", actor.as_str()).finish(),
        );
    }
    body = body.boolean("active", true);
    // RFC 9449 §6.2: the key a bound token is good with.
    if let Some(key) = &token.bound_to {
        body = body.json(
            "cnf",
            &JsonObject::new().string("jkt", key.as_str()).finish(),
        );
    }
    if !token.audience.is_empty() {
        body = body.strings("aud", token.audience.iter());
    }
    // An exchanged token was issued to the client that exchanged it.
    let holder = token.exchanged_by.as_ref().map_or(&token.app, |(by, _)| by);
    body = body.string("client_id", holder.as_str());
    if let Some(at) = token.expires_at {
        body = body.number("exp", at.0);
    }
    if let Some(issuer) = config.issuer() {
        body = body.string("iss", issuer.as_str());
    }
    body = body.string("scope", token.scopes.as_str()).string(
        "sub",
        match &token.subject {
            Subject::Account(account_id) => account_id.as_str(),
            Subject::Client => token.app.as_str(),
        },
    );
    if token.access_token {
        body = body.string(
            "token_type",
            if token.bound_to.is_some() {
                "DPoP"
            } else {
                "bearer"
            },
        );
    }
    body.finish()
}

/// 405, with the methods the endpoint takes (RFC 9110 §15.5.6), on its channel.
fn wrong_method(endpoint: Endpoint) -> HttpResponse {
    let refusal = Refusal::MethodNotAllowed;
    let error_body = || {
        JsonObject::new()
            .string("error", refusal.error_code())
            .string("error_description", &refusal.description())
            .finish()
    };
    let response = match endpoint.channel() {
        Channel::Token => json_response(405, error_body(), &[]),
        Channel::Bearer => plain_response(405, error_body()),
        Channel::Page | Channel::Plain => plain_response(405, String::new()),
    };
    response.with_header("Allow", endpoint.allow())
}

/// The metadata document, public and cacheable, readable from any origin (browser-based
/// clients discover the server too); or a preflight for it.
fn metadata_response(metadata: Metadata, config: &Config) -> (Outcome, HttpResponse) {
    let document = |body| {
        (
            Outcome::Metadata,
            HttpResponse::new(
                200,
                &[
                    ("Content-Type", "application/json"),
                    ("Cache-Control", "public, max-age=3600"),
                    ("Access-Control-Allow-Origin", "*"),
                    ("X-Content-Type-Options", "nosniff"),
                ],
                body,
            ),
        )
    };
    match (metadata, config.issuer()) {
        (Metadata::AuthorizationServer, Some(issuer)) => {
            document(discovery::document(config, issuer))
        }
        (Metadata::ProtectedResource(endpoint), Some(issuer)) => document(
            discovery::resource_document(config, issuer, endpoint.as_ref()),
        ),
        (Metadata::Preflight, Some(_)) => (
            Outcome::Preflight,
            HttpResponse::new(
                204,
                &[
                    ("Access-Control-Allow-Origin", "*"),
                    ("Access-Control-Allow-Methods", "GET"),
                    ("Access-Control-Allow-Headers", "*"),
                    ("Access-Control-Max-Age", "86400"),
                ],
                String::new(),
            ),
        ),
        // Never routed here: the reference profile serves no metadata.
        (_, None) => (
            Outcome::Refused(Refusal::NotFound),
            refusal_response(&Refusal::NotFound, &Via::Plain, config),
        ),
    }
}

/// RFC 6750 §3 status and challenge, with the reference service's body
/// `{"error_summary": "<tag>/..", "error": {".tag": "<tag>", …}}`.
///
/// In the standards profile every challenge also names the API's metadata (RFC 9728 §5.1), so
/// a client that knows only the API finds its authorization server, and a 401's names the scope
/// the endpoint requires (RFC 6750 §3), so that it knows what to ask for (MCP).
///
/// A token presented under the `DPoP` scheme (`dpop_scheme`) is refused on the `DPoP` challenge
/// (RFC 9449 §7.1); a bearer token where proofs are read, on the `Bearer` one with a `DPoP` one
/// beside it naming the algorithms (§7.2).
fn bearer_refusal(
    refusal: &Refusal,
    endpoint: Option<&CalledEndpoint>,
    config: &Config,
    dpop_scheme: bool,
) -> HttpResponse {
    let required = endpoint.map(|endpoint| &endpoint.scope);
    let metadata = config
        .issuer()
        .map(|issuer| discovery::resource_metadata_url(issuer, endpoint));
    let challenges = match (config.dpop().is_some(), dpop_scheme) {
        (false, _) => Challenges::Bearer,
        (true, false) => Challenges::BearerAndDpop,
        (true, true) => Challenges::Dpop,
    };
    let (status, challenge, tag) = challenge_of(refusal, required, metadata.as_deref(), challenges);
    let mut error = JsonObject::new().string(".tag", tag);
    if let Refusal::MissingScope(scope) = refusal {
        error = error.string("required_scope", scope.as_str());
    }
    let body = JsonObject::new()
        .object("error", error)
        .string("error_summary", &format!("{tag}/.."))
        .finish();
    json_response(status, body, &[("WWW-Authenticate", &challenge)])
}

/// Which challenges answer a refused access token (RFC 9449 §7.1, §7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Challenges {
    /// The resource takes bearer tokens only: the `Bearer` challenge (RFC 6750 §3).
    Bearer,
    /// The resource takes DPoP proofs too, and the token came as a bearer token (or none
    /// came): the `Bearer` challenge, and a `DPoP` one beside it naming the algorithms.
    BearerAndDpop,
    /// The token came under the `DPoP` scheme: the refusal on the `DPoP` challenge, with the
    /// algorithms.
    Dpop,
}

/// What a bearer check's refusal is answered with on a resource server of this authorization
/// server's on another host (the npm package's resource helper): the status and the RFC 6750
/// §3 challenge, naming the scope the call requires (on a 401 too, so that a client knows what
/// to ask for) and the resource's metadata at `metadata_url` (RFC 9728 §5.1), under the
/// schemes `challenges` says (a proof's own refusals always on the `DPoP` challenge) — the
/// same challenge the core writes for the API it serves itself.
///
/// ```
/// use edgegrant::{resource_server_challenge, Challenges, Refusal, Scope};
/// let scope = Scope::new("mcp:tools").unwrap();
/// let metadata = "https://mcp.example/.well-known/oauth-protected-resource";
/// let (status, challenge) =
///     resource_server_challenge(&Refusal::BearerMissing, Some(&scope), metadata, Challenges::Bearer);
/// assert_eq!(status, 401);
/// assert_eq!(challenge, "Bearer realm=\"api\", scope=\"mcp:tools\", resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource\"");
/// let (_, challenge) =
///     resource_server_challenge(&Refusal::BearerMissing, Some(&scope), metadata, Challenges::BearerAndDpop);
/// assert!(challenge.ends_with(", DPoP algs=\"ES256 RS256\""));
/// let (_, challenge) =
///     resource_server_challenge(&Refusal::UnknownAccessToken, None, metadata, Challenges::Dpop);
/// assert!(challenge.starts_with("DPoP realm=\"api\", error=\"invalid_token\""));
/// ```
pub fn resource_server_challenge(
    refusal: &Refusal,
    required: Option<&Scope>,
    metadata_url: &str,
    challenges: Challenges,
) -> (u16, String) {
    let (status, challenge, _) = challenge_of(refusal, required, Some(metadata_url), challenges);
    (status, challenge)
}

/// A bearer check's refusal under `challenges`: its status, its challenge and the reference
/// service's error tag.
fn challenge_of(
    refusal: &Refusal,
    required: Option<&Scope>,
    metadata_url: Option<&str>,
    challenges: Challenges,
) -> (u16, String, &'static str) {
    let (status, mut challenge, tag) = bearer_challenge(refusal, required, metadata_url);
    if challenges == Challenges::Dpop {
        if let Some(parameters) = challenge.strip_prefix("Bearer ") {
            challenge = format!("DPoP {parameters}");
        }
    }
    // RFC 9449 §7.1: where proofs are read, the DPoP challenge names the algorithms a proof
    // may be signed with — its own, or one beside the bearer challenge.
    let algs = dpop::ALG_NAMES.join(" ");
    match (challenges, challenge.starts_with("DPoP ")) {
        (Challenges::Bearer, _) => {}
        (_, true) => challenge.push_str(&format!(", algs=\"{algs}\"")),
        (_, false) => challenge.push_str(&format!(", DPoP algs=\"{algs}\"")),
    }
    (status, challenge, tag)
}

/// A bearer check's refusal: its status, its challenge (with the scope required and the
/// resource's metadata, where there is one) and the reference service's error tag.
fn bearer_challenge(
    refusal: &Refusal,
    required: Option<&Scope>,
    metadata_url: Option<&str>,
) -> (u16, String, &'static str) {
    let (status, challenge, tag) = match refusal {
        Refusal::BearerMissing => (
            401,
            "Bearer realm=\"api\"".to_owned(),
            "invalid_access_token",
        ),
        Refusal::AccessTokenExpired => (
            401,
            format!(
                "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"{}\"",
                refusal.description()
            ),
            "expired_access_token",
        ),
        Refusal::MissingScope(scope) => (
            403,
            format!("Bearer realm=\"api\", error=\"insufficient_scope\", scope=\"{scope}\""),
            "missing_scope",
        ),
        Refusal::UnknownAccessToken
        | Refusal::AccessTokenRevoked
        | Refusal::AccessTokenUnlinked
        | Refusal::AppRemoved
        | Refusal::TokenForAnotherResource
        | Refusal::TokenBoundToAnotherKey
        | Refusal::InitialAccessTokenInvalid
        | Refusal::RegistrationTokenInvalid => (
            401,
            format!(
                "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"{}\"",
                refusal.description()
            ),
            "invalid_access_token",
        ),
        // RFC 9449 §7.1: the proof's own errors go on the DPoP challenge.
        Refusal::DpopProofInvalid(_) | Refusal::DpopNonceRequired => (
            401,
            format!(
                "DPoP realm=\"api\", error=\"{}\", error_description=\"{}\"",
                refusal.error_code(),
                refusal.description()
            ),
            "invalid_access_token",
        ),
        // A malformed header, an oversized request — and every refusal no bearer check makes,
        // listed so that a new one is mapped here on purpose: RFC 6750 §3.1 `invalid_request`.
        Refusal::TooLarge
        | Refusal::BodyTooLarge(_)
        | Refusal::NotFound
        | Refusal::MethodNotAllowed
        | Refusal::Contention
        | Refusal::Defect(_)
        | Refusal::RetryNotYetVisible
        | Refusal::StorageUnavailable
        | Refusal::StorageFault(_)
        | Refusal::TooManyAttempts(_)
        | Refusal::MalformedAttempter
        | Refusal::CrossOriginRefused
        | Refusal::Repeated(_)
        | Refusal::ClientIdMissing
        | Refusal::UnknownClient
        | Refusal::RedirectUriNotRegistered
        | Refusal::RedirectUriRequired
        | Refusal::ResponseTypeMissing
        | Refusal::UnsupportedResponseType
        | Refusal::ImplicitNotAllowed
        | Refusal::ImplicitWithoutRedirectUri
        | Refusal::ImplicitWithChallenge
        | Refusal::InvalidTokenAccessType
        | Refusal::OfflineRequiresCode
        | Refusal::OfflineAccessWithOnline
        | Refusal::MalformedScope
        | Refusal::ScopeNotEnabled
        | Refusal::ChallengeMethodWithoutChallenge
        | Refusal::PkceRequired
        | Refusal::UnsupportedChallengeMethod
        | Refusal::S256Required
        | Refusal::MalformedChallenge
        | Refusal::AccessDenied
        | Refusal::CrossSiteConsent
        | Refusal::IncompleteConsentForm
        | Refusal::NotAForm
        | Refusal::ParametersInQuery
        | Refusal::ParametersSplit
        | Refusal::GrantTypeMissing
        | Refusal::UnsupportedGrantType
        | Refusal::GrantNotAllowed
        | Refusal::ClientAuthenticationMissing
        | Refusal::MalformedBasic
        | Refusal::MultipleClientAuthentications
        | Refusal::ConflictingClientId
        | Refusal::SecretWithoutClientId
        | Refusal::UnsupportedAuthenticationScheme
        | Refusal::ClientAuthenticationFailed
        | Refusal::ProofMissing
        | Refusal::CodeMissing
        | Refusal::MalformedVerifier
        | Refusal::UnknownCode
        | Refusal::CodeOfAnotherApp
        | Refusal::RedirectUriMismatch
        | Refusal::VerifierMissing
        | Refusal::VerifierMismatch
        | Refusal::VerifierWithoutChallenge
        | Refusal::CodeReused
        | Refusal::CodeExpired
        | Refusal::CodeUnlinked
        | Refusal::RefreshTokenMissing
        | Refusal::SubjectTokenMissing
        | Refusal::UnsupportedTokenType
        | Refusal::SubjectTokenInvalid
        | Refusal::ActorTokenInvalid
        | Refusal::AssertionMissing
        | Refusal::AssertionInvalid
        | Refusal::AssertionReused
        | Refusal::AssertionSubjectUnknown
        | Refusal::UnknownRefreshToken
        | Refusal::RefreshTokenRevoked
        | Refusal::RefreshTokenUnlinked
        | Refusal::RefreshTokenIdle
        | Refusal::RefreshTokenReused
        | Refusal::RetryDiffers
        | Refusal::RefreshTokenOfAnotherApp
        | Refusal::SecretRequired
        | Refusal::ScopeWidened
        | Refusal::MalformedBearer
        | Refusal::TokenMissing
        | Refusal::TokenOfAnotherApp
        | Refusal::ConfidentialClientRequired
        | Refusal::InvalidTarget
        | Refusal::InvalidRedirectUri(_)
        | Refusal::TooManyRegistrations(_)
        | Refusal::InvalidClientMetadata(_)
        | Refusal::ClientDocument(_)
        | Refusal::ClientKeys(_)
        | Refusal::ProviderKeys(_)
        | Refusal::DpopJktMalformed
        | Refusal::DpopProofRequired
        | Refusal::GrantBoundToAnotherKey => (
            400,
            format!(
                "Bearer realm=\"api\", error=\"invalid_request\", error_description=\"{}\"",
                refusal.description()
            ),
            "invalid_access_token",
        ),
    };
    let challenge = match (metadata_url, required) {
        // Never offline_access: a refresh token is no requirement of a resource (MCP
        // 2026-07-28, Refresh Tokens), whatever a resource server elsewhere says it requires.
        (Some(url), Some(scope)) if status == 401 && scope.as_str() != OFFLINE_ACCESS => {
            format!("{challenge}, scope=\"{scope}\", resource_metadata=\"{url}\"")
        }
        (Some(url), _) => format!("{challenge}, resource_metadata=\"{url}\""),
        (None, _) => challenge,
    };
    (status, challenge, tag)
}

/// RFC 7591 §3.2.1: the client's key and credentials, and every metadata value it was
/// registered with — what it asked for, as this server kept it (keys in alphabetical order).
/// Optional values left out are absent, never `null` (the MCP TypeScript SDK refuses `null`).
fn client_information(registered: &Registered, config: &Config) -> String {
    let Registered {
        record,
        secret,
        token,
        ..
    } = registered;
    let app = &record.app;
    let Provenance::Registered(registration) = &record.provenance else {
        // Only a registration ends so (register.rs): a document's client has no registration.
        return JsonObject::new().finish();
    };
    let about = &registration.about;
    let mut json = JsonObject::new()
        .string(
            "application_type",
            if registration.native { "native" } else { "web" },
        )
        .string("client_id", app.key.as_str())
        .number("client_id_issued_at", registration.issued_at.0)
        .string("client_name", &app.name);
    if let Some(secret) = secret {
        // 0: the secret does not expire (RFC 7591 §3.2.1).
        json = json
            .string("client_secret", secret.expose())
            .number("client_secret_expires_at", 0);
    }
    json = json.optional_string("client_uri", about.client_uri.as_deref());
    if !about.contacts.is_empty() {
        json = json.strings("contacts", about.contacts.iter().map(String::as_str));
    }
    json = json.strings("grant_types", registration.grant_types.names());
    json = match &registration.keys {
        ClientKeys::Inline(keys) if keys.is_empty() => json,
        ClientKeys::Inline(keys) => json.json("jwks", &jwks(keys)),
        ClientKeys::Remote(remote) => json.string("jwks_uri", &remote.url),
    };
    json.optional_string("logo_uri", about.logo_uri.as_deref())
        .optional_string("policy_uri", about.policy_uri.as_deref())
        .strings(
            "redirect_uris",
            app.redirect_uris.iter().map(|u| u.as_str()),
        )
        .string("registration_access_token", token.expose())
        .string(
            "registration_client_uri",
            &format!(
                "{}{REGISTRATION}/{}",
                config.issuer().map_or("", Issuer::origin),
                app.key
            ),
        )
        // A machine (client credentials only) takes no response type.
        .strings(
            "response_types",
            registration
                .grant_types
                .contains(GrantType::AuthorizationCode)
                .then_some("code"),
        )
        .string("scope", app.scopes().as_str())
        .optional_string("software_id", about.software_id.as_deref())
        .optional_string("software_version", about.software_version.as_deref())
        .string(
            "token_endpoint_auth_method",
            registration.auth_method.as_str(),
        )
        .optional_string("tos_uri", about.tos_uri.as_deref())
        .finish()
}

/// A client's keys as the JWK set it registered (RFC 7517 §5), each as it is kept.
fn jwks(keys: &[ClientKey]) -> String {
    let keys: Vec<&str> = keys.iter().map(|key| key.jwk.as_str()).collect();
    format!("{{\"keys\":[{}]}}", keys.join(","))
}

/// RFC 6749 §5.1, with the reference service's extra fields after an exchange (keys in
/// alphabetical order).
fn token_body(body: &TokenBody) -> String {
    let mut json = JsonObject::new().string("access_token", body.access_token.expose());
    if let Some((account_id, _)) = &body.person {
        json = json.string("account_id", account_id.as_str());
    }
    if let Some(expires_in) = body.expires_in {
        json = json.number("expires_in", expires_in.0);
    }
    if body.exchanged {
        json = json.string("issued_token_type", ACCESS_TOKEN_TYPE);
    }
    if let Some(refresh) = &body.refresh_token {
        json = json.string("refresh_token", refresh.expose());
    }
    if let Some(scope) = &body.scope {
        json = json.string("scope", scope.as_str());
    }
    json = json.string("token_type", if body.bound { "DPoP" } else { "bearer" });
    if let Some((_, uid)) = &body.person {
        json = json.string("uid", uid.as_str());
    }
    json.finish()
}

/// Writes `ending` out.
pub(crate) fn render(ending: Ending, config: &Config) -> Step {
    let pages = config.pages();
    let (outcome, response) = match ending {
        Ending::Serve(principal) => {
            return Step::Serve(Authorized {
                principal,
                headers: vec![
                    ("Cache-Control".to_owned(), "no-store".to_owned()),
                    ("X-Content-Type-Options".to_owned(), "nosniff".to_owned()),
                ],
            })
        }
        Ending::AttemptsAllowed => (
            Outcome::AttemptsAllowed,
            HttpResponse::new(204, &[("Cache-Control", "no-store")], String::new()),
        ),
        Ending::Preflight(preflight) => (
            Outcome::Preflight,
            HttpResponse::new(204, &cors::preflight_headers(&preflight), String::new()),
        ),
        Ending::Metadata(metadata) => metadata_response(metadata, config),
        Ending::WrongMethod(endpoint) => (
            Outcome::Refused(Refusal::MethodNotAllowed),
            wrong_method(endpoint),
        ),
        // RFC 7009 §2.2: 200, and the body is not read.
        Ending::Revoked(Revocation::Standard) => (
            Outcome::Revoked,
            json_response(200, String::new(), &[]).without_header("Content-Type"),
        ),
        Ending::Introspection(found) => (
            Outcome::Introspected,
            json_response(200, introspection_body(found.as_deref(), config), &[]),
        ),
        Ending::Registered(registered) => (
            Outcome::Registered,
            json_response(
                if registered.created { 201 } else { 200 },
                client_information(&registered, config),
                &[],
            ),
        ),
        // RFC 7592 §2.3.
        Ending::Unregistered => (
            Outcome::Unregistered,
            HttpResponse::new(204, &[("Cache-Control", "no-store")], String::new()),
        ),
        Ending::Refused(refusal, via) => {
            let response = refusal_response(&refusal, &via, config);
            (Outcome::Refused(refusal), response)
        }
        Ending::SignIn { return_to } => {
            let data = page_data("sign_in", &[]);
            let response = html_response(
                200,
                &pages.sign_in,
                &[
                    ("page_data", Shown::Markup(&data)),
                    ("return_to", Shown::Text(&return_to)),
                ],
            );
            (Outcome::SignIn { return_to }, response)
        }
        Ending::Consent(page) => {
            let ConsentPage {
                prompt,
                query,
                user,
            } = *page;
            let scopes: Vec<&str> = prompt.scopes.iter().collect();
            // Each scope in plain words, and offline access in words when it was asked for
            // without the scope that names it.
            let offline = prompt.access_type == TokenAccessType::Offline;
            let mut permissions: Vec<&str> = scopes.iter().map(|s| config.describe(s)).collect();
            if offline && !scopes.contains(&OFFLINE_ACCESS) {
                permissions.push(config.describe(OFFLINE_ACCESS));
            }
            let resources: Vec<&str> = prompt.resources.iter().collect();
            let user_name = user.name.as_deref().unwrap_or(user.account_id.as_str());
            // Where the answer goes: the host the user would be sent to (MCP asks that it be
            // shown), or none when the code is displayed.
            let redirect = prompt
                .redirect_uri
                .as_ref()
                .and_then(|uri| HttpUri::parse(uri.as_str()));
            // A private-use scheme (`com.example.app:/cb`, RFC 8252 §7.1) names the app the
            // system hands it to: the scheme is the destination.
            let private_scheme = match (&redirect, &prompt.redirect_uri) {
                (None, Some(uri)) => uri.as_str().split_once(':').map(|(scheme, _)| scheme),
                _ => None,
            };
            let redirect_host = redirect.as_ref().map(|u| u.host).or(private_scheme);
            let redirect_host = redirect_host.unwrap_or_default();
            // A program on the user's own machine that nobody checked may be anyone's: MCP
            // asks for a warning on such a redirect — a loopback one, or a private-use scheme
            // any installed program may claim.
            let loopback = prompt.unverified
                && (private_scheme.is_some()
                    || redirect.as_ref().is_some_and(HttpUri::is_loopback));
            let access = match prompt.access_type {
                TokenAccessType::Online => "online",
                TokenAccessType::Offline => "offline",
                TokenAccessType::Legacy => "legacy",
            };
            let named = prompt.resources.iter().collect::<Vec<_>>().join(" ");
            let mut fields = vec![
                ("app", prompt.app.as_str()),
                ("scopes", prompt.scopes.as_str()),
                ("access-type", access),
            ];
            if !named.is_empty() {
                fields.push(("resources", &named));
            }
            if prompt.unverified {
                fields.push(("unverified", "true"));
            }
            let client_host = prompt.app.document_host().unwrap_or_default();
            if !client_host.is_empty() {
                fields.push(("client-host", client_host));
            }
            let data = page_data("consent", &fields);
            let redirect_uri = prompt.redirect_uri.as_ref().map_or("", |r| r.as_str());
            let response = html_response(
                200,
                &pages.consent,
                &[
                    ("page_data", Shown::Markup(&data)),
                    ("app", Shown::Text(prompt.app.as_str())),
                    ("app_name", Shown::Text(&prompt.app_name)),
                    ("scopes", Shown::List(&scopes)),
                    ("access_type", Shown::Text(access)),
                    ("offline", Shown::Flag(offline)),
                    ("permissions", Shown::List(&permissions)),
                    ("user_name", Shown::Text(user_name)),
                    ("redirect_host", Shown::Text(redirect_host)),
                    ("loopback", Shown::Flag(loopback)),
                    ("unverified", Shown::Flag(prompt.unverified)),
                    ("client_host", Shown::Text(client_host)),
                    ("resources", Shown::List(&resources)),
                    ("account_id", Shown::Text(user.account_id.as_str())),
                    ("uid", Shown::Text(user.uid.as_str())),
                    ("redirect_uri", Shown::Text(redirect_uri)),
                    ("query", Shown::Text(&query)),
                ],
            );
            (Outcome::Consent(prompt), response)
        }
        Ending::Redirect(location) => {
            let response = redirect(&location);
            (Outcome::Redirect(location), response)
        }
        Ending::DisplayCode {
            app,
            app_name,
            code,
        } => {
            let data = page_data("code", &[("code", code.expose())]);
            let response = html_response(
                200,
                &pages.code,
                &[
                    ("page_data", Shown::Markup(&data)),
                    ("app", Shown::Text(app.as_str())),
                    ("app_name", Shown::Text(&app_name)),
                    ("code", Shown::Text(code.expose())),
                ],
            );
            (Outcome::DisplayCode { app, code }, response)
        }
        Ending::Tokens(body) => {
            let response = json_response(200, token_body(&body), &[]);
            // A retry answered with no write of its own to carry its event: the reply does.
            let audit = match body.retried {
                Some((app, subject, grant)) => vec![AuditEvent::RefreshTokenRetried {
                    app,
                    subject,
                    grant,
                }],
                None => Vec::new(),
            };
            return Step::Respond(Reply {
                outcome: Outcome::Tokens,
                response,
                audit,
            });
        }
        Ending::Revoked(Revocation::Grant(_)) => {
            (Outcome::Revoked, json_response(200, "null".to_owned(), &[]))
        }
        Ending::Unlinked => (
            Outcome::Unlinked,
            json_response(200, "null".to_owned(), &[]),
        ),
    };
    // A defect wrote nothing that could carry its event: the reply does.
    let audit = match &outcome {
        Outcome::Refused(Refusal::Defect(defect)) => vec![AuditEvent::Defect { defect: *defect }],
        _ => Vec::new(),
    };
    Step::Respond(Reply {
        outcome,
        response,
        audit,
    })
}
