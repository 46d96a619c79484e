//! The PKCE client machine: the other side of the flow, for public clients (a browser page, a
//! CLI, a mobile app) that hold no secret.
//!
//! Same style as the server: [`handle`](PkceClient::handle) is a pure transition from a
//! [`ClientState`] and a [`ClientInput`] (with the time and fresh entropy) to the next state and
//! one [`ClientStep`] for the host to carry out. The host stores the state between calls (in
//! memory, or `sessionStorage` across the redirect) and performs the navigation and HTTP
//! requests it is told to, feeding the answers back in.
//!
//! | state | input | next state, step |
//! |---|---|---|
//! | any | `Begin` | `Authorizing`, `Navigate` to the authorization URL |
//! | `Authorizing` | `Redirected` / `CodeEntered` | `Exchanging`, `Send` the code exchange |
//! | `Exchanging` | `Response` 200 | `Authorized`, `Authorized` |
//! | `Exchanging` | `Response` 400 `use_dpop_nonce` | same, `Send` the exchange again with the nonce (DPoP, once per new nonce) |
//! | `Authorized` | `Call` | same, `Attach` the bearer header — or `Refreshing`, `Send` the refresh when due (offline), or `Idle`, `Reauthorize` once expired (online) |
//! | `Authorized` | `Unauthorized` (the API said 401) | `Refreshing`, `Send` (offline) or `Idle`, `Reauthorize` (online) — or, with DPoP and a new nonce, same, `Attach` again |
//! | `Refreshing` | `Response` 200 | `Authorized`, `Authorized` |
//! | `Authorized` | `Revoke` | `Revoking`, `Send` the revocation |
//! | `Revoking` | `Response` | `Idle`, `SignedOut` |
//!
//! Anything else is a [`ClientStep::Failed`] with the reason, and a state that loses nothing: a
//! forged redirect with the wrong `state` leaves the real authorization in progress.
//!
//! **DPoP (RFC 9449).** With [`ClientConfig::dpop_public_key`], the tokens are bound to the
//! host's key: the authorization URL carries the key's thumbprint (`dpop_jkt`), and every request
//! to the token endpoint, every bound API call and the revocation come with a proof for the host
//! to sign ([`ClientRequest::proof`], [`ClientStep::Attach`]'s `proof`, a [`ProofToSign`]). The
//! key is the host's, kept where it cannot be read (a non-extractable WebCrypto key); the
//! machine sees its public half only. A server's `use_dpop_nonce` is met by sending again with
//! its nonce, once per nonce, and the nonce is kept for the next proof to that server.
//!
//! ```
//! use edgegrant::client::*;
//! use edgegrant::UnixTime;
//!
//! let client = PkceClient::new(ClientConfig {
//!     client_id: "my-app".into(),
//!     authorize_url: "https://auth.example/oauth2/authorize".into(),
//!     token_url: "https://auth.example/oauth2/token".into(),
//!     revoke_url: "https://auth.example/2/auth/token/revoke".into(),
//!     redirect_uri: Some("https://app.example/cb".into()),
//!     scopes: vec!["account_info.read".into()],
//!     access_type: ClientAccessType::Offline,
//!     refresh_margin: 300,
//!     dpop_public_key: None,
//! })
//! .unwrap();
//! let entropy = ClientEntropy::new([7; CLIENT_ENTROPY_LEN]);
//! let now = UnixTime(1_700_000_000);
//! let begun = client.handle(&ClientState::Idle, &ClientInput::Begin, now, &entropy);
//! let ClientStep::Navigate { url } = &begun.step else { unreachable!() };
//! assert!(url.starts_with("https://auth.example/oauth2/authorize?client_id=my-app&response_type=code"));
//! assert!(url.contains("code_challenge_method=S256"));
//! ```

use crate::prelude::*;
mod proof;
mod wire;

use core::fmt;

