//! The configuration a host passes on every call: registered apps, policy switches and the
//! Required Scope of each API endpoint — in three parts: the model (this module: what a
//! configuration is, and what the core asks of it), its checks (`checks`: a document becomes a
//! [`Config`] only valid), and its JSON form (`json`: read and written explicitly). The model
//! imports neither; the checks import the model; the JSON form imports both.

use crate::prelude::*;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use serde::{Deserialize, Serialize};

use crate::credentials::{SecretDigest, ServerKey};
use crate::grant_type::GrantType;
use crate::ids::{https_host, AccountId, AppKey, RedirectUri, Uid};
use crate::jose::{Assertion, ClientKey};
use crate::pages::{PageTemplates, Pages};
use crate::scope::{LegacyAccess, Scope, ScopeSet, OFFLINE_ACCESS};
use crate::time::{Seconds, UnixTime};
use crate::wire::uri::{HttpUri, Scheme};

mod checks;
mod json;
mod read;

pub(crate) use checks::check_redirect_uri;
pub use checks::ConfigError;
pub(crate) use json::ScopesJson;
pub use json::CONFIG_TYPESCRIPT;

/// What an app may be granted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Permissions {
    /// A scoped app: the scopes chosen in the app console.
    Scoped {
        /// Every scope the app may request.
        scopes: ScopeSet,
    },
    /// A legacy app: a legacy access type instead of scopes.
    Legacy {
        /// The legacy access type.
        access: LegacyAccess,
    },
}

/// The token type an app gets when `token_access_type` is omitted (SPEC.md, Begin authorization).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum DefaultTokenType {
    /// Short-lived access tokens only (`online`). The default of newly created scoped apps.
    #[default]
    ShortLived,
    /// Long-lived (non-expiring) access tokens, created only before
    /// [`Policy::long_lived_cutoff`]; from then on such apps get short-lived tokens.
    LongLived,
    /// Short-lived access tokens and a refresh token (`offline`) on every code flow, whether or
    /// not the client asks: for standard clients that never send `token_access_type` and do not
    /// know to ask for [`offline_access`](crate::OFFLINE_ACCESS). Standards profile only.
    Offline,
}

/// One app (client): configured, or — where clients may arrive unannounced — registered and
/// stored ([`AppRecord`](crate::AppRecord), whose serialized form this is part of: fields are
/// positional there, never reordered or removed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct App {
    /// The app key (`client_id`).
    pub key: AppKey,
    /// The name shown on the consent page.
    pub name: String,
    /// Digest of the app secret; `None` for a public app, which can only use PKCE.
    pub secret_digest: Option<SecretDigest>,
    /// Registered redirect URIs, compared by exact string match (a loopback `http` URI with
    /// any port: RFC 8252 §7.3).
    pub redirect_uris: Vec<RedirectUri>,
    /// Scoped or legacy.
    pub permissions: Permissions,
    /// The token type when `token_access_type` is omitted.
    pub default_token_type: DefaultTokenType,
    /// Whether the legacy implicit flow (`response_type=token`) is allowed at all.
    pub implicit_allowed: bool,
}

impl App {
    /// The scopes this app may be granted: its explicit scopes, or those of its legacy access type.
    pub fn scopes(&self) -> ScopeSet {
        match &self.permissions {
            Permissions::Scoped { scopes } => scopes.clone(),
            Permissions::Legacy { access } => access.scopes(),
        }
    }

    /// Whether the app has a secret (a confidential client).
    pub fn is_confidential(&self) -> bool {
        self.secret_digest.is_some()
    }

    /// Whether `uri` is registered for this app: by exact string match, or for a loopback
    /// `http` URI with any port (RFC 8252 §7.3).
    pub fn has_redirect_uri(&self, uri: &str) -> bool {
        self.redirect_uris.iter().any(|r| redirect_matches(r, uri))
    }
}

/// Policy switches. Every field has the default of DESIGN.md.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Lifetime of an authorization code: 1..=600 s. Default 600.
    pub code_ttl: Seconds,
    /// Lifetime of a short-lived access token. Default 14 400 s (4 h).
    pub access_token_ttl: Seconds,
    /// Refuse `code_challenge_method=plain` (RFC 9700 §2.1.1 recommends S256). The standards
    /// profile always does, as OAuth 2.1 asks.
    pub require_s256: bool,
    /// From this instant on, no long-lived access token is created. Default 2021-10-01T00:00:00Z.
    pub long_lived_cutoff: UnixTime,
    /// The largest query string or request body accepted, in bytes (header values are held to
    /// the same bound). Default 16 384.
    pub max_input_bytes: usize,
    /// The largest request body an API endpoint takes, in bytes, unless the endpoint sets its
    /// own ([`ApiEndpoint::max_body_bytes`]); a longer one is refused `413`. API bodies are the
    /// host's (an MCP tool call's arguments), so they are held to this bound, not to
    /// `max_input_bytes`. Default 1 048 576 (1 MiB).
    pub max_api_body_bytes: usize,
    /// Read the token endpoint's parameters from the URL query when the body is empty. The
    /// reference service accepts this and the official Dropbox SDKs depend on it (they send the
    /// code exchange and the refresh with an empty body); RFC 6749 §2.3.1 would keep a
    /// `client_secret` out of URLs, so hosts whose clients all use the body can turn it off.
    /// Default `true`.
    pub token_parameters_in_query: bool,
    /// How many times one request may lose a race for its writes before the core answers
    /// `503 temporarily_unavailable` (each loss means another request changed the same
    /// records; the next attempt decides from what it wrote). Default 5.
    pub max_attempts: u32,
    /// Allow `http` redirect URIs on hosts other than the loopback interface. Off by default:
    /// a code sent over plain HTTP can be read on the way (RFC 9700 §2.6, RFC 6749 §3.1.2.1);
    /// loopback `http` URIs of native apps are always allowed (RFC 8252 §7.3).
    pub allow_http_redirect_uris: bool,
    /// Limits on failed credential checks (client secrets at the token endpoint, and the host's
    /// own sign-in through [`Input::Attempts`](crate::Input::Attempts)).
    pub attempts: AttemptLimits,
    /// How many live grants that never end by themselves (offline, long-lived) one user may
    /// hold with one app: a new one beyond the bound revokes the oldest (audit
    /// `grant_evicted`). `None` (the default, SPEC.md's service): no bound — the reference
    /// service documents none. Large providers bound it: Google 100 refresh tokens per account
    /// and client, Auth0 200 per user and application, Zoho 20, each dropping the oldest.
    pub live_grants_per_link: Option<u32>,
    /// How long a refresh token may go unused before its grant ends by itself (standards
    /// profile only: SPEC.md's refresh tokens never expire). Each refresh starts the span
    /// again (written when half of it has passed, so not every refresh writes); the grant and
    /// its tokens are purged one access-token lifetime after it ends. Longer than an access
    /// token's lifetime. `None` (default): never. Google ends a refresh token unused for six
    /// months.
    pub refresh_idle_lifetime: Option<Seconds>,
}

