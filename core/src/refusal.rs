//! Why a request was refused: one value per reason, carried with the outcome so that hosts can
//! log it and tests can assert it. Several reasons share one wire form on purpose (an unknown, a
//! revoked and an unlinked token all answer `invalid_token`); [`render`](crate::render) is the
//! one place that maps a reason to its response.

use crate::prelude::*;
use crate::scope::Scope;
use crate::time::Seconds;

/// Why a request was refused.
///
/// New reasons may be added in any release: match with a wildcard arm.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    // ---- any endpoint ----------------------------------------------------------------------
    /// The body, the query or a header is over [`Policy::max_input_bytes`](crate::Policy).
    TooLarge,
    /// An API request's body is over its endpoint's bound, in bytes
    /// ([`ApiEndpoint::max_body_bytes`](crate::ApiEndpoint), else
    /// [`Policy::max_api_body_bytes`](crate::Policy)): 413.
    BodyTooLarge(usize),
    /// No endpoint of the core lives at this path (404).
    NotFound,
    /// The endpoint does not take this method (405).
    MethodNotAllowed,
    /// The store kept refusing this request's writes because racing requests won
    /// ([`Policy::max_attempts`](crate::Policy) in a row): 503, try again.
    Contention,
    /// The core broke its own invariant (a bug, never load): answered `500 server_error`, with
    /// an [`AuditEvent::Defect`](crate::AuditEvent::Defect) on the reply, so that an operator
    /// tells a defect from contention. Nothing was written by the step that found it.
    Defect(Defect),
    /// A retry of a rotated refresh found no record of the answer it repeats: the store does not
    /// show it yet (an eventually consistent token store, such as Workers KV, read moments after
    /// the rotation elsewhere). 503, try again: the answer is there, and refusing would lock the
    /// user out.
    RetryNotYetVisible,
    /// The store failed (the host reported [`Event::Unavailable`](crate::Event::Unavailable)):
    /// 503, try again.
    StorageUnavailable,
    /// A stored record could not be read: the bytes under this key are not a record this core
    /// wrote for it (a corrupted or foreign store), as found when they arrived or when the
    /// request read the damaged part. 503 like an outage; the key is for the
    /// host's log, never sent.
    StorageFault(String),
    /// Too many failed credential checks by this client, source or account in the current
    /// window ([`AttemptLimits`](crate::AttemptLimits)): 429, retry after this long. The
    /// credentials are not even checked.
    TooManyAttempts(Seconds),
    /// An attempter of the host's own check ([`Input::Attempts`](crate::Input::Attempts)) that
    /// no one can have typed — empty, over 256 bytes, or with control characters — or more
    /// than [`MAX_ATTEMPTERS`](crate::MAX_ATTEMPTERS) of them (400).
    MalformedAttempter,
    /// A CORS preflight from an origin no app registered, or for a method the endpoint does
    /// not take (403, no CORS headers).
    CrossOriginRefused,
    /// A parameter that may appear once appeared more often (RFC 6749 §3.1, §3.2).
    Repeated(&'static str),

    // ---- the authorization request (`GET /oauth2/authorize`, the consent form) --------------
    /// `client_id` is missing.
    ClientIdMissing,
    /// No app is registered under `client_id`.
    UnknownClient,
    /// `redirect_uri` is not one the app registered (exact match).
    RedirectUriNotRegistered,
    /// A client nobody verified (registered, or named by a metadata document) sent no
    /// `redirect_uri`: its code is never shown on a page for a person to copy.
    RedirectUriRequired,
    /// `response_type` is missing.
    ResponseTypeMissing,
    /// `response_type` is neither `code` nor `token`.
    UnsupportedResponseType,
    /// The app may not use the legacy implicit flow.
    ImplicitNotAllowed,
    /// `response_type=token` without a `redirect_uri` to deliver the token to.
    ImplicitWithoutRedirectUri,
    /// `code_challenge` with `response_type=token`.
    ImplicitWithChallenge,
    /// `token_access_type` is neither `online` nor `offline`.
    InvalidTokenAccessType,
    /// `token_access_type=offline` (or `offline_access`) with `response_type=token`.
    OfflineRequiresCode,
    /// The scope `offline_access` with `token_access_type=online`: two answers to one question.
    OfflineAccessWithOnline,
    /// `scope` is not a space-separated list of scopes.
    MalformedScope,
    /// A requested scope is not enabled for the app.
    ScopeNotEnabled,
    /// `code_challenge_method` without `code_challenge`.
    ChallengeMethodWithoutChallenge,
    /// An app without a secret asked for a code without `code_challenge`.
    PkceRequired,
    /// `code_challenge_method` is neither `plain` nor `S256`.
    UnsupportedChallengeMethod,
    /// `plain` while the policy demands `S256`.
    S256Required,
    /// `code_challenge` is not 43–128 unreserved characters.
    MalformedChallenge,
    /// The user clicked Deny.
    AccessDenied,
    /// The consent form came from another site (CSRF).
    CrossSiteConsent,
    /// The consent form lacks its request or its decision.
    IncompleteConsentForm,

    // ---- the token endpoint ------------------------------------------------------------------
    /// The parameters are not in an `application/x-www-form-urlencoded` body.
    NotAForm,
    /// The parameters came in the URL while the policy wants the body.
    ParametersInQuery,
    /// Parameters came in the URL and in the body.
    ParametersSplit,
    /// `grant_type` is missing.
    GrantTypeMissing,
    /// `grant_type` is neither `authorization_code` nor `refresh_token`.
    UnsupportedGrantType,
    /// The client may not use the grant type it asked for (RFC 6749 §5.2
    /// `unauthorized_client`): client credentials for an app the configuration does not name.
    GrantNotAllowed,
    /// No client authentication at all.
    ClientAuthenticationMissing,
    /// Malformed `Authorization: Basic` credentials.
    MalformedBasic,
    /// Two client authentication methods at once.
    MultipleClientAuthentications,
    /// Basic names one client and the body another.
    ConflictingClientId,
    /// `client_secret` without `client_id`.
    SecretWithoutClientId,
    /// An `Authorization` scheme other than Basic.
    UnsupportedAuthenticationScheme,
    /// Unknown client, or a wrong secret.
    ClientAuthenticationFailed,
    /// Neither a secret nor a `code_verifier`: the client proved nothing.
    ProofMissing,
    /// `code` is missing.
    CodeMissing,
    /// `code_verifier` is not 43–128 unreserved characters.
    MalformedVerifier,
    /// No such code.
    UnknownCode,
    /// The code was issued to another app.
    CodeOfAnotherApp,
    /// `redirect_uri` differs from the authorization request's (or one of them is missing).
    RedirectUriMismatch,
    /// The code has a challenge and no verifier was sent.
    VerifierMissing,
    /// The verifier does not match the challenge.
    VerifierMismatch,
    /// A verifier for a code issued without a challenge (PKCE downgrade, RFC 9700 §2.1.1).
    VerifierWithoutChallenge,
    /// The code was used before; what it produced is revoked now (RFC 6749 §4.1.2).
    CodeReused,
    /// The code is past its expiry.
    CodeExpired,
    /// The user unlinked the app since the code was issued.
    CodeUnlinked,
    /// `refresh_token` is missing.
    RefreshTokenMissing,
    /// Token exchange (RFC 8693 §2.2.2 `invalid_request`): `subject_token` or its type is
    /// missing, or a token type is not an access token's.
    SubjectTokenMissing,
    /// Token exchange: a token type this server does not exchange (only access tokens).
    UnsupportedTokenType,
    /// Token exchange: the subject token is not a live access token of this server, or not
    /// one the client holds (issued to it, or for a resource it serves).
    SubjectTokenInvalid,
    /// Token exchange: the actor token is not the client's own live client credentials token.
    ActorTokenInvalid,
    /// The JWT-bearer grant (RFC 7523 §2.1) without its `assertion`.
    AssertionMissing,
    /// The JWT-bearer grant: the assertion is not an identity assertion (ID-JAG) of a trusted
    /// provider, for this server and this client, live, correctly signed (RFC 7523 §3.1
    /// `invalid_grant`).
    AssertionInvalid,
    /// The JWT-bearer grant: the identity assertion was used before (its `jti`).
    AssertionReused,
    /// The JWT-bearer grant: the provider's subject is no account here.
    AssertionSubjectUnknown,
    /// No such refresh token.
    UnknownRefreshToken,
    /// The refresh token's grant was revoked.
    RefreshTokenRevoked,
    /// The user unlinked the app since the refresh token was issued.
    RefreshTokenUnlinked,
    /// The refresh token went unused for the idle lifetime
    /// ([`Policy::refresh_idle_lifetime`](crate::Policy)): its grant ended by itself.
    RefreshTokenIdle,
    /// The refresh token was superseded by a rotation and is presented again outside its
    /// retry window, or after its successor was used: it is in two hands, so its grant is
    /// revoked (RFC 9700 §4.14.2).
    RefreshTokenReused,
    /// A retry of a rotated refresh (inside its window) asked for other scopes or resources
    /// than the refresh it repeats: only the same request gets the same answer.
    RetryDiffers,
    /// The refresh token was issued to another app.
    RefreshTokenOfAnotherApp,
    /// The refresh token came from a secret-authenticated exchange and no secret was sent.
    SecretRequired,
    /// A refresh asked for scopes beyond the grant's.
    ScopeWidened,

    // ---- bearer tokens (`/2/` endpoints, revocation) -----------------------------------------
    /// No bearer credentials (RFC 6750 §3.1: a challenge without an error code).
    BearerMissing,
    /// A malformed `Authorization` header, or several.
    MalformedBearer,
    /// No such access token.
    UnknownAccessToken,
    /// The access token is past its expiry.
    AccessTokenExpired,
    /// The access token's grant was revoked.
    AccessTokenRevoked,
    /// The user unlinked the app since the token was issued.
    AccessTokenUnlinked,
    /// The token's app is no longer in the configuration: removing an app switches it off.
    AppRemoved,
    /// The token lacks the endpoint's Required Scope.
    MissingScope(Scope),

    // ---- revocation (RFC 7009) and introspection (RFC 7662), standards profile --------------
    /// No `token` parameter.
    TokenMissing,
    /// The token to revoke was issued to another app (RFC 7009 §2.1).
    TokenOfAnotherApp,
    /// The endpoint takes only a confidential client authenticated with its secret: a
    /// confidential app that sent none, or any client at introspection that is not one.
    ConfidentialClientRequired,

    // ---- resource indicators (RFC 8707), standards profile ----------------------------------
    /// A `resource` this server issues no tokens for, or one beyond what was consented to.
    InvalidTarget,
    /// The access token is for another resource than the API it was presented to.
    TokenForAnotherResource,

    // ---- dynamic client registration (RFC 7591), standards profile --------------------------
    /// Registration takes an initial access token, and none of the configured ones was
    /// presented (RFC 7591 §3; answered as RFC 6750 `invalid_token`).
    InitialAccessTokenInvalid,
    /// A redirect URI that cannot be registered (RFC 7591 §3.2.2 `invalid_redirect_uri`): why.
    InvalidRedirectUri(String),
    /// A request to a registered client's configuration without that client's current
    /// registration access token, or for a client that does not exist (RFC 7592 §2.1: both
    /// `401`, so neither tells whether the client exists).
    RegistrationTokenInvalid,
    /// Too many registrations from this source, or from all sources together, in the current
    /// window ([`per_source`](crate::RegistrationPolicy::per_source),
    /// [`all_sources`](crate::RegistrationPolicy::all_sources)): 429, retry after this long.
    TooManyRegistrations(Seconds),
    /// Client metadata that cannot be registered (RFC 7591 §3.2.2 `invalid_client_metadata`):
    /// why.
    InvalidClientMetadata(String),

    // ---- client ID metadata documents, standards profile ------------------------------------
    /// The `client_id` names a metadata document that could not be used
    /// (`invalid_client`; at the authorization endpoint an error page, never a redirect): why.
    /// The description names the URL and a fixed reason; the detail is the host's to log.
    ClientDocument(Box<UnusableDocument>),
    /// The JWK set the client's `jwks_uri` names could not be used (`invalid_client`): which,
    /// and why.
    ClientKeys(Box<UnusableDocument>),
    /// The JWK set of the identity provider whose assertion was presented (its `jwks_uri`)
    /// could not be used (`invalid_grant`: the assertion cannot be checked): which, and why.
    ProviderKeys(Box<UnusableDocument>),

    // ---- DPoP (RFC 9449), standards profile -------------------------------------------------
    /// The DPoP proof presented cannot be taken (`invalid_dpop_proof`): why.
    DpopProofInvalid(DpopFault),
    /// `dpop_jkt` on an authorization request is not a key thumbprint (43 base64url
    /// characters), or comes with the implicit grant (`invalid_request`).
    DpopJktMalformed,
    /// The client must present a DPoP proof at the token endpoint, and sent none
    /// ([`DpopRequired`](crate::DpopRequired); `invalid_dpop_proof`).
    DpopProofRequired,
    /// The proof carries no nonce, or one no longer taken, where this server asks for one
    /// (`use_dpop_nonce`, with the current nonce in `DPoP-Nonce`).
    DpopNonceRequired,
    /// The code or refresh token is bound to a key (`dpop_jkt`, a public client's proof) and the
    /// request came with no proof of it (`invalid_grant`): neither is revoked.
    GrantBoundToAnotherKey,
    /// The access token is bound to a key (DPoP) and was presented with a proof of another key,
    /// or as a bearer token (`invalid_token`).
    TokenBoundToAnotherKey,
}