use base64ct::{Base64UrlUnpadded, Encoding as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use subtle::ConstantTimeEq;

use crate::pkce::{CodeChallenge, CodeVerifier};
use crate::time::{is_expired, UnixTime};
use crate::wire::http::HttpResponse;

pub use proof::ProofToSign;
pub use wire::ClientRequest;

use proof::{ProofKey, ProofOf};

/// How many bytes of entropy each call takes: 32 for the code verifier, 16 for `state` (the
/// first 16 are a DPoP proof's `jti`).
pub const CLIENT_ENTROPY_LEN: usize = 48;

/// Fresh random bytes from the host, drawn for every call: [`ClientInput::Begin`] makes the
/// PKCE verifier and `state` of them, a DPoP proof its `jti`.
#[derive(Clone)]
pub struct ClientEntropy([u8; CLIENT_ENTROPY_LEN]);

impl ClientEntropy {
    /// Wraps bytes drawn from a cryptographically secure generator.
    pub fn new(bytes: [u8; CLIENT_ENTROPY_LEN]) -> Self {
        ClientEntropy(bytes)
    }

    /// The bytes of a slice of exactly [`CLIENT_ENTROPY_LEN`] bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(ClientEntropy)
    }

    fn verifier(&self) -> Option<CodeVerifier> {
        let bytes = self.0.get(..32)?;
        CodeVerifier::new(&Base64UrlUnpadded::encode_string(bytes)) // 43 unreserved characters
    }

    fn state(&self) -> String {
        Base64UrlUnpadded::encode_string(self.0.get(32..).unwrap_or_default())
    }

    /// A proof's unique id (§4.2): 128 random bits.
    fn jti(&self) -> String {
        Base64UrlUnpadded::encode_string(self.0.get(..16).unwrap_or_default())
    }
}

impl fmt::Debug for ClientEntropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientEntropy(<redacted>)")
    }
}

/// The access the client asks for (`token_access_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAccessType {
    /// A short-lived access token only: when it expires, the user authorizes again.
    Online,
    /// A refresh token as well: new access tokens without the user.
    Offline,
}

impl ClientAccessType {
    fn as_str(self) -> &'static str {
        match self {
            ClientAccessType::Online => "online",
            ClientAccessType::Offline => "offline",
        }
    }
}

/// What the client is and where the server is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientConfig {
    /// The app key (`client_id`).
    pub client_id: String,
    /// The authorization endpoint, e.g. `https://www.dropbox.com/oauth2/authorize`.
    pub authorize_url: String,
    /// The token endpoint.
    pub token_url: String,
    /// The revocation endpoint (`/2/auth/token/revoke`).
    pub revoke_url: String,
    /// Where the server sends the browser back; `None`: the server shows the code and the user
    /// types it in ([`ClientInput::CodeEntered`]).
    #[serde(default)]
    pub redirect_uri: Option<String>,
    /// The scopes asked for; empty: the app's scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Online or offline access.
    pub access_type: ClientAccessType,
    /// Refresh this many seconds before the access token expires (covers clock skew and the
    /// time a request takes).
    #[serde(default = "default_refresh_margin")]
    pub refresh_margin: u64,
    /// Bind the tokens to a key (DPoP, RFC 9449): the public half of the host's signing key as
    /// a JWK — EC P-256 (ES256) or RSA of 2048 bits or more (RS256), as WebCrypto exports it.
    /// The host keeps the private half and signs each [`ProofToSign`]. `None`: bearer tokens.
    #[serde(default)]
    pub dpop_public_key: Option<Value>,
}

fn default_refresh_margin() -> u64 {
    300
}

/// A [`ClientConfig`] that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid client configuration: {0}")]
pub struct ClientConfigError(String);

macro_rules! held_secret {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        /// Serializable, so the host can keep the state; never shown by `Debug`.
        #[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The secret itself.
            pub fn expose(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "(<redacted>)"))
            }
        }
    };
}

held_secret!(
    /// The code verifier of an authorization in progress.
    HeldVerifier
);
held_secret!(
    /// An access token the client holds.
    HeldAccessToken
);
held_secret!(
    /// A refresh token the client holds.
    HeldRefreshToken
);