/// How many failed credential checks each attempter may have within one window before its
/// checks are refused with `429` and `Retry-After` until the window ends. Counts are kept in the
/// host's store (so they hold across instances), under a digest of the attempter. `0` turns a
/// limit off.
///
/// At the token endpoint a failed client authentication is counted against its source, and a
/// source at its limit has its failures answered `429`; a correct client secret is never held
/// back by any count — secrets are high-entropy, and a count of an app's failures (its key is
/// public) would let anyone make that app wait. Checks racing each other may each pass before
/// any of them records its failure: the count can overshoot by the number in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptLimits {
    /// The window, from the first failure on. Default 900 s.
    pub window: Seconds,
    /// Failed checks per network source (as the host names it). Default 50.
    pub per_source: u32,
    /// Failed sign-ins per account name (the host's sign-in). Default 10.
    pub per_account: u32,
}

impl Default for AttemptLimits {
    fn default() -> Self {
        AttemptLimits {
            window: Seconds(900),
            per_source: 50,
            per_account: 10,
        }
    }
}

/// Which dialect the server speaks. SPEC.md's reference service is the default and stays
/// exactly as it is; the standards profile adds what standards-based clients (MCP clients among
/// them) expect to find: authorization server metadata (RFC 8414) and the issuer on every
/// authorization response (RFC 9207).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
// One per configuration, read in place: its size costs nothing, a box would cost every reader.
#[allow(clippy::large_enum_variant)]
pub enum Profile {
    /// The reference service: nothing beyond SPEC.md is served.
    #[default]
    Reference,
    /// The reference service and the standards around it.
    Standards(Standards),
}

/// The settings of the standards profile.
///
/// ```
/// # use edgegrant::*;
/// let profile = Profile::Standards(Standards {
///     resources: vec![Resource::new("https://mcp.example/mcp").unwrap()],
///     ..Standards::new(Issuer::new("https://auth.example").unwrap())
/// });
/// # let _ = profile;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standards {
    /// This server's issuer identifier.
    pub issuer: Issuer,
    /// The resources (RFC 8707) it issues tokens for besides the API it serves itself
    /// (whose identifier is the issuer's origin): APIs on other hosts, MCP servers.
    pub resources: Vec<Resource>,
    /// How refresh tokens rotate (RFC 9700 §4.14.2).
    pub rotation: Rotation,
    /// The apps that serve resources and may introspect the access tokens issued for
    /// them (RFC 7662 §4); without one, only a token's own app learns anything of it.
    pub resource_servers: Vec<ResourceServer>,
    /// Whether clients nobody configured may sign users in, and how; `None` (the default):
    /// only configured apps.
    pub clients: Option<UnannouncedClients>,
    /// Which apps may get tokens for themselves with the client credentials grant (RFC 6749
    /// §4.4); `None` (the default): none.
    pub client_credentials: Option<ClientCredentials>,
    /// Token exchange (RFC 8693); `None` (the default): off.
    pub token_exchange: Option<TokenExchange>,
    /// The identity providers whose identity assertions (ID-JAG, presented with the RFC 7523
    /// JWT-bearer grant) give a client a person's token; `None` (the default): off.
    pub identity_assertions: Option<IdentityAssertions>,
    /// Tokens bound to a key the client holds (DPoP, RFC 9449); `None` (the default): proofs
    /// are not read, and every token is a bearer token.
    pub dpop: Option<Dpop>,
}

/// DPoP (RFC 9449): a client that signs each request with a key of its own gets tokens bound to
/// that key — access tokens always, a public client's refresh token too — good only with a
/// proof of the key. Proofs are read at the token endpoint and at the API served here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dpop {
    /// How far a proof's `iat` may be from now, either way. Default 300 s (what the MCP DPoP
    /// extension asks servers to accept).
    pub proof_window: Seconds,
    /// Where a proof must carry a nonce this server handed out (`DPoP-Nonce`, RFC 9449 §8, §9).
    /// Default: at the token endpoint.
    pub nonces: DpopNonces,
    /// Who must present a proof at the token endpoint (else `invalid_dpop_proof`).
    /// Default: nobody; a client that presents one gets bound tokens.
    pub required: DpopRequired,
}

impl Default for Dpop {
    fn default() -> Dpop {
        Dpop {
            proof_window: Seconds(300),
            nonces: DpopNonces::TokenEndpoint,
            required: DpopRequired::default(),
        }
    }
}

/// Where DPoP proofs must carry a server nonce. Nonces are derived from the server key and
/// the time (no record): one is good for two nonce periods, on every host of a deployment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpopNonces {
    /// Nowhere: a proof's freshness is its `iat` alone.
    None,
    /// At the token endpoint (a client meets one `use_dpop_nonce` when it starts).
    #[default]
    TokenEndpoint,
    /// At the token endpoint and the API: a replayed proof is good for at most two nonce
    /// periods, at the cost of a retry per client when the nonce moves on.
    Everywhere,
}

/// Who must present DPoP proofs at the token endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DpopRequired {
    /// Every client.
    pub all: bool,
    /// Every client that arrived unannounced (registered itself, or named by a document).
    pub unannounced: bool,
    /// These configured apps.
    pub apps: Vec<AppKey>,
}