/// Why a DPoP proof cannot be taken ([`Refusal::DpopProofInvalid`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DpopFault {
    /// Not a proof (RFC 9449 §4.2): no single compact JWS with `typ: dpop+jwt`, an asymmetric
    /// `alg` this server verifies, a public `jwk` of that algorithm, and `jti`, `htm`, `htu`,
    /// `iat` (and `ath`, `nonce` strings where present).
    Malformed,
    /// For another HTTP method (`htm`).
    Method,
    /// For another URI (`htu`, compared without query and fragment).
    Uri,
    /// Without the hash of the access token it came with, or with another token's (`ath`).
    TokenHash,
    /// Made too long ago, or ahead of this server's clock (`iat`, outside
    /// [`Dpop::proof_window`](crate::Dpop::proof_window)).
    Time,
    /// Its signature does not hold.
    Signature,
    /// Presented before, within its window (`jti`).
    Replayed,
}

impl DpopFault {
    /// Its name in `snake_case`, for logs.
    pub fn name(self) -> &'static str {
        match self {
            DpopFault::Malformed => "malformed",
            DpopFault::Method => "method",
            DpopFault::Uri => "uri",
            DpopFault::TokenHash => "token_hash",
            DpopFault::Time => "time",
            DpopFault::Signature => "signature",
            DpopFault::Replayed => "replayed",
        }
    }
}