/// What the client holds once authorized.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The bearer token for API calls.
    pub access_token: HeldAccessToken,
    /// When the access token stops working (`None`: it does not expire).
    pub expires_at: Option<UnixTime>,
    /// Present for offline access.
    pub refresh_token: Option<HeldRefreshToken>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The user's account (`dbid:…`), if the server said.
    pub account_id: Option<String>,
    /// The user's legacy id, if the server said.
    pub uid: Option<String>,
    /// Whether this access token came from a refresh forced by a 401: if it is refused too,
    /// refreshing again would loop, so the user authorizes again instead.
    #[serde(default)]
    pub after_refusal: bool,
    /// Whether the tokens are bound to the client's DPoP key (`token_type: DPoP`): the access
    /// token goes as `Authorization: DPoP` with a proof, never as a bearer token.
    #[serde(default)]
    pub bound: bool,
    /// The nonce the authorization server last handed out (`DPoP-Nonce`), for the next proof.
    #[serde(default)]
    pub server_nonce: Option<String>,
    /// The nonce the API last handed out, for the next proof to it.
    #[serde(default)]
    pub api_nonce: Option<String>,
}

impl Session {
    /// When the client should refresh: `refresh_margin` seconds before expiry.
    pub fn refresh_due_at(&self, margin: u64) -> Option<UnixTime> {
        self.expires_at
            .map(|at| UnixTime(at.0.saturating_sub(margin)))
    }

    /// What the host may show: everything but the secrets.
    pub fn view(&self) -> SessionView {
        SessionView {
            expires_at: self.expires_at,
            refreshable: self.refresh_token.is_some(),
            scopes: self.scopes.clone(),
            account_id: self.account_id.clone(),
            uid: self.uid.clone(),
            bound: self.bound,
        }
    }
}

/// A [`Session`] without its secrets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    /// When the access token stops working (`None`: never).
    pub expires_at: Option<UnixTime>,
    /// Whether the client holds a refresh token.
    pub refreshable: bool,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The user's account id.
    pub account_id: Option<String>,
    /// The user's legacy id.
    pub uid: Option<String>,
    /// Whether the tokens are bound to the client's DPoP key.
    pub bound: bool,
}

/// Where the client stands. The host keeps it between calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum ClientState {
    /// Not authorized.
    Idle,
    /// The user was sent to the authorization URL.
    Authorizing {
        /// The `state` value the redirect must carry back.
        state: String,
        /// The PKCE secret, sent only with the code exchange.
        verifier: HeldVerifier,
    },
    /// The code exchange was sent at `sent_at`.
    Exchanging {
        /// When the request left: `expires_in` counts from here, to err on the early side.
        sent_at: UnixTime,
        /// With DPoP, the code and the verifier, to send the exchange again with the nonce the
        /// server asks for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// The PKCE verifier sent with `code`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verifier: Option<HeldVerifier>,
        /// The nonce its proof carried.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nonce: Option<String>,
    },
    /// Tokens in hand.
    Authorized {
        /// The tokens.
        session: Session,
    },
    /// A refresh was sent at `sent_at`.
    Refreshing {
        /// The tokens being refreshed.
        session: Session,
        /// When the request left.
        sent_at: UnixTime,
        /// Why: a 401 (see [`Session::after_refusal`]), or to revoke with a live access token.
        reason: RefreshReason,
    },
    /// A revocation was sent.
    Revoking {
        /// The tokens being revoked.
        session: Session,
    },
}

/// Why a refresh was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshReason {
    /// The access token is due to expire.
    Due,
    /// The API refused the access token.
    Refused,
    /// The user asked to revoke, and revocation needs a live access token.
    ToRevoke,
}