/// The client credentials grant (RFC 6749 §4.4): a client that authenticates gets an access
/// token for itself — a machine acting on its own behalf, with no person and no refresh token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The configured apps that may use it; each must have a secret.
    pub apps: Vec<AppKey>,
    /// How long its access tokens live. Default 3600 s.
    pub access_token_lifetime: Seconds,
    /// Whether clients that arrive unannounced ([`UnannouncedClients`]) may use it too: a
    /// registered client (RFC 7591) that lists `client_credentials` among its `grant_types` and
    /// authenticates (a secret, or `private_key_jwt`). Default `false`: a registration that
    /// asks for it alone is refused, and with the code flow it is left out.
    pub unannounced: bool,
}

impl ClientCredentials {
    /// The grant for `apps`, its tokens living an hour, for no unannounced client.
    pub fn new(apps: Vec<AppKey>) -> ClientCredentials {
        ClientCredentials {
            apps,
            access_token_lifetime: Seconds(3600),
            unannounced: false,
        }
    }
}

/// Token exchange (RFC 8693): a client that holds an access token of this server — the app it
/// was issued to, or a resource server it was issued for — exchanges it for a narrower one
/// (fewer scopes, one of the grant's resources) to pass on, optionally naming itself as the
/// actor with its own client credentials token. The exchanged token belongs to the same grant:
/// it ends with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenExchange {
    /// How long an exchanged token lives at most (never past the token it was exchanged
    /// from). Default 3600 s.
    pub access_token_lifetime: Seconds,
}

impl Default for TokenExchange {
    fn default() -> TokenExchange {
        TokenExchange {
            access_token_lifetime: Seconds(3600),
        }
    }
}

/// Enterprise-managed authorization: the JWT-bearer grant (RFC 7523 §2.1) with an Identity
/// Assertion JWT Authorization Grant (ID-JAG). A trusted identity provider signs that one of its
/// users (`sub`) may have a client (`client_id`) act for them here, within a scope; the client,
/// authenticated, presents it once and gets an access token for that user's account, with no
/// consent page and no refresh token. The provider's subject is mapped to an account by the
/// configuration ([`IdentityProvider::accounts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityAssertions {
    /// The providers whose assertions are taken, each by its issuer identifier. (Its access
    /// tokens are a person's, living [`Policy::access_token_ttl`] as theirs do.)
    pub providers: Vec<IdentityProvider>,
}

/// An identity provider whose assertions this server takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityProvider {
    /// Its issuer identifier, exactly as its assertions' `iss` names it (an https URL).
    pub issuer: String,
    /// The public keys its assertions are signed with: given here, or its key set's URL.
    pub keys: ProviderKeys,
    /// Its subjects (`sub`) that are people here, each with the account they are; an assertion
    /// naming any other is refused. (A list, not a map: the module for configured apps, which
    /// never reads it, then links no map's code for it.)
    pub accounts: Vec<(String, ProviderAccount)>,
}

/// Where an identity provider's signing keys come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderKeys {
    /// Given in the configuration: a JWK set's ES256 and RS256 keys.
    Inline(Vec<ClientKey>),
    /// The https URL of its JWK set (its `jwks_uri`): fetched by the host's fetch step with the
    /// guards and limits of metadata documents ([`Config::key_fetch_policy`]), kept in the store
    /// for its cache lifetime, and fetched again sooner when an assertion names a key it lacks.
    Remote(String),
}

/// The account an identity provider's subject is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderAccount {
    /// The account's id.
    pub account_id: AccountId,
    /// The user's uid.
    pub uid: Uid,
}

/// An identity assertion as read for routing and parsing ([`Config::identify`]): the provider
/// it names and the account its subject is here, its signature and claims not checked yet.
pub(crate) struct Identity<'c> {
    pub assertion: Assertion,
    pub provider: &'c IdentityProvider,
    /// `None`: the provider's subject is no account here.
    pub account: Option<&'c ProviderAccount>,
}

impl IdentityAssertions {
    /// The grant for `providers`.
    pub fn new(providers: Vec<IdentityProvider>) -> IdentityAssertions {
        IdentityAssertions { providers }
    }

    /// The provider whose issuer identifier is `issuer`.
    pub fn provider(&self, issuer: &str) -> Option<&IdentityProvider> {
        self.providers.iter().find(|p| p.issuer == issuer)
    }
}

impl Standards {
    /// The standards profile with `issuer` and every other setting at its default.
    pub fn new(issuer: Issuer) -> Standards {
        Standards {
            issuer,
            resources: Vec::new(),
            rotation: Rotation::default(),
            resource_servers: Vec::new(),
            clients: None,
            client_credentials: None,
            token_exchange: None,
            identity_assertions: None,
            dpop: None,
        }
    }
}

/// Clients that arrive unannounced — registered by themselves (RFC 7591) — and what they may
/// be granted. Their apps are records in the store beside the configured ones; a configured app
/// wins on a clash of keys, and the keys the core mints for registered clients (`dyn.` and 22
/// characters) are never a configured app's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnannouncedClients {
    /// The scopes such a client may be granted: a registration names some of them (or gets
    /// them all), and an authorization request asks within what it registered.
    pub scopes: ScopeSet,
    /// How long such an app may go unused (no authorization, exchange or refresh) before it
    /// expires, and its grants with it; each use starts the span again (written when half of it
    /// has passed). Default 7 776 000 s (90 days).
    pub unused_lifetime: Seconds,
    /// How long such an app is kept before its first completed authorization (a code issued
    /// after a user's consent): a registration nobody uses, or a metadata document fetched for
    /// a consent never given, is gone after this, not after
    /// [`unused_lifetime`](Self::unused_lifetime). At most half of that. Default 21 600 s (6
    /// hours).
    pub trial_lifetime: Seconds,
    /// Whether such apps get refresh tokens (offline access). Default
    /// [`UnannouncedRefresh::On`].
    pub refresh_tokens: UnannouncedRefresh,
    /// Dynamic client registration (RFC 7591) at `/oauth2/register`; `None` (the default):
    /// off.
    pub registration: Option<RegistrationPolicy>,
    /// Client ID Metadata Documents: a `client_id` that is an https URL names a document the
    /// core asks the host to fetch ([`Step::Fetch`](crate::Step::Fetch)); `None` (the default):
    /// off.
    pub documents: Option<DocumentPolicy>,
}