/// A client's metadata document or key set that could not be used: its URL, and why. (Boxed in
/// a [`Refusal`]: every refusal moves at the size of the largest.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnusableDocument {
    /// The URL fetched (or not, [`DocumentFault::RecentlyFailed`]).
    pub url: String,
    /// Why what came of it cannot be used.
    pub fault: DocumentFault,
}

/// Which of the core's own invariants broke ([`Refusal::Defect`]): each is a bug to report.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defect {
    /// A request asked for more reads and writes than [`Request::max_steps`](crate::Request::max_steps)
    /// promises.
    StepBound,
    /// A request asked for more signatures than any needs (a client assertion's, an identity
    /// assertion's and a DPoP proof's).
    SecondSignature,
    /// A commit's or a fetch's outcome reached a request that was not waiting for it.
    OutOfState,
    /// A decision needed something other than records where only records can be read.
    UnexpectedNeed,
}

impl Defect {
    /// Its name in `snake_case` (`step_bound`, …), as the audit event carries it.
    pub fn name(self) -> &'static str {
        match self {
            Defect::StepBound => "step_bound",
            Defect::SecondSignature => "second_signature",
            Defect::OutOfState => "out_of_state",
            Defect::UnexpectedNeed => "unexpected_need",
        }
    }
}

/// Why a client's metadata document or key set could not be used. A failure is remembered
/// under its URL ([`documents`](crate::DocumentPolicy::failure_backoff)): the URL is not fetched
/// again until the backoff has passed.
///
/// What goes to the client names none of the remote server's answer — no status, no timing,
/// no text of the document ([`described`](DocumentFault::described)): a fetch must not
/// become a probe of what answers where. The detail ([`detail`](DocumentFault::detail)) goes
/// into the audit event of the failure ([`AuditEvent::FetchFailed`](crate::AuditEvent)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocumentFault {
    /// Its host is not among [`DocumentPolicy::hosts`](crate::DocumentPolicy::hosts).
    HostNotAllowed,
    /// The host's fetch refused the address: not https, or a private, loopback, link-local or
    /// other special-use address (§6.5).
    AddressRefused,
    /// The fetch failed: no connection, a TLS or DNS error.
    Unreachable,
    /// The fetch took longer than [`DocumentPolicy::timeout_ms`](crate::DocumentPolicy::timeout_ms).
    Timeout,
    /// The document is larger than [`DocumentPolicy::max_bytes`](crate::DocumentPolicy::max_bytes).
    TooLarge,
    /// The answer was not `200 OK` (a redirect included: none is followed, §4).
    Status(u16),
    /// The body is not a JSON object.
    NotJson,
    /// Its `client_id` is not the URL it was fetched from (§4.1).
    WrongClientId,
    /// Its metadata cannot be used: why (the document's own words may be in it).
    Invalid(String),
    /// A fetch of this URL failed lately: it is not fetched again before its backoff ends.
    RecentlyFailed,
}