/// What happened, as the host saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClientInput {
    /// Start (or restart) authorization.
    Begin,
    /// The browser came back to the redirect URI at `url`.
    Redirected {
        /// The whole URL, query included.
        url: String,
    },
    /// The user typed in the code the server displayed (flows without a redirect URI).
    CodeEntered {
        /// The code.
        code: String,
    },
    /// The answer to the request of the last [`ClientStep::Send`].
    Response {
        /// Status and body.
        response: HttpResponse,
    },
    /// The host is about to call the API.
    Call {
        /// The call's method: what its DPoP proof names (needed when the tokens are bound).
        #[serde(default)]
        method: Option<String>,
        /// The call's URL (needed when the tokens are bound).
        #[serde(default)]
        url: Option<String>,
    },
    /// The API answered 401 to the access token.
    Unauthorized {
        /// The answer's `WWW-Authenticate` header, if any.
        #[serde(default)]
        challenge: Option<String>,
        /// The answer's `DPoP-Nonce` header, if any.
        #[serde(default)]
        nonce: Option<String>,
        /// The call's method, to make it again with the nonce the API asks for.
        #[serde(default)]
        method: Option<String>,
        /// The call's URL.
        #[serde(default)]
        url: Option<String>,
    },
    /// End the authorization: revoke the tokens.
    Revoke,
}

/// What the host does next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum ClientStep {
    /// Send the user agent to `url` (the authorization URL).
    Navigate {
        /// Where.
        url: String,
    },
    /// Make this request and feed the answer back as [`ClientInput::Response`].
    Send {
        /// The request.
        request: ClientRequest,
    },
    /// Add this `Authorization` header value to the API call, and with bound tokens the
    /// `DPoP` header of the signed proof.
    Attach {
        /// `Bearer …`, or `DPoP …` for bound tokens.
        authorization: String,
        /// The proof to sign and send as `DPoP` (bound tokens only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proof: Option<ProofToSign>,
    },
    /// Tokens obtained or refreshed.
    Authorized {
        /// What they allow.
        session: SessionView,
    },
    /// The tokens are gone or useless: send the user through authorization again (`Begin`).
    Reauthorize {
        /// Why, for the user.
        reason: String,
    },
    /// The tokens are revoked and forgotten.
    SignedOut,
    /// Nothing to do but report the problem; the state says what still holds.
    Failed {
        /// What went wrong.
        error: ClientError,
    },
}

/// Why a step failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClientError {
    /// The redirect's `state` is missing or not the one sent: possibly forged (RFC 6749 §10.12).
    /// The authorization in progress continues.
    #[error("the redirect's state does not match the authorization in progress")]
    StateMismatch,
    /// The redirect went somewhere other than the configured redirect URI.
    #[error("the redirect is not to the configured redirect URI")]
    WrongRedirectTarget,
    /// The server refused the authorization (`error` in the redirect, e.g. `access_denied`).
    #[error("authorization refused: {error}")]
    AuthorizationRefused {
        /// The RFC 6749 §4.1.2.1 error code.
        error: String,
        /// The server's description, if any.
        description: Option<String>,
    },
    /// The redirect carried neither a code nor an error.
    #[error("the redirect carries no code")]
    MissingCode,
    /// The token endpoint answered with an error.
    #[error("the token endpoint refused ({status}): {error}")]
    TokenRefused {
        /// The HTTP status.
        status: u16,
        /// The RFC 6749 §5.2 error code.
        error: String,
        /// The server's description, if any.
        description: Option<String>,
    },
    /// The server's answer is not what RFC 6749 says it must be.
    #[error("malformed response: {reason}")]
    MalformedResponse {
        /// What is wrong with it.
        reason: String,
    },
    /// A call with tokens bound to a DPoP key must name its method and URL, which the proof
    /// signs.
    #[error("a call with DPoP-bound tokens needs its method and URL")]
    CallTargetMissing,
    /// The revocation endpoint did not confirm.
    #[error("revocation failed with status {status}")]
    RevocationFailed {
        /// The HTTP status.
        status: u16,
    },
    /// This input makes no sense in this state (a response with no request out, a call without
    /// tokens, a redirect with no authorization in progress).
    #[error("{input} is not expected while {state}")]
    Unexpected {
        /// The input's kind.
        input: String,
        /// The state's name.
        state: String,
    },
}