impl UnannouncedClients {
    /// Unannounced clients that may be granted `scopes`, with the default lifetime and no way
    /// in yet (set [`registration`](Self::registration)).
    pub fn new(scopes: ScopeSet) -> UnannouncedClients {
        UnannouncedClients {
            scopes,
            unused_lifetime: Seconds(7_776_000),
            trial_lifetime: Seconds(21_600),
            refresh_tokens: UnannouncedRefresh::On,
            registration: None,
            documents: None,
        }
    }
}

impl UnannouncedClients {
    /// The last use a new app is stored with: as if all but [`trial_lifetime`](Self::trial_lifetime)
    /// of its unused lifetime had passed at `now`, so that it expires then unless used. Its
    /// first completed authorization renews it (a use once half the lifetime has passed
    /// starts the span again), and from then on it lives by the unused lifetime.
    pub(crate) fn trial_used_at(&self, now: UnixTime) -> UnixTime {
        UnixTime(
            now.0
                .saturating_add(self.trial_lifetime.0)
                .saturating_sub(self.unused_lifetime.0),
        )
    }
}

/// Whether clients that arrive unannounced get refresh tokens.
///
/// A refresh token outlives the consent page by months; for a client whose identity nobody
/// verified, an operator may want its access to end with its access token. (A third choice,
/// refresh tokens bound to a key the client proves — DPoP, RFC 9449 — comes with
/// sender-constrained tokens.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnannouncedRefresh {
    /// As a configured app: a refresh token when the client asks for offline access, or by
    /// default when it registered the `refresh_token` grant.
    #[default]
    On,
    /// Never: offline access is not granted (the scope `offline_access` is left out of the
    /// grant, `token_access_type=offline` gets online access), and the token response carries
    /// no refresh token. Refresh tokens issued before the switch keep working until revoked or
    /// until their client expires.
    Off,
}

/// Which Client ID Metadata Documents are fetched, and how (see [`Step::Fetch`](crate::Step::Fetch)).
///
/// The JWK sets clients name by `jwks_uri` are fetched under the same policy — its hosts, its
/// deadline, its cache bounds — but with a size limit of their own,
/// [`KEY_SET_MAX_BYTES`](crate::KEY_SET_MAX_BYTES); without it no `jwks_uri` is taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentPolicy {
    /// The hosts documents may be fetched from: a host (`app.example`, matched exactly, with
    /// its port if the URL has one) or every host under a domain (`*.example.com`); empty (the
    /// default): any host.
    pub hosts: Vec<String>,
    /// The largest document fetched, in bytes. Default 5120 (the draft's recommendation, §6.6).
    pub max_bytes: u32,
    /// How long a fetch may take, whole, in milliseconds. Default 5000.
    pub timeout_ms: u32,
    /// The shortest time a document is kept before it is fetched again, whatever its
    /// `Cache-Control` says (`no-store` and `no-cache` included). Default 300 s.
    pub min_cache: Seconds,
    /// The longest: a document is fetched again at least this often. Default 86 400 s.
    pub max_cache: Seconds,
    /// How long a URL whose fetch failed (no answer, not `200`, or nothing usable) is not
    /// fetched again: requests naming it meanwhile are refused without a fetch. Default 300 s.
    pub failure_backoff: Seconds,
}

impl Default for DocumentPolicy {
    fn default() -> Self {
        DocumentPolicy::DEFAULTS
    }
}

impl DocumentPolicy {
    /// Every setting at its default.
    const DEFAULTS: DocumentPolicy = DocumentPolicy {
        hosts: Vec::new(),
        max_bytes: 5120,
        timeout_ms: 5000,
        min_cache: Seconds(300),
        max_cache: Seconds(86_400),
        failure_backoff: Seconds(300),
    };

    /// Whether documents may be fetched from `host` (the URL's authority, as written).
    ///
    /// ```
    /// # use edgegrant::DocumentPolicy;
    /// let policy = DocumentPolicy { hosts: vec!["*.example.com".into(), "app.test".into()], ..DocumentPolicy::default() };
    /// assert!(policy.allows("mcp.example.com"));
    /// assert!(!policy.allows("example.com.evil"));
    /// assert!(!policy.allows("app.test:8443"));
    /// assert!(DocumentPolicy::default().allows("anything.example"));
    /// ```
    pub fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.is_empty()
            || self
                .hosts
                .iter()
                .any(|allowed| match allowed.strip_prefix("*.") {
                    Some(domain) => host
                        .strip_suffix(domain)
                        .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                    None => allowed.eq_ignore_ascii_case(&host),
                })
    }
}

/// Who may register a client (RFC 7591 §3), and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationPolicy {
    /// The digests of the initial access tokens that may register (RFC 7591 §1.2, presented
    /// as a bearer token); empty (the default): registration is open, as MCP clients expect.
    pub initial_access_tokens: Vec<SecretDigest>,
    /// Registrations one network source may make within one
    /// [`attempts.window`](AttemptLimits::window); `0` turns the limit off. Default 20. A source
    /// is an address as the host reports it, an IPv6 address counted with its whole /64 (one
    /// host's usual share).
    pub per_source: u32,
    /// Registrations all sources together may make within one window: what bounds the store's
    /// growth however many addresses a registrant has. `0` turns the limit off. Default 100.
    /// At the limit, registration is refused for everyone until the window ends: set it above
    /// what the deployment's real clients need.
    pub all_sources: u32,
}

impl Default for RegistrationPolicy {
    fn default() -> Self {
        RegistrationPolicy {
            initial_access_tokens: Vec::new(),
            per_source: 20,
            all_sources: 100,
        }
    }
}

/// An app that serves some of the configured resources (an API or MCP server on another
/// host, checking tokens by introspection): it may introspect the access tokens issued for
/// those resources, and only those. Refresh tokens are never described to it: a resource
/// server has no use for them, and a resource that took one for an access token would serve
/// its holder forever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceServer {
    /// The app the resource server authenticates as (a confidential app).
    pub app: AppKey,
    /// The resources it serves: configured resources, or the issuer's origin.
    pub resources: Vec<Resource>,
}