impl DocumentFault {
    /// The fixed reason sent to the client (`error_description`, the error page), after what
    /// was fetched and its URL.
    fn reason(&self) -> &'static str {
        match self {
            DocumentFault::HostNotAllowed => "is on a host this server takes no documents from",
            DocumentFault::AddressRefused
            | DocumentFault::Unreachable
            | DocumentFault::Timeout
            | DocumentFault::TooLarge
            | DocumentFault::Status(_)
            | DocumentFault::RecentlyFailed => "could not be fetched",
            DocumentFault::NotJson => "is not a JSON object",
            DocumentFault::WrongClientId => "names another client_id than its own URL",
            DocumentFault::Invalid(_) => "cannot be used",
        }
    }

    /// The sentence sent as `error_description` for `what` (whose document or key set) at `url`:
    /// the URL and a fixed reason, never the remote detail.
    pub fn described(&self, what: &str, url: &str) -> String {
        format!("{what} {url} {}", self.reason())
    }

    /// What happened, for the operator's log: the remote status, the kind of failure, what
    /// was wrong with the metadata.
    pub fn detail(&self) -> String {
        match self {
            DocumentFault::HostNotAllowed => "host_not_allowed".into(),
            DocumentFault::AddressRefused => "address_refused".into(),
            DocumentFault::Unreachable => "unreachable".into(),
            DocumentFault::Timeout => "timeout".into(),
            DocumentFault::TooLarge => "too_large".into(),
            // As u64: its formatting is linked already.
            DocumentFault::Status(status) => format!("status {}", u64::from(*status)),
            DocumentFault::NotJson => "not_json".into(),
            DocumentFault::WrongClientId => "wrong_client_id".into(),
            DocumentFault::Invalid(why) => format!("invalid: {why}"),
            DocumentFault::RecentlyFailed => "recently_failed".into(),
        }
    }
}