/// The next state and what the host does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientTransition {
    /// Keep this for the next call.
    pub state: ClientState,
    /// Carry this out.
    pub step: ClientStep,
}

/// A checked [`ClientConfig`], ready to drive transitions.
#[derive(Clone, Debug)]
pub struct PkceClient {
    config: ClientConfig,
    /// The key of `dpop_public_key`, read once.
    proof_key: Option<ProofKey>,
}

impl PkceClient {
    /// Checks the configuration: a client id, absolute http(s) endpoint URLs, a redirect URI
    /// without a fragment (RFC 6749 §3.1.2), and a DPoP key that is a public key this machine
    /// makes proofs for.
    pub fn new(config: ClientConfig) -> Result<Self, ClientConfigError> {
        let fail = |what: &str| Err(ClientConfigError(what.to_owned()));
        if config.client_id.is_empty() {
            return fail("client_id is empty");
        }
        for (name, url) in [
            ("authorize_url", &config.authorize_url),
            ("token_url", &config.token_url),
            ("revoke_url", &config.revoke_url),
        ] {
            if !wire::is_http_url(url) || url.contains('#') {
                return fail(&format!(
                    "{name} must be an absolute http(s) URL without fragment"
                ));
            }
        }
        if let Some(uri) = &config.redirect_uri {
            if uri.is_empty() || uri.contains('#') {
                return fail("redirect_uri must be non-empty and without fragment");
            }
        }
        if config
            .scopes
            .iter()
            .any(|s| s.is_empty() || s.contains(' '))
        {
            return fail("a scope is empty or contains a space");
        }
        let proof_key = match &config.dpop_public_key {
            Some(jwk) => Some(ProofKey::of(jwk).map_err(|e| ClientConfigError(e.to_owned()))?),
            None => None,
        };
        Ok(PkceClient { config, proof_key })
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The transition for `input` in `state` at `now`. Pure; never panics; every input in every
    /// state has an answer.
    pub fn handle(
        &self,
        state: &ClientState,
        input: &ClientInput,
        now: UnixTime,
        entropy: &ClientEntropy,
    ) -> ClientTransition {
        let config = &self.config;
        let out = Outgoing {
            config,
            key: self.proof_key.as_ref(),
            now,
            entropy,
        };
        let stay = |step| ClientTransition {
            state: state.clone(),
            step,
        };
        let go = |state, step| ClientTransition { state, step };
        match (state, input) {
            (_, ClientInput::Begin) => match entropy.verifier() {
                Some(verifier) => {
                    let challenge = CodeChallenge::s256(&verifier);
                    let state_value = entropy.state();
                    let key = self.proof_key.as_ref().map(|key| key.thumbprint.as_str());
                    let url = wire::authorization_url(config, &state_value, &challenge.value, key);
                    go(
                        ClientState::Authorizing {
                            state: state_value,
                            verifier: HeldVerifier(verifier.expose().to_owned()),
                        },
                        ClientStep::Navigate { url },
                    )
                }
                None => stay(unexpected(input, state)), // unreachable: 32 bytes always encode to 43
            },

            (
                ClientState::Authorizing {
                    state: sent,
                    verifier,
                },
                ClientInput::Redirected { url },
            ) => {
                let redirect = match wire::parse_redirect(config, url) {
                    Ok(redirect) => redirect,
                    Err(error) => return stay(ClientStep::Failed { error }),
                };
                // Check state before anything else: a forged redirect must change nothing.
                let matches = redirect
                    .state
                    .as_deref()
                    .is_some_and(|got| bool::from(got.as_bytes().ct_eq(sent.as_bytes())));
                if !matches {
                    return stay(failed(ClientError::StateMismatch));
                }
                if let Some(error) = redirect.error {
                    let error = ClientError::AuthorizationRefused {
                        error,
                        description: redirect.error_description,
                    };
                    return go(ClientState::Idle, failed(error));
                }
                match redirect.code {
                    Some(code) => out.exchange(verifier, &code, None),
                    None => go(ClientState::Idle, failed(ClientError::MissingCode)),
                }
            }
            (ClientState::Authorizing { verifier, .. }, ClientInput::CodeEntered { code }) => {
                match code.trim() {
                    "" => stay(failed(ClientError::MissingCode)),
                    code => out.exchange(verifier, code, None),
                }
            }

            (
                ClientState::Exchanging {
                    sent_at,
                    code,
                    verifier,
                    nonce,
                },
                ClientInput::Response { response },
            ) => {
                let asked = wire::asks_for_nonce(response);
                if let (Some(code), Some(verifier), Some(fresh)) =
                    (code, verifier, new_nonce(asked, response, nonce.as_deref()))
                {
                    return out.exchange(verifier, code, Some(fresh));
                }
                match wire::parse_token_response(response, out.key.is_some()) {
                    Ok(tokens) => {
                        let mut session = tokens.into_session(*sent_at, None, config);
                        session.server_nonce = wire::nonce_of(response).or_else(|| nonce.clone());
                        authorized(session)
                    }
                    Err(error) => go(ClientState::Idle, failed(error)),
                }
            }

            // Tokens bound to a key this client was not given are of no use to it (a page that
            // lost its key, a configuration changed): only a new authorization helps.
            (
                ClientState::Authorized { session },
                ClientInput::Call { .. } | ClientInput::Unauthorized { .. } | ClientInput::Revoke,
            ) if session.bound && out.key.is_none() => go(
                ClientState::Idle,
                ClientStep::Reauthorize {
                    reason: "the tokens are bound to a DPoP key this client was not given".into(),
                },
            ),
            (ClientState::Authorized { session }, ClientInput::Call { method, url }) => {
                let due = session
                    .refresh_due_at(config.refresh_margin)
                    .is_some_and(|at| now >= at);
                let expired = session.expires_at.is_some_and(|at| is_expired(at, now));
                match (due, &session.refresh_token) {
                    (true, Some(refresh)) => out.refresh(session, refresh, RefreshReason::Due),
                    (_, None) if expired => go(
                        ClientState::Idle,
                        ClientStep::Reauthorize {
                            reason:
                                "the access token expired and this client has online access only"
                                    .into(),
                        },
                    ),
                    _ => stay(out.attach(session, method.as_deref(), url.as_deref())),
                }
            }
            (
                ClientState::Authorized { session },
                ClientInput::Unauthorized {
                    challenge,
                    nonce,
                    method,
                    url,
                },
            ) => {
                // A bound call the API refused for want of its nonce (RFC 9449 §9): make it again
                // with that nonce, once per nonce the API hands out.
                let asked = challenge
                    .as_deref()
                    .is_some_and(|c| wire::challenge_names(c, "use_dpop_nonce"));
                let fresh = nonce
                    .as_deref()
                    .filter(|n| asked && session.bound && !n.is_empty())
                    .filter(|n| session.api_nonce.as_deref() != Some(*n));
                if let Some(fresh) = fresh {
                    let session = Session {
                        api_nonce: Some(fresh.to_owned()),
                        ..session.clone()
                    };
                    let step = out.attach(&session, method.as_deref(), url.as_deref());
                    return go(ClientState::Authorized { session }, step);
                }
                match (&session.refresh_token, session.after_refusal) {
                    (Some(refresh), false) => {
                        out.refresh(session, refresh, RefreshReason::Refused)
                    }
                    (Some(_), true) => go(
                        ClientState::Idle,
                        ClientStep::Reauthorize {
                            reason: "the API refused a freshly refreshed access token".into(),
                        },
                    ),
                    (None, _) => go(
                        ClientState::Idle,
                        ClientStep::Reauthorize {
                            reason: "the API refused the access token and this client has online access only".into(),
                        },
                    ),
                }
            }
            (ClientState::Authorized { session }, ClientInput::Revoke) => {
                let expired = session.expires_at.is_some_and(|at| is_expired(at, now));
                match (&session.refresh_token, expired) {
                    // Revocation authenticates with the access token: get a live one first, or
                    // the refresh token would outlive the sign-out.
                    (Some(refresh), true) => out.refresh(session, refresh, RefreshReason::ToRevoke),
                    (None, true) => go(ClientState::Idle, ClientStep::SignedOut),
                    _ => out.revoke(session),
                }
            }

            (
                ClientState::Refreshing {
                    session,
                    sent_at,
                    reason,
                },
                ClientInput::Response { response },
            ) => {
                let asked = wire::asks_for_nonce(response);
                let fresh = new_nonce(asked, response, session.server_nonce.as_deref());
                if let (Some(fresh), Some(refresh), Some(_)) =
                    (fresh, &session.refresh_token, out.key)
                {
                    let session = Session {
                        server_nonce: Some(fresh),
                        ..session.clone()
                    };
                    return out.refresh(&session, refresh, *reason);
                }
                match wire::parse_token_response(response, out.key.is_some()) {
                    Ok(tokens) => {
                        let mut next = tokens.into_session(*sent_at, Some(session), config);
                        next.after_refusal = *reason == RefreshReason::Refused;
                        next.server_nonce =
                            wire::nonce_of(response).or_else(|| session.server_nonce.clone());
                        match reason {
                            RefreshReason::ToRevoke => out.revoke(&next),
                            _ => authorized(next),
                        }
                    }
                    // The grant is gone (revoked, unlinked): only the user can start a new one.
                    Err(ClientError::TokenRefused { error, .. }) if error == "invalid_grant" => go(
                        ClientState::Idle,
                        ClientStep::Reauthorize {
                            reason: "the refresh token was refused (invalid_grant)".into(),
                        },
                    ),
                    // Anything else (an outage, a 503) may pass: keep the tokens, report it.
                    Err(error) => go(
                        ClientState::Authorized {
                            session: session.clone(),
                        },
                        failed(error),
                    ),
                }
            }

            (ClientState::Revoking { session }, ClientInput::Response { response }) => {
                let asked = response.status == 401
                    && response
                        .header("www-authenticate")
                        .is_some_and(|c| wire::challenge_names(c, "use_dpop_nonce"));
                let fresh = new_nonce(asked, response, session.server_nonce.as_deref());
                if let (Some(fresh), true) = (fresh, session.bound) {
                    let session = Session {
                        server_nonce: Some(fresh),
                        ..session.clone()
                    };
                    return out.revoke(&session);
                }
                // 401 `invalid_token`: the token was already dead, which is what revocation
                // wanted; any other 401 (a proof refused) leaves it alive.
                let dead = response.status == 401
                    && response
                        .header("www-authenticate")
                        .is_none_or(|c| wire::challenge_names(c, "invalid_token"));
                match response.status {
                    200 => go(ClientState::Idle, ClientStep::SignedOut),
                    401 if dead => go(ClientState::Idle, ClientStep::SignedOut),
                    status => go(
                        ClientState::Authorized {
                            session: session.clone(),
                        },
                        failed(ClientError::RevocationFailed { status }),
                    ),
                }
            }

            _ => stay(unexpected(input, state)),
        }
    }
}

/// The nonce `response` hands out when the server `asked` for one it has not been sent
/// (`used`): a server that refuses its own nonce again is not asked a third time.
fn new_nonce(asked: bool, response: &HttpResponse, used: Option<&str>) -> Option<String> {
    wire::nonce_of(response).filter(|nonce| asked && used != Some(nonce.as_str()))
}

fn failed(error: ClientError) -> ClientStep {
    ClientStep::Failed { error }
}

fn unexpected(input: &ClientInput, state: &ClientState) -> ClientStep {
    let input = match input {
        ClientInput::Begin => "begin",
        ClientInput::Redirected { .. } => "redirected",
        ClientInput::CodeEntered { .. } => "code_entered",
        ClientInput::Response { .. } => "response",
        ClientInput::Call { .. } => "call",
        ClientInput::Unauthorized { .. } => "unauthorized",
        ClientInput::Revoke => "revoke",
    };
    let state = match state {
        ClientState::Idle => "idle",
        ClientState::Authorizing { .. } => "authorizing",
        ClientState::Exchanging { .. } => "exchanging",
        ClientState::Authorized { .. } => "authorized",
        ClientState::Refreshing { .. } => "refreshing",
        ClientState::Revoking { .. } => "revoking",
    };
    failed(ClientError::Unexpected {
        input: input.into(),
        state: state.into(),
    })
}

/// What one transition sends: the requests it makes, with their DPoP proofs when the client
/// has a key.
struct Outgoing<'a> {
    config: &'a ClientConfig,
    key: Option<&'a ProofKey>,
    now: UnixTime,
    entropy: &'a ClientEntropy,
}