/// Refresh-token rotation, in the standards profile (the reference profile's refresh tokens
/// are reusable, as SPEC.md has them).
///
/// A rotating refresh returns a new refresh token and supersedes the one presented. Presenting
/// the superseded token again within [`retry_window`](Self::retry_window) of its rotation —
/// and before its successor has been used — gets the same answer again (the same access and
/// refresh token), so a response lost on the way never locks the user out; presenting it at any
/// other time revokes the whole grant, since the token is then in two hands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// Whose refreshes rotate. Default: public clients.
    pub clients: RotatedClients,
    /// How long after a rotation a retry with the superseded token gets the same answer:
    /// 0..=300 s, less than the access-token lifetime. Default 60.
    pub retry_window: Seconds,
    /// How long a superseded token is kept so that its reuse is caught (after that it is
    /// refused as unknown, without revoking anything): at least the retry window. Default
    /// 2 592 000 s (30 days).
    pub reuse_detection: Seconds,
}

impl Default for Rotation {
    fn default() -> Self {
        Rotation {
            clients: RotatedClients::Public,
            retry_window: Seconds(60),
            reuse_detection: Seconds(2_592_000),
        }
    }
}

/// Whose refresh tokens rotate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RotatedClients {
    /// Refreshes made without a client secret (a public client, or a confidential one using
    /// its PKCE grant with `client_id` alone): OAuth 2.1 and RFC 9700 §4.14.2 require it of
    /// refresh tokens that are not sender-constrained.
    #[default]
    Public,
    /// Every refresh.
    All,
}

/// A resource identifier (RFC 8707 §2): an API or MCP server this authorization server issues
/// tokens for, `https` (or `http` on loopback), without query or fragment. Kept in its
/// [canonical form](Resource::canonical), the form tokens name it by.
///
/// ```
/// # use edgegrant::Resource;
/// let mcp = Resource::new("HTTPS://MCP.example:443/mcp").unwrap();
/// assert_eq!(mcp.as_str(), "https://mcp.example/mcp");
/// assert_eq!(Resource::new("https://api.example/").unwrap().as_str(), "https://api.example");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource(String);

impl Resource {
    /// Checks `text` as a resource identifier; the error says what is wrong.
    pub fn new(text: &str) -> Result<Resource, &'static str> {
        // The issuer's rules (https, or http on loopback; no query, fragment or user), then
        // the canonical form of the whole identifier.
        Issuer::new(text)?;
        Resource::canonical(text)
            .map(Resource)
            .ok_or("must be an https URL: https://host[:port][/path]")
    }

    /// The identifier, canonical.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The canonical form of an `http(s)` resource identifier, by RFC 3986's syntax- and
    /// scheme-based normalization (§6.2.2, §6.2.3): scheme and host in lower case, the
    /// scheme's default port left out, and an empty path the same as `/` — written without it,
    /// the form MCP clients are asked to use. So `https://Auth.example:443/` and
    /// `https://auth.example` name one resource; paths are compared as they are written
    /// (`/mcp` and `/mcp/` are two). `None` for anything else, or with a query, a fragment or
    /// user information.
    pub fn canonical(text: &str) -> Option<String> {
        let uri = HttpUri::parse(text)?;
        if uri.userinfo
            || uri.rest.contains(['?', '#'])
            || !text.bytes().all(|b| b.is_ascii_graphic())
        {
            return None;
        }
        let scheme = match uri.scheme {
            Scheme::Http => "http://",
            Scheme::Https => "https://",
        };
        // The authority as written, but for the case of the host and a default port.
        let default_port = uri.port == Some(uri.scheme.default_port());
        let authority = text.get(scheme.len()..text.len() - uri.rest.len())?;
        let authority = match authority.rsplit_once(':') {
            Some((host, _)) if default_port => host,
            _ => authority,
        };
        let path = if uri.rest == "/" { "" } else { uri.rest };
        Some([scheme, &authority.to_ascii_lowercase(), path].concat())
    }
}

/// An issuer identifier (RFC 8414 §2): an `https` URL without query or fragment, which clients
/// compare as a string with the `iss` they are given. `http` is allowed on the loopback
/// interface only, for local development.
///
/// ```
/// # use edgegrant::Issuer;
/// let issuer = Issuer::new("https://auth.example/tenant").unwrap();
/// assert_eq!(issuer.path(), "/tenant");
/// assert!(Issuer::new("https://auth.example/?x=1").is_err());
/// assert!(Issuer::new("http://auth.example").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuer {
    text: String,
    /// The canonical identifier of the API served beside the server: the issuer's origin.
    resource: String,
}

impl Issuer {
    /// Checks `text` as an issuer identifier; the error says what is wrong.
    pub fn new(text: &str) -> Result<Issuer, &'static str> {
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("must be visible ASCII, without spaces");
        }
        let uri = HttpUri::parse(text).ok_or("must be an https URL: https://host[:port][/path]")?;
        if uri.userinfo {
            return Err("must not carry user information (user@host)");
        }
        if uri.rest.contains(['?', '#']) {
            return Err("must have no query or fragment (RFC 8414 §2)");
        }
        if uri.scheme == Scheme::Http && !uri.is_loopback() {
            return Err("must use https (http only on the loopback interface)");
        }
        let origin = text.get(..text.len() - uri.rest.len()).unwrap_or(text);
        Ok(Issuer {
            text: text.to_owned(),
            resource: Resource::canonical(origin).unwrap_or_else(|| origin.to_owned()),
        })
    }

    /// The identifier as configured.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The scheme, `https` (or `http` on loopback), in lower case.
    pub fn scheme(&self) -> &'static str {
        match HttpUri::parse(&self.text).map(|uri| uri.scheme) {
            Some(Scheme::Http) => "http",
            _ => "https",
        }
    }

    /// `scheme://authority`, where the endpoints are.
    pub fn origin(&self) -> &str {
        let path = HttpUri::parse(&self.text).map_or("", |uri| uri.rest);
        self.text
            .get(..self.text.len() - path.len())
            .unwrap_or(&self.text)
    }

    /// The resource identifier (RFC 8707) of the API served beside this server: the issuer's
    /// origin, [canonical](Resource::canonical).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Its path, without a trailing `/` (empty for an origin): what follows the well-known
    /// prefix of its metadata's URL (RFC 8414 §3.1).
    pub fn path(&self) -> &str {
        HttpUri::parse(&self.text).map_or("", |uri| uri.rest.trim_end_matches('/'))
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            code_ttl: Seconds(600),
            access_token_ttl: Seconds(14_400),
            require_s256: false,
            long_lived_cutoff: UnixTime::LONG_LIVED_CUTOFF,
            max_input_bytes: 16_384,
            max_api_body_bytes: 1 << 20,
            token_parameters_in_query: true,
            max_attempts: 5,
            allow_http_redirect_uris: false,
            attempts: AttemptLimits::default(),
            live_grants_per_link: None,
            refresh_idle_lifetime: None,
        }
    }
}