impl Refusal {
    /// How long the client should wait before it tries again, when waiting is all it takes: the
    /// attempt limit's wait (at least a second), or a second for a store that failed, stayed
    /// contended or does not show a write yet. Sent as `Retry-After`; `None` for every refusal
    /// that the same request would meet again.
    pub fn retry_after(&self) -> Option<Seconds> {
        use Refusal::*;
        match self {
            TooManyAttempts(wait) | TooManyRegistrations(wait) => Some(Seconds(wait.0.max(1))),
            Contention | StorageUnavailable | StorageFault(_) | RetryNotYetVisible => {
                Some(Seconds(1))
            }
            _ => None,
        }
    }

    /// The reason's name in `snake_case` (`code_expired`, `missing_scope`), for logs and for
    /// hosts in other languages: one of [`Refusal::NAMES`].
    pub fn name(&self) -> &'static str {
        self.named()
    }
}

names! {
    /// Every reason's name, in declaration order: what hosts in other languages may see (the
    /// package's TypeScript types are generated from it).
    Refusal:
    TooLarge => "too_large",
    BodyTooLarge => "body_too_large",
    NotFound => "not_found",
    MethodNotAllowed => "method_not_allowed",
    Contention => "contention",
    Defect => "defect",
    StorageUnavailable => "storage_unavailable",
    StorageFault => "storage_fault",
    RetryNotYetVisible => "retry_not_yet_visible",
    TooManyAttempts => "too_many_attempts",
    MalformedAttempter => "malformed_attempter",
    CrossOriginRefused => "cross_origin_refused",
    Repeated => "repeated",
    ClientIdMissing => "client_id_missing",
    UnknownClient => "unknown_client",
    RedirectUriNotRegistered => "redirect_uri_not_registered",
    RedirectUriRequired => "redirect_uri_required",
    ResponseTypeMissing => "response_type_missing",
    UnsupportedResponseType => "unsupported_response_type",
    ImplicitNotAllowed => "implicit_not_allowed",
    ImplicitWithoutRedirectUri => "implicit_without_redirect_uri",
    ImplicitWithChallenge => "implicit_with_challenge",
    InvalidTokenAccessType => "invalid_token_access_type",
    OfflineRequiresCode => "offline_requires_code",
    OfflineAccessWithOnline => "offline_access_with_online",
    MalformedScope => "malformed_scope",
    ScopeNotEnabled => "scope_not_enabled",
    ChallengeMethodWithoutChallenge => "challenge_method_without_challenge",
    PkceRequired => "pkce_required",
    UnsupportedChallengeMethod => "unsupported_challenge_method",
    S256Required => "s256_required",
    MalformedChallenge => "malformed_challenge",
    AccessDenied => "access_denied",
    CrossSiteConsent => "cross_site_consent",
    IncompleteConsentForm => "incomplete_consent_form",
    NotAForm => "not_a_form",
    ParametersInQuery => "parameters_in_query",
    ParametersSplit => "parameters_split",
    GrantTypeMissing => "grant_type_missing",
    UnsupportedGrantType => "unsupported_grant_type",
    GrantNotAllowed => "grant_not_allowed",
    ClientAuthenticationMissing => "client_authentication_missing",
    MalformedBasic => "malformed_basic",
    MultipleClientAuthentications => "multiple_client_authentications",
    ConflictingClientId => "conflicting_client_id",
    SecretWithoutClientId => "secret_without_client_id",
    UnsupportedAuthenticationScheme => "unsupported_authentication_scheme",
    ClientAuthenticationFailed => "client_authentication_failed",
    ProofMissing => "proof_missing",
    CodeMissing => "code_missing",
    MalformedVerifier => "malformed_verifier",
    UnknownCode => "unknown_code",
    CodeOfAnotherApp => "code_of_another_app",
    RedirectUriMismatch => "redirect_uri_mismatch",
    VerifierMissing => "verifier_missing",
    VerifierMismatch => "verifier_mismatch",
    VerifierWithoutChallenge => "verifier_without_challenge",
    CodeReused => "code_reused",
    CodeExpired => "code_expired",
    CodeUnlinked => "code_unlinked",
    RefreshTokenMissing => "refresh_token_missing",
    SubjectTokenMissing => "subject_token_missing",
    UnsupportedTokenType => "unsupported_token_type",
    SubjectTokenInvalid => "subject_token_invalid",
    ActorTokenInvalid => "actor_token_invalid",
    AssertionMissing => "assertion_missing",
    AssertionInvalid => "assertion_invalid",
    AssertionReused => "assertion_reused",
    AssertionSubjectUnknown => "assertion_subject_unknown",
    UnknownRefreshToken => "unknown_refresh_token",
    RefreshTokenRevoked => "refresh_token_revoked",
    RefreshTokenIdle => "refresh_token_idle",
    RefreshTokenUnlinked => "refresh_token_unlinked",
    RefreshTokenReused => "refresh_token_reused",
    RetryDiffers => "retry_differs",
    RefreshTokenOfAnotherApp => "refresh_token_of_another_app",
    SecretRequired => "secret_required",
    ScopeWidened => "scope_widened",
    BearerMissing => "bearer_missing",
    MalformedBearer => "malformed_bearer",
    UnknownAccessToken => "unknown_access_token",
    AccessTokenExpired => "access_token_expired",
    AppRemoved => "app_removed",
    InitialAccessTokenInvalid => "initial_access_token_invalid",
    InvalidRedirectUri => "invalid_redirect_uri",
    RegistrationTokenInvalid => "registration_token_invalid",
    TooManyRegistrations => "too_many_registrations",
    InvalidClientMetadata => "invalid_client_metadata",
    AccessTokenRevoked => "access_token_revoked",
    AccessTokenUnlinked => "access_token_unlinked",
    MissingScope => "missing_scope",
    TokenMissing => "token_missing",
    TokenOfAnotherApp => "token_of_another_app",
    ConfidentialClientRequired => "confidential_client_required",
    InvalidTarget => "invalid_target",
    TokenForAnotherResource => "token_for_another_resource",
    ClientDocument => "client_document",
    ClientKeys => "client_keys",
    ProviderKeys => "provider_keys",
    DpopProofInvalid => "dpop_proof_invalid",
    DpopJktMalformed => "dpop_jkt_malformed",
    DpopProofRequired => "dpop_proof_required",
    DpopNonceRequired => "dpop_nonce_required",
    GrantBoundToAnotherKey => "grant_bound_to_another_key",
    TokenBoundToAnotherKey => "token_bound_to_another_key",
}