impl Outgoing<'_> {
    /// `request` with a proof of the key, if the client has one, carrying `nonce`.
    fn signed(&self, mut request: ClientRequest, nonce: Option<&str>) -> ClientRequest {
        request.proof = self.proof(&request.method, &request.url, nonce, None);
        request
    }

    fn proof(
        &self,
        method: &str,
        url: &str,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> Option<ProofToSign> {
        let of = ProofOf {
            method,
            url,
            nonce,
            access_token,
        };
        self.key
            .map(|key| key.proof(of, self.now, &self.entropy.jti()))
    }

    /// The code exchange, with a proof carrying `nonce` if the client has a key (which keeps
    /// the code and the verifier, to send it again with the nonce the server asks for).
    fn exchange(
        &self,
        verifier: &HeldVerifier,
        code: &str,
        nonce: Option<String>,
    ) -> ClientTransition {
        let request = wire::exchange_request(self.config, code, verifier.expose());
        let kept = self.key.is_some();
        ClientTransition {
            step: ClientStep::Send {
                request: self.signed(request, nonce.as_deref()),
            },
            state: ClientState::Exchanging {
                sent_at: self.now,
                code: kept.then(|| code.to_owned()),
                verifier: kept.then(|| verifier.clone()),
                nonce,
            },
        }
    }

    fn refresh(
        &self,
        session: &Session,
        refresh: &HeldRefreshToken,
        reason: RefreshReason,
    ) -> ClientTransition {
        let request = wire::refresh_request(self.config, refresh.expose());
        ClientTransition {
            state: ClientState::Refreshing {
                session: session.clone(),
                sent_at: self.now,
                reason,
            },
            step: ClientStep::Send {
                request: self.signed(request, session.server_nonce.as_deref()),
            },
        }
    }

    /// The revocation, authenticated by the access token it ends (with a proof if bound).
    fn revoke(&self, session: &Session) -> ClientTransition {
        let token = session.access_token.expose();
        let url = &self.config.revoke_url;
        let (authorization, proof) = match session.bound {
            true => (
                format!("DPoP {token}"),
                self.proof("POST", url, session.server_nonce.as_deref(), Some(token)),
            ),
            false => (format!("Bearer {token}"), None),
        };
        ClientTransition {
            state: ClientState::Revoking {
                session: session.clone(),
            },
            step: ClientStep::Send {
                request: wire::revoke_request(self.config, authorization, proof),
            },
        }
    }

    /// The `Authorization` header of an API call of `method` to `url`, with its proof when the
    /// tokens are bound (which must name both).
    fn attach(&self, session: &Session, method: Option<&str>, url: Option<&str>) -> ClientStep {
        let token = session.access_token.expose();
        if !session.bound {
            return ClientStep::Attach {
                authorization: format!("Bearer {token}"),
                proof: None,
            };
        }
        let (Some(method), Some(url)) = (method, url) else {
            return failed(ClientError::CallTargetMissing);
        };
        ClientStep::Attach {
            authorization: format!("DPoP {token}"),
            proof: self.proof(method, url, session.api_nonce.as_deref(), Some(token)),
        }
    }
}

fn authorized(session: Session) -> ClientTransition {
    ClientTransition {
        step: ClientStep::Authorized {
            session: session.view(),
        },
        state: ClientState::Authorized { session },
    }
}