/// The configuration document as written (JSON, or built in code): what [`Config`] validates.
///
/// Its JSON form is read and written in one place, [`ConfigDocument::from_json_value`] and
/// [`ConfigDocument::to_json_value`], which every host uses (its serde implementations go
/// through them too).
#[derive(Clone, Debug, Default)]
pub struct ConfigDocument {
    /// Registered apps.
    pub apps: Vec<App>,
    /// Policy switches.
    pub policy: Policy,
    /// Each API endpoint, by path, with its Required Scope (`/2/users/get_current_account` →
    /// `account_info.read`) and the body it takes.
    pub api_endpoints: BTreeMap<String, ApiEndpoint>,
    /// The host's templates of the pages of the flow (consent, code, error, sign-in); the
    /// core's plain defaults stand in for any left out.
    pub pages: PageTemplates,
    /// The dialect: the reference service (default), or with the standards around it.
    pub profile: Profile,
    /// The server's own secret key (`server_key`), required: partitions and the seal of every
    /// credential are derived under it, and rotated refresh tokens (see [`ServerKey`]).
    pub server_key: Option<ServerKey>,
    /// What each scope lets an app do, in plain words, for the consent page (`mcp:tools` →
    /// "Use the tools of the project server"); the reference scopes and `offline_access` have
    /// defaults ([`DEFAULT_SCOPE_DESCRIPTIONS`]), any other scope is shown by its name. A
    /// list of pairs, not a map: a handful, read once per consent page (a map of its own type
    /// cost the wasm module 5 KB).
    pub scope_descriptions: Vec<(String, String)>,
}

/// One of the host's API endpoints: the core checks the bearer token, its Required Scope and
/// the body's size before the host serves it. In the standards profile its own URL (the
/// issuer's origin and its path) is a resource tokens may be asked for (RFC 8707), with its
/// metadata at `/.well-known/oauth-protected-resource<path>` (RFC 9728 §3.1).
///
/// ```
/// # use edgegrant::{ApiEndpoint, Scope};
/// let mcp = ApiEndpoint { max_body_bytes: Some(4 << 20), ..ApiEndpoint::from(Scope::new("mcp:tools").unwrap()) };
/// assert_eq!(mcp.scope.as_str(), "mcp:tools");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiEndpoint {
    /// The scope a token must hold to call it.
    pub scope: Scope,
    /// The most bytes its request body may hold; a longer one is refused `413`. `None`:
    /// [`Policy::max_api_body_bytes`] (1 MiB by default).
    pub max_body_bytes: Option<usize>,
}

impl From<Scope> for ApiEndpoint {
    fn from(scope: Scope) -> Self {
        ApiEndpoint {
            scope,
            max_body_bytes: None,
        }
    }
}

/// An API endpoint as a request to it is checked: its path, shared with the configuration,
/// and its Required Scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CalledEndpoint {
    pub path: Arc<str>,
    pub scope: Scope,
}

/// The consent page's words for the scopes SPEC.md names and for `offline_access`, where the
/// configuration gives none.
pub const DEFAULT_SCOPE_DESCRIPTIONS: [(&str, &str); 15] = [
    (
        "account_info.read",
        "See your account's name, email address and country",
    ),
    ("contacts.write", "Change the contacts you added yourself"),
    ("events.read", "See your team's activity log"),
    ("file_requests.read", "See your file requests"),
    (
        "file_requests.write",
        "Create and change your file requests",
    ),
    (
        "files.content.read",
        "Read the content of your files and folders",
    ),
    (
        "files.content.write",
        "Change and delete the content of your files and folders",
    ),
    (
        "files.metadata.read",
        "See the names and details of your files and folders",
    ),
    (
        "files.metadata.write",
        "Rename, move and delete your files and folders",
    ),
    ("groups.read", "See your team's groups"),
    ("members.read", "See your team's members"),
    (
        OFFLINE_ACCESS,
        "Keep this access while you are away, until you remove it",
    ),
    ("sharing.read", "See what you share and with whom"),
    (
        "sharing.write",
        "Share your files and folders, and change who they are shared with",
    ),
    ("team_info.read", "See your team's name and details"),
];

/// A validated configuration, indexed for lookups.
///
/// ```
/// # use edgegrant::*;
/// let config = Config::new(ConfigDocument {
///     apps: vec![App {
///         key: AppKey::new("demo-app").unwrap(),
///         name: "Demo".into(),
///         secret_digest: None,
///         redirect_uris: vec![RedirectUri::new("https://demo.example/cb").unwrap()],
///         permissions: Permissions::Scoped { scopes: ScopeSet::parse("account_info.read").unwrap() },
///         default_token_type: DefaultTokenType::ShortLived,
///         implicit_allowed: false,
///     }],
///     policy: Policy::default(),
///     api_endpoints: [("/2/users/get_current_account".to_string(), Scope::new("account_info.read").unwrap().into())].into(),
///     pages: PageTemplates::default(),
///     profile: Profile::Reference,
///     server_key: Some(ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap()),
///     scope_descriptions: Default::default(),
/// }).unwrap();
/// assert!(config.app("demo-app").is_some());
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Sorted by key, each key once (a sorted vector: a handful of apps, read far more often
    /// than built, and less code than a tree).
    apps: Vec<App>,
    policy: Policy,
    /// Sorted by path, each path once, shared with the requests that call them (a refusal
    /// names its endpoint). A sorted vector, as for apps: a handful, and less code than a
    /// second tree.
    api_endpoints: Vec<(Arc<str>, ApiEndpoint)>,
    pages: Pages,
    profile: Profile,
    server_key: ServerKey,
    scope_descriptions: Vec<(String, String)>,
}

impl Config {
    /// What `scope` lets an app do, in plain words: the configured description, else the
    /// default of a reference scope or `offline_access`, else the scope's name.
    pub fn describe<'a>(&'a self, scope: &'a str) -> &'a str {
        self.scope_descriptions
            .iter()
            .map(|(name, words)| (name.as_str(), words.as_str()))
            .chain(DEFAULT_SCOPE_DESCRIPTIONS)
            .find(|(name, _)| *name == scope)
            .map_or(scope, |(_, words)| words)
    }

    /// The app registered under `key`.
    pub fn app(&self, key: &str) -> Option<&App> {
        let at = self
            .apps
            .binary_search_by(|a| a.key.as_str().cmp(key))
            .ok()?;
        self.apps.get(at)
    }

    /// Every registered app.
    pub fn apps(&self) -> impl Iterator<Item = &App> {
        self.apps.iter()
    }

    /// The policy switches.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The compiled page templates.
    pub(crate) fn pages(&self) -> &Pages {
        &self.pages
    }

    /// The dialect the server speaks.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// How refresh tokens rotate: never in the reference profile.
    pub fn rotation(&self) -> Option<&Rotation> {
        self.standards().map(|s| &s.rotation)
    }

    /// The standards profile's settings, if it is the profile.
    pub fn standards(&self) -> Option<&Standards> {
        match &self.profile {
            Profile::Reference => None,
            Profile::Standards(standards) => Some(standards),
        }
    }

    /// Whether clients may register themselves (RFC 7591).
    pub fn registers_clients(&self) -> bool {
        self.unannounced()
            .is_some_and(|clients| clients.registration.is_some())
    }

    /// How clients nobody configured come in, if they may. Always `None` in a build without
    /// the `unannounced` feature (whose [`Config::new`] refuses `profile.clients`): the compiler
    /// then leaves out registration, metadata documents, client assertions and stored apps.
    pub fn unannounced(&self) -> Option<&UnannouncedClients> {
        if !cfg!(feature = "unannounced") {
            return None;
        }
        self.standards()?.clients.as_ref()
    }

    /// Which Client ID Metadata Documents are fetched, if any are.
    pub fn documents(&self) -> Option<&DocumentPolicy> {
        self.unannounced()?.documents.as_ref()
    }

    /// The policy an identity provider's key set is fetched under: that of metadata documents
    /// when they are fetched here, else their defaults. (Its URL is the operator's own, so the
    /// documents' host list does not apply to it.)
    pub fn key_fetch_policy(&self) -> &DocumentPolicy {
        static DEFAULTS: DocumentPolicy = DocumentPolicy::DEFAULTS;
        self.documents().unwrap_or(&DEFAULTS)
    }

    /// The policy a document at `url` (a metadata document, a key set) is fetched under: if
    /// documents are fetched here, `url` names one (see [`AppKey`]'s rules) and its host is
    /// allowed.
    pub fn fetch_policy(&self, url: &str) -> Option<&DocumentPolicy> {
        self.documents()
            .filter(|policy| https_host(url).is_some_and(|host| policy.allows(host)))
    }

    /// The server's own secret key.
    pub fn server_key(&self) -> &ServerKey {
        &self.server_key
    }

    /// The issuer identifier, in the standards profile.
    pub fn issuer(&self) -> Option<&Issuer> {
        self.standards().map(|s| &s.issuer)
    }

    /// Whether tokens may be issued for `resource` (RFC 8707), given in its
    /// [canonical form](Resource::canonical): the API served here (the issuer's origin), one of
    /// its endpoints by its own URL (the origin followed by the endpoint's path: what an MCP
    /// client names), or a configured one. Never in the reference profile.
    pub fn knows_resource(&self, resource: &str) -> bool {
        self.standards().is_some_and(|s| {
            s.issuer.resource() == resource || s.resources.iter().any(|r| r.as_str() == resource)
        }) || self.api_endpoint_named(resource).is_some()
    }

    /// Whether `resource` (canonical) is served here: the API's origin or one of its
    /// endpoints by its own URL.
    pub(crate) fn is_here(&self, resource: &str) -> bool {
        self.issuer()
            .is_some_and(|issuer| issuer.resource() == resource)
            || self.api_endpoint_named(resource).is_some()
    }

    /// Whether `app` serves `resource` (given canonical) as a configured resource server.
    pub fn serves(&self, app: &AppKey, resource: &str) -> bool {
        self.standards().is_some_and(|s| {
            s.resource_servers
                .iter()
                .any(|s| &s.app == app && s.resources.iter().any(|r| r.as_str() == resource))
        })
    }

    /// Whether `code_challenge_method=plain` is refused: by policy, and always in the standards
    /// profile (OAuth 2.1 §4.1.1 admits S256 alone).
    pub fn requires_s256(&self) -> bool {
        self.policy.require_s256 || self.issuer().is_some()
    }

    /// Whether the token endpoint takes `grant` (the metadata lists what it takes): the
    /// authorization code and the refresh token in every deployment.
    pub fn offers(&self, grant: GrantType) -> bool {
        match grant {
            GrantType::AuthorizationCode | GrantType::RefreshToken => true,
            GrantType::ClientCredentials => self.client_credentials().is_some(),
            GrantType::TokenExchange => self.token_exchange().is_some(),
            GrantType::JwtBearer => self.identity_assertions().is_some(),
        }
    }

    /// The identity assertion `text`, if it is one of a provider this server trusts (read, not
    /// checked: the token endpoint checks it). Routing reads it for the partition: the
    /// account's its subject is.
    pub(crate) fn identify(&self, text: &str) -> Option<Identity<'_>> {
        // The grant first: a build without it reads no assertion.
        let grant = self.identity_assertions()?;
        let assertion = crate::jose::assertion(text)?;
        let provider = grant.provider(&assertion.claims.iss)?;
        let account = provider
            .accounts
            .iter()
            .find(|(subject, _)| *subject == assertion.claims.sub)
            .map(|(_, account)| account);
        Some(Identity {
            assertion,
            provider,
            account,
        })
    }

    /// The JWT-bearer grant with identity assertions (ID-JAG), if the deployment offers it
    /// (standards profile). Always `None` in a build without the `unannounced` feature, which
    /// verifies no signature (its [`Config::new`] refuses `profile.identity_assertions`).
    pub fn identity_assertions(&self) -> Option<&IdentityAssertions> {
        if !cfg!(feature = "unannounced") {
            return None;
        }
        self.standards()?.identity_assertions.as_ref()
    }

    /// DPoP, if the deployment reads proofs (standards profile). Always `None` in a build
    /// without the `unannounced` feature, which verifies no signature (its [`Config::new`]
    /// refuses `profile.dpop`).
    #[inline(always)]
    pub fn dpop(&self) -> Option<&Dpop> {
        if !cfg!(feature = "unannounced") {
            return None;
        }
        self.standards()?.dpop.as_ref()
    }

    /// Token exchange, if the deployment offers it (standards profile).
    pub fn token_exchange(&self) -> Option<&TokenExchange> {
        self.standards()?.token_exchange.as_ref()
    }

    /// The client credentials grant, if the deployment offers it (standards profile).
    pub fn client_credentials(&self) -> Option<&ClientCredentials> {
        self.standards()?.client_credentials.as_ref()
    }

    /// Whether a client may ask for a refresh token with the scope
    /// [`offline_access`](crate::OFFLINE_ACCESS): in the standards profile.
    pub fn offers_offline_access(&self) -> bool {
        self.issuer().is_some()
    }

    /// Whether every name of `scopes` has the form this profile takes: SPEC.md's
    /// [dotted](Scope::is_dotted) form in the reference profile, any scope token (RFC 6749 §3.3)
    /// in the standards profile.
    pub fn takes_scope_names(&self, scopes: &ScopeSet) -> bool {
        self.issuer().is_some() || scopes.iter().all(Scope::is_dotted)
    }

    /// The Required Scope of every declared API endpoint (a scope once per endpoint).
    pub fn required_scopes(&self) -> impl Iterator<Item = &Scope> {
        self.api_endpoints
            .iter()
            .map(|(_, endpoint)| &endpoint.scope)
    }

    /// The Required Scope of an API endpoint, or `None` if the host did not declare it.
    pub fn required_scope(&self, endpoint: &str) -> Option<&Scope> {
        self.api_endpoint(endpoint)
            .map(|(_, endpoint)| &endpoint.scope)
    }

    /// What in this configuration is valid but most likely a mistake, in words for a log at
    /// start-up: an API endpoint whose Required Scope no app can hold (no configured app has
    /// it, nor may a client that arrives unannounced be granted it), so that every call to it
    /// is refused.
    pub fn warnings(&self) -> Vec<String> {
        let unannounced = self.unannounced().map(|clients| &clients.scopes);
        let mut warnings = Vec::new();
        for (path, endpoint) in &self.api_endpoints {
            let scope = endpoint.scope.as_str();
            let held = |scopes: &ScopeSet| scopes.iter().any(|own| own == scope);
            if self.apps().any(|app| held(&app.scopes())) || unannounced.is_some_and(held) {
                continue;
            }
            let nor = if unannounced.is_some() {
                ", nor profile.clients.scopes"
            } else {
                ""
            };
            warnings.push(format!(
                "api_endpoints[\"{path}\"]: no app can hold its Required Scope {scope}: no app \
                 lists it{nor}, so every call to it is refused"
            ));
        }
        warnings
    }

    /// The most bytes a request body to `path` may hold: its API endpoint's bound, else
    /// [`Policy::max_input_bytes`]. A host reads a body up to one byte past it.
    pub fn body_limit(&self, path: &str) -> usize {
        match self.api_endpoint(path) {
            Some((_, endpoint)) => self.api_body_limit(endpoint),
            None => self.policy.max_input_bytes,
        }
    }

    /// The API endpoint at `path`, with its path as kept.
    fn api_endpoint(&self, path: &str) -> Option<&(Arc<str>, ApiEndpoint)> {
        let at = self
            .api_endpoints
            .binary_search_by(|(kept, _)| (**kept).cmp(path))
            .ok()?;
        self.api_endpoints.get(at)
    }

    fn api_body_limit(&self, endpoint: &ApiEndpoint) -> usize {
        endpoint
            .max_body_bytes
            .unwrap_or(self.policy.max_api_body_bytes)
    }

    /// The API endpoint at `path`, as a request to it is checked.
    pub(crate) fn called_endpoint(&self, path: &str) -> Option<CalledEndpoint> {
        let (path, endpoint) = self.api_endpoint(path)?;
        Some(CalledEndpoint {
            path: path.clone(),
            scope: endpoint.scope.clone(),
        })
    }

    /// The path of the API endpoint whose own URL `resource` (canonical) is, in the standards
    /// profile: the issuer's origin followed by the endpoint's path.
    pub(crate) fn api_endpoint_named(&self, resource: &str) -> Option<&str> {
        let path = resource.strip_prefix(self.issuer()?.resource())?;
        let (path, _) = self.api_endpoint(path)?;
        Some(path)
    }

    /// The API endpoint whose metadata (RFC 9728 §3.1) is at the well-known path followed by
    /// `suffix`: its path without a trailing `/` is `suffix` (`/mcp` before `/mcp/`).
    pub(crate) fn api_endpoint_of_metadata(&self, suffix: &str) -> Option<&str> {
        self.api_endpoints
            .iter()
            .map(|(path, _)| &**path)
            .find(|path| path.trim_end_matches('/') == suffix && !suffix.is_empty())
    }
}

/// Whether `presented` is the registered redirect URI `registered` (see [`App::has_redirect_uri`]).
pub(crate) fn redirect_matches(registered: &RedirectUri, presented: &str) -> bool {
    registered.as_str() == presented
        || HttpUri::parse(registered.as_str())
            .zip(HttpUri::parse(presented))
            .is_some_and(|(registered, presented)| registered.admits_redirect(&presented))
}

impl From<Config> for ConfigDocument {
    fn from(config: Config) -> Self {
        ConfigDocument {
            apps: config.apps,
            policy: config.policy,
            api_endpoints: config
                .api_endpoints
                .into_iter()
                .map(|(path, endpoint)| (path.to_string(), endpoint))
                .collect(),
            pages: config.pages.source,
            profile: config.profile,
            server_key: Some(config.server_key),
            scope_descriptions: config.scope_descriptions,
        }
    }
}
