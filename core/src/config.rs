//! The configuration a host passes on every call: registered apps, policy switches and the
//! Required Scope of each API endpoint. Validated once, when built.

use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::credentials::{SecretDigest, ServerKey};
use crate::ids::{AppKey, RedirectUri};
use crate::pages::{PageTemplates, Pages, TemplateError};
use crate::scope::{LegacyAccess, Scope, ScopeSet};
use crate::time::{Seconds, UnixTime};
use crate::wire::uri::{HttpUri, Scheme};

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Two apps share one key.
    #[error("app key {0} is registered twice")]
    DuplicateApp(AppKey),
    /// A scoped app lists no scope.
    #[error("scoped app {0} has no scopes")]
    NoScopes(AppKey),
    /// The code lifetime is zero or longer than RFC 6749 §4.1.2's recommended ten minutes.
    #[error("code_ttl must be 1..=600 seconds, got {0}")]
    CodeTtl(u64),
    /// The access-token lifetime is zero.
    #[error("access_token_ttl must be at least one second")]
    AccessTokenTtl,
    /// The input limit is too small to hold a real request.
    #[error("max_input_bytes must be at least 1024")]
    InputLimit,
    /// An API endpoint path that does not start with `/2/`.
    #[error("API endpoint \"{0}\" must start with /2/")]
    EndpointPath(String),
    /// Only legacy apps can migrate to scopes.
    #[error("app {0} is already scoped")]
    AlreadyScoped(AppKey),
    /// No app is registered under this key.
    #[error("no app is registered as \"{0}\"")]
    UnknownApp(String),
    /// A redirect URI the policy does not allow.
    #[error("app {app}: redirect URI {uri}: {problem}")]
    RedirectUri {
        /// The app.
        app: AppKey,
        /// The URI as registered.
        uri: String,
        /// Why it cannot be registered.
        problem: &'static str,
    },
    /// `max_attempts` is zero.
    #[error("max_attempts must be at least 1")]
    Attempts,
    /// The document is not JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// A field of the document is missing or does not hold what it must.
    #[error("{field}: {problem}")]
    Field {
        /// Where the field is, as a path: `apps[0].redirect_uris[1]`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A page template does not compile.
    #[error("the {page} page template: {reason}")]
    Template {
        /// Which page.
        page: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// What an app may be granted.
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DefaultTokenType {
    /// Short-lived access tokens only (`online`). The default of newly created scoped apps.
    #[default]
    ShortLived,
    /// Long-lived (non-expiring) access tokens, created only before
    /// [`Policy::long_lived_cutoff`]; from then on such apps get short-lived tokens.
    LongLived,
}

/// One registered app (client).
#[derive(Clone, Debug, PartialEq, Eq)]
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

    /// This legacy app migrated to scopes, pre-selected from its access type (user-API apps get
    /// every user scope; team auditing gets `team_info.read members.read groups.read events.read`).
    ///
    /// Tokens issued before the migration are untouched: every token carries the scopes it was
    /// granted, so swapping the app in the configuration changes only what new tokens get.
    pub fn migrated_to_scopes(&self) -> Result<App, ConfigError> {
        match &self.permissions {
            Permissions::Scoped { .. } => Err(ConfigError::AlreadyScoped(self.key.clone())),
            Permissions::Legacy { access } => Ok(App {
                permissions: Permissions::Scoped {
                    scopes: access.scopes(),
                },
                ..self.clone()
            }),
        }
    }
}

/// Policy switches. Every field has the default of DESIGN.md.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Lifetime of an authorization code: 1..=600 s. Default 600.
    pub code_ttl: Seconds,
    /// Lifetime of a short-lived access token. Default 14 400 s (4 h).
    pub access_token_ttl: Seconds,
    /// Refuse `code_challenge_method=plain` (RFC 9700 §2.1.1 recommends S256).
    pub require_s256: bool,
    /// From this instant on, no long-lived access token is created. Default 2021-10-01T00:00:00Z.
    pub long_lived_cutoff: UnixTime,
    /// The largest query string or request body accepted, in bytes (header values are held to
    /// the same bound). Default 16 384.
    pub max_input_bytes: usize,
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
pub enum Profile {
    /// The reference service: nothing beyond SPEC.md is served.
    #[default]
    Reference,
    /// The reference service and the standards around it.
    Standards {
        /// This server's issuer identifier.
        issuer: Issuer,
        /// The resources (RFC 8707) it issues tokens for besides the API it serves itself
        /// (whose identifier is the issuer's origin): APIs on other hosts, MCP servers.
        resources: Vec<Resource>,
        /// How refresh tokens rotate (RFC 9700 §4.14.2).
        rotation: Rotation,
        /// The apps that serve resources and may introspect the access tokens issued for
        /// them (RFC 7662 §4); without one, only a token's own app learns anything of it.
        resource_servers: Vec<ResourceServer>,
    },
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
    /// The Required Scope of each API endpoint, by path (`/2/users/get_current_account` →
    /// `account_info.read`).
    pub api_endpoints: BTreeMap<String, Scope>,
    /// The host's templates of the pages of the flow (consent, code, error, sign-in); the
    /// core's plain defaults stand in for any left out.
    pub pages: PageTemplates,
    /// The dialect: the reference service (default), or with the standards around it.
    pub profile: Profile,
    /// The server's own secret key (`server_key`), required: partitions and the seal of every
    /// credential are derived under it, and rotated refresh tokens (see [`ServerKey`]).
    pub server_key: Option<ServerKey>,
}

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
///     api_endpoints: [("/2/users/get_current_account".to_string(), Scope::new("account_info.read").unwrap())].into(),
///     pages: PageTemplates::default(),
///     profile: Profile::Reference,
///     server_key: Some(ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap()),
/// }).unwrap();
/// assert!(config.app("demo-app").is_some());
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Sorted by key, each key once (a sorted vector: a handful of apps, read far more often
    /// than built, and less code than a tree).
    apps: Vec<App>,
    policy: Policy,
    api_endpoints: BTreeMap<String, Scope>,
    pages: Pages,
    profile: Profile,
    server_key: ServerKey,
}

impl Config {
    /// Reads and validates the JSON text of a configuration document.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Config::new(ConfigDocument::from_json(text)?)
    }

    /// Validates a configuration document.
    pub fn new(doc: ConfigDocument) -> Result<Self, ConfigError> {
        let policy = doc.policy;
        if !(1..=600).contains(&policy.code_ttl.0) {
            return Err(ConfigError::CodeTtl(policy.code_ttl.0));
        }
        if policy.access_token_ttl.0 == 0 {
            return Err(ConfigError::AccessTokenTtl);
        }
        if policy.max_input_bytes < 1024 {
            return Err(ConfigError::InputLimit);
        }
        if policy.max_attempts == 0 {
            return Err(ConfigError::Attempts);
        }
        if policy.attempts.window.0 == 0 {
            return Err(problem(
                "policy.attempts.window",
                "must be at least one second",
            ));
        }
        if let Profile::Standards { rotation, .. } = &doc.profile {
            check_rotation(rotation, &policy)?;
        }
        if let Some(idle) = policy.refresh_idle_lifetime {
            if doc.profile == Profile::Reference {
                return Err(problem(
                    "policy.refresh_idle_lifetime",
                    "needs the standards profile (SPEC.md's refresh tokens never expire)",
                ));
            }
            if idle.0 <= policy.access_token_ttl.0 {
                return Err(problem(
                    "policy.refresh_idle_lifetime",
                    "must be longer than policy.access_token_ttl",
                ));
            }
        }
        let pages = Pages::compile(doc.pages)
            .map_err(|TemplateError { page, reason }| ConfigError::Template { page, reason })?;
        if let Some(path) = doc.api_endpoints.keys().find(|p| !p.starts_with("/2/")) {
            return Err(ConfigError::EndpointPath(path.clone()));
        }
        let mut apps: Vec<App> = Vec::with_capacity(doc.apps.len());
        for app in doc.apps {
            if app.scopes().is_empty() {
                return Err(ConfigError::NoScopes(app.key));
            }
            for uri in &app.redirect_uris {
                check_redirect_uri(uri, &policy).map_err(|problem| ConfigError::RedirectUri {
                    app: app.key.clone(),
                    uri: uri.as_str().to_owned(),
                    problem,
                })?;
            }
            match apps.binary_search_by(|a| a.key.cmp(&app.key)) {
                Ok(_) => return Err(ConfigError::DuplicateApp(app.key)),
                Err(at) => apps.insert(at, app),
            }
        }
        let Some(server_key) = doc.server_key else {
            return Err(problem(
                "server_key",
                "is missing: partitions and credentials are derived under it \
                 (32 random bytes, base64url; keep it out of the store and the logs)",
            ));
        };
        let config = Config {
            apps,
            policy,
            api_endpoints: doc.api_endpoints,
            pages,
            profile: doc.profile,
            server_key,
        };
        config.check_resource_servers()?;
        Ok(config)
    }

    /// Each resource server is a confidential app (introspection takes a secret) and serves
    /// resources this server issues tokens for.
    fn check_resource_servers(&self) -> Result<(), ConfigError> {
        let Profile::Standards {
            resource_servers, ..
        } = &self.profile
        else {
            return Ok(());
        };
        for (i, server) in resource_servers.iter().enumerate() {
            if !self
                .app(server.app.as_str())
                .is_some_and(App::is_confidential)
            {
                return Err(problem(
                    &format!("profile.resource_servers[{i}].app"),
                    "must be a registered app with a secret",
                ));
            }
            if let Some(j) = server
                .resources
                .iter()
                .position(|r| !self.knows_resource(r.as_str()))
            {
                return Err(problem(
                    &format!("profile.resource_servers[{i}].resources[{j}]"),
                    "must be one of profile.resources or the issuer's origin",
                ));
            }
        }
        Ok(())
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
        match &self.profile {
            Profile::Reference => None,
            Profile::Standards { rotation, .. } => Some(rotation),
        }
    }

    /// The server's own secret key.
    pub fn server_key(&self) -> &ServerKey {
        &self.server_key
    }

    /// The issuer identifier, in the standards profile.
    pub fn issuer(&self) -> Option<&Issuer> {
        match &self.profile {
            Profile::Reference => None,
            Profile::Standards { issuer, .. } => Some(issuer),
        }
    }

    /// Whether tokens may be issued for `resource` (RFC 8707), given in its
    /// [canonical form](Resource::canonical): the API served here (the issuer's origin) or a
    /// configured one. Never in the reference profile.
    pub fn knows_resource(&self, resource: &str) -> bool {
        match &self.profile {
            Profile::Reference => false,
            Profile::Standards {
                issuer, resources, ..
            } => issuer.resource() == resource || resources.iter().any(|r| r.as_str() == resource),
        }
    }

    /// Whether `app` serves `resource` (given canonical) as a configured resource server.
    pub fn serves(&self, app: &AppKey, resource: &str) -> bool {
        match &self.profile {
            Profile::Reference => false,
            Profile::Standards {
                resource_servers, ..
            } => resource_servers
                .iter()
                .any(|s| &s.app == app && s.resources.iter().any(|r| r.as_str() == resource)),
        }
    }

    /// The Required Scope of every declared API endpoint (a scope once per endpoint).
    pub fn required_scopes(&self) -> impl Iterator<Item = &Scope> {
        self.api_endpoints.values()
    }

    /// The Required Scope of an API endpoint, or `None` if the host did not declare it.
    pub fn required_scope(&self, endpoint: &str) -> Option<&Scope> {
        self.api_endpoints.get(endpoint)
    }

    /// This configuration with `app` registered in place of the app with the same key (or added),
    /// e.g. after [`App::migrated_to_scopes`].
    pub fn with_app(&self, app: App) -> Result<Config, ConfigError> {
        let mut doc = ConfigDocument::from(self.clone());
        doc.apps.retain(|a| a.key != app.key);
        doc.apps.push(app);
        Config::new(doc)
    }
}

impl Config {
    /// This configuration with the legacy app `key` migrated to scopes (what the app console
    /// does; see [`App::migrated_to_scopes`]). Tokens already issued keep their scopes.
    pub fn with_app_migrated(&self, key: &str) -> Result<Config, ConfigError> {
        let app = self
            .app(key)
            .ok_or_else(|| ConfigError::UnknownApp(key.to_owned()))?;
        self.with_app(app.migrated_to_scopes()?)
    }
}

/// Whether `presented` is the registered redirect URI `registered` (see [`App::has_redirect_uri`]).
pub(crate) fn redirect_matches(registered: &RedirectUri, presented: &str) -> bool {
    registered.as_str() == presented
        || HttpUri::parse(registered.as_str())
            .zip(HttpUri::parse(presented))
            .is_some_and(|(registered, presented)| registered.admits_redirect(&presented))
}

/// The rules on a web redirect URI beyond its form ([`RedirectUri`]): an authority without
/// user information (which only serves to disguise the host), and `https` unless it is the
/// loopback interface or the policy allows `http` (RFC 9700 §2.6, RFC 8252 §7.3). Other schemes
/// (a native app's private-use scheme, RFC 8252 §7.1) pass.
fn check_redirect_uri(uri: &RedirectUri, policy: &Policy) -> Result<(), &'static str> {
    let text = uri.as_str();
    let web = ["http:", "https:"].iter().any(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    });
    if !web {
        return Ok(());
    }
    let parsed =
        HttpUri::parse(text).ok_or("must be http(s)://host/path with a valid host and port")?;
    if parsed.userinfo {
        return Err("must not carry user information (user@host)");
    }
    if parsed.scheme == Scheme::Http && !parsed.is_loopback() && !policy.allow_http_redirect_uris {
        return Err("http is allowed only on the loopback interface (127.0.0.1, [::1], localhost); use https, or set policy.allow_http_redirect_uris");
    }
    Ok(())
}

impl TryFrom<ConfigDocument> for Config {
    type Error = ConfigError;
    fn try_from(doc: ConfigDocument) -> Result<Self, ConfigError> {
        Config::new(doc)
    }
}

impl From<Config> for ConfigDocument {
    fn from(config: Config) -> Self {
        ConfigDocument {
            apps: config.apps,
            policy: config.policy,
            api_endpoints: config.api_endpoints,
            pages: config.pages.source,
            profile: config.profile,
            server_key: Some(config.server_key),
        }
    }
}

impl PageTemplates {
    /// Reads the templates from their JSON value: an object of `consent`, `code`, `error` and
    /// `sign_in`, each a string (absent or `null`: the core's default).
    pub fn from_json_value(value: &Value) -> Result<Self, ConfigError> {
        let mut pages = PageTemplates::default();
        for (name, value) in object(value, "pages")? {
            let slot = match name.as_str() {
                "consent" => &mut pages.consent,
                "code" => &mut pages.code,
                "error" => &mut pages.error,
                "sign_in" => &mut pages.sign_in,
                _ => continue,
            };
            *slot = match value {
                Value::Null => None,
                text => Some(string(text, &format!("pages.{name}"))?.to_owned()),
            };
        }
        Ok(pages)
    }
}

// The JSON form of the document, read and written explicitly: one small conversion instead of
// serde derives, whose monomorphized deserializers were most of the wasm module. Absent fields
// take their defaults; `null` stands for "none" only where a field is optional
// (`secret_digest`, page templates); unknown fields are ignored.

impl ConfigDocument {
    /// Parses the JSON text of a configuration document (not yet validated: see [`Config::new`]).
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        ConfigDocument::from_json_value(&value)
    }

    /// Reads a configuration document from its JSON value: `apps`, and optionally `policy`,
    /// `api_endpoints`, `pages` and `profile` (`{"kind": "reference"}`, the default, or
    /// `{"kind": "standards", "issuer": "https://…", "resources": ["https://…"]}`). The error
    /// names the field that is wrong.
    pub fn from_json_value(value: &Value) -> Result<Self, ConfigError> {
        let doc = object(value, "the configuration")?;
        let apps = match doc.get("apps") {
            None => return Err(problem("apps", "is missing")),
            Some(apps) => array(apps, "apps")?
                .iter()
                .enumerate()
                .map(|(i, app)| app_from_json(app, &format!("apps[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        let policy = match doc.get("policy") {
            None => Policy::default(),
            Some(policy) => policy_from_json(policy)?,
        };
        let mut api_endpoints = BTreeMap::new();
        if let Some(endpoints) = doc.get("api_endpoints") {
            for (path, scope) in object(endpoints, "api_endpoints")? {
                let at = format!("api_endpoints[\"{path}\"]");
                let scope = Scope::new(string(scope, &at)?).map_err(|e| invalid(&at, e))?;
                api_endpoints.insert(path.clone(), scope);
            }
        }
        let pages = match doc.get("pages") {
            None => PageTemplates::default(),
            Some(pages) => PageTemplates::from_json_value(pages)?,
        };
        let profile = match doc.get("profile") {
            None => Profile::default(),
            Some(profile) => profile_from_json(profile)?,
        };
        let server_key = match doc.get("server_key") {
            None | Some(Value::Null) => None,
            Some(key) => Some(
                ServerKey::from_base64(string(key, "server_key")?)
                    .map_err(|why| problem("server_key", why))?,
            ),
        };
        Ok(ConfigDocument {
            apps,
            policy,
            api_endpoints,
            pages,
            profile,
            server_key,
        })
    }

    /// The document's JSON value, every field written out (what [`from_json_value`] reads back):
    /// what its `Serialize` implementation writes.
    ///
    /// [`from_json_value`]: ConfigDocument::from_json_value
    pub fn to_json_value(&self) -> Value {
        // Infallible: every key is a string.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The document's JSON form, written out field by field in declaration order (the order of
/// the serde derives it replaces). Only strings, whole numbers, booleans and `null` are
/// written, so a serializer's float formatting is never linked.
impl Serialize for ConfigDocument {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut doc = s.serialize_map(Some(5))?;
        doc.serialize_entry("apps", &Each(&self.apps, AppJson))?;
        doc.serialize_entry("policy", &PolicyJson(&self.policy))?;
        doc.serialize_entry("api_endpoints", &EndpointsJson(&self.api_endpoints))?;
        doc.serialize_entry("pages", &self.pages)?;
        doc.serialize_entry("profile", &ProfileJson(&self.profile))?;
        if let Some(key) = &self.server_key {
            doc.serialize_entry("server_key", &key.to_base64())?;
        }
        doc.end()
    }
}

/// A list of `T`s written through the wrapper `W`.
struct Each<'a, T, W>(&'a [T], fn(&'a T) -> W);

impl<'a, T, W: Serialize> Serialize for Each<'a, T, W> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(self.1))
    }
}

struct AppJson<'a>(&'a App);

impl Serialize for AppJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let app = self.0;
        let mut out = s.serialize_map(Some(9))?;
        out.serialize_entry("key", app.key.as_str())?;
        out.serialize_entry("name", &app.name)?;
        out.serialize_entry("secret_digest", &app.secret_digest.map(|d| d.to_base64()))?;
        out.serialize_entry(
            "redirect_uris",
            &Each(&app.redirect_uris, RedirectUri::as_str),
        )?;
        out.serialize_entry("permissions", &PermissionsJson(&app.permissions))?;
        let token_type = match app.default_token_type {
            DefaultTokenType::ShortLived => "short_lived",
            DefaultTokenType::LongLived => "long_lived",
        };
        out.serialize_entry("default_token_type", token_type)?;
        out.serialize_entry("implicit_allowed", &app.implicit_allowed)?;
        out.end()
    }
}

struct PermissionsJson<'a>(&'a Permissions);

impl Serialize for PermissionsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(2))?;
        match self.0 {
            Permissions::Scoped { scopes } => {
                out.serialize_entry("kind", "scoped")?;
                out.serialize_entry("scopes", &ScopesJson(scopes))?;
            }
            Permissions::Legacy { access } => {
                let access = match access {
                    LegacyAccess::AppFolder => "app_folder",
                    LegacyAccess::FullDropbox => "full_dropbox",
                    LegacyAccess::TeamInformation => "team_information",
                    LegacyAccess::TeamAuditing => "team_auditing",
                };
                out.serialize_entry("kind", "legacy")?;
                out.serialize_entry("access", access)?;
            }
        }
        out.end()
    }
}

/// A scope set as a list of scopes.
pub(crate) struct ScopesJson<'a>(pub &'a ScopeSet);

impl Serialize for ScopesJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

struct PolicyJson<'a>(&'a Policy);

impl Serialize for PolicyJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut out = s.serialize_map(Some(8))?;
        out.serialize_entry("code_ttl", &p.code_ttl.0)?;
        out.serialize_entry("access_token_ttl", &p.access_token_ttl.0)?;
        out.serialize_entry("require_s256", &p.require_s256)?;
        out.serialize_entry("long_lived_cutoff", &p.long_lived_cutoff.0)?;
        out.serialize_entry("max_input_bytes", &(p.max_input_bytes as u64))?;
        out.serialize_entry("token_parameters_in_query", &p.token_parameters_in_query)?;
        out.serialize_entry("max_attempts", &u64::from(p.max_attempts))?;
        out.serialize_entry("allow_http_redirect_uris", &p.allow_http_redirect_uris)?;
        out.serialize_entry("attempts", &AttemptsJson(&p.attempts))?;
        if let Some(bound) = p.live_grants_per_link {
            out.serialize_entry("live_grants_per_link", &u64::from(bound))?;
        }
        if let Some(idle) = p.refresh_idle_lifetime {
            out.serialize_entry("refresh_idle_lifetime", &idle.0)?;
        }
        out.end()
    }
}

struct AttemptsJson<'a>(&'a AttemptLimits);

impl Serialize for AttemptsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut out = s.serialize_map(Some(3))?;
        out.serialize_entry("window", &a.window.0)?;
        out.serialize_entry("per_source", &u64::from(a.per_source))?;
        out.serialize_entry("per_account", &u64::from(a.per_account))?;
        out.end()
    }
}

struct ProfileJson<'a>(&'a Profile);

impl Serialize for ProfileJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(None)?;
        match self.0 {
            Profile::Reference => out.serialize_entry("kind", "reference")?,
            Profile::Standards {
                issuer,
                resources,
                rotation,
                resource_servers,
            } => {
                out.serialize_entry("kind", "standards")?;
                out.serialize_entry("issuer", issuer.as_str())?;
                out.serialize_entry("resources", &Each(resources, Resource::as_str))?;
                out.serialize_entry("rotation", &RotationJson(rotation))?;
                if !resource_servers.is_empty() {
                    out.serialize_entry(
                        "resource_servers",
                        &Each(resource_servers, ResourceServerJson),
                    )?;
                }
            }
        }
        out.end()
    }
}

fn profile_from_json(value: &Value) -> Result<Profile, ConfigError> {
    let profile = object(value, "profile")?;
    let kind = profile
        .get("kind")
        .ok_or_else(|| problem("profile.kind", "is missing"))?;
    match string(kind, "profile.kind")? {
        "reference" => Ok(Profile::Reference),
        "standards" => {
            let issuer = profile
                .get("issuer")
                .ok_or_else(|| problem("profile.issuer", "is missing"))?;
            let issuer = Issuer::new(string(issuer, "profile.issuer")?)
                .map_err(|why| problem("profile.issuer", why))?;
            let resources = match profile.get("resources") {
                Some(list) => resources_from_json(list, "profile.resources")?,
                None => Vec::new(),
            };
            let mut resource_servers = Vec::new();
            if let Some(list) = profile.get("resource_servers") {
                for (i, server) in array(list, "profile.resource_servers")?.iter().enumerate() {
                    let at = format!("profile.resource_servers[{i}]");
                    let fields = object(server, &at)?;
                    let app_at = format!("{at}.app");
                    let app = fields
                        .get("app")
                        .ok_or_else(|| problem(&app_at, "is missing"))?;
                    let app = AppKey::new(string(app, &app_at)?)
                        .map_err(|_| problem(&app_at, "is not an app key"))?;
                    let list_at = format!("{at}.resources");
                    let list = fields
                        .get("resources")
                        .ok_or_else(|| problem(&list_at, "is missing"))?;
                    let resources = resources_from_json(list, &list_at)?;
                    resource_servers.push(ResourceServer { app, resources });
                }
            }
            let rotation = match profile.get("rotation") {
                None => Rotation::default(),
                Some(value) => rotation_from_json(value)?,
            };
            Ok(Profile::Standards {
                issuer,
                resources,
                rotation,
                resource_servers,
            })
        }
        _ => Err(problem("profile.kind", "expected reference or standards")),
    }
}

/// A list of resource identifiers, each checked.
fn resources_from_json(list: &Value, at: &str) -> Result<Vec<Resource>, ConfigError> {
    let mut resources = Vec::new();
    for (i, resource) in array(list, at)?.iter().enumerate() {
        let at = format!("{at}[{i}]");
        resources.push(Resource::new(string(resource, &at)?).map_err(|why| problem(&at, why))?);
    }
    Ok(resources)
}

struct ResourceServerJson<'a>(&'a ResourceServer);

impl Serialize for ResourceServerJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(2))?;
        out.serialize_entry("app", self.0.app.as_str())?;
        out.serialize_entry("resources", &Each(&self.0.resources, Resource::as_str))?;
        out.end()
    }
}

struct RotationJson<'a>(&'a Rotation);

impl Serialize for RotationJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rotation = self.0;
        let mut out = s.serialize_map(None)?;
        let clients = match rotation.clients {
            RotatedClients::Public => "public",
            RotatedClients::All => "all",
        };
        out.serialize_entry("clients", clients)?;
        out.serialize_entry("retry_window", &rotation.retry_window.0)?;
        out.serialize_entry("reuse_detection", &rotation.reuse_detection.0)?;
        out.end()
    }
}

fn rotation_from_json(value: &Value) -> Result<Rotation, ConfigError> {
    let fields = object(value, "profile.rotation")?;
    let mut rotation = Rotation::default();
    if let Some(clients) = fields.get("clients") {
        rotation.clients = match string(clients, "profile.rotation.clients")? {
            "public" => RotatedClients::Public,
            "all" => RotatedClients::All,
            _ => {
                return Err(problem(
                    "profile.rotation.clients",
                    "expected public or all",
                ))
            }
        };
    }
    if let Some(window) = fields.get("retry_window") {
        rotation.retry_window = Seconds(whole(window, "profile.rotation.retry_window")?);
    }
    if let Some(kept) = fields.get("reuse_detection") {
        rotation.reuse_detection = Seconds(whole(kept, "profile.rotation.reuse_detection")?);
    }
    Ok(rotation)
}

/// The bounds of [`Rotation`]: a retry window short enough that the answer it repeats is still
/// live (its access token), and reuse caught at least as long as a retry is honoured.
fn check_rotation(rotation: &Rotation, policy: &Policy) -> Result<(), ConfigError> {
    let window = rotation.retry_window.0;
    if window > 300 {
        return Err(problem(
            "profile.rotation.retry_window",
            "must be at most 300 seconds",
        ));
    }
    if window >= policy.access_token_ttl.0 {
        return Err(problem(
            "profile.rotation.retry_window",
            "must be shorter than policy.access_token_ttl (a retry repeats a live access token)",
        ));
    }
    if rotation.reuse_detection.0 < window.max(1) {
        return Err(problem(
            "profile.rotation.reuse_detection",
            "must be at least one second and at least the retry window",
        ));
    }
    Ok(())
}

struct EndpointsJson<'a>(&'a BTreeMap<String, Scope>);

impl Serialize for EndpointsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(path, scope)| (path, scope.as_str())))
    }
}

impl<'de> Deserialize<'de> for ConfigDocument {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ConfigDocument::from_json_value(&Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Config {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ConfigDocument::from(self.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Config::new(ConfigDocument::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

fn app_from_json(value: &Value, at: &str) -> Result<App, ConfigError> {
    let app = object(value, at)?;
    let field = |name: &str| format!("{at}.{name}");
    let required = |name: &str| {
        app.get(name)
            .ok_or_else(|| problem(&field(name), "is missing"))
    };
    let key = AppKey::new(string(required("key")?, &field("key"))?)
        .map_err(|e| invalid(&field("key"), e))?;
    let name = string(required("name")?, &field("name"))?.to_owned();
    let secret_digest = match app.get("secret_digest") {
        None | Some(Value::Null) => None,
        Some(digest) => {
            let at = field("secret_digest");
            let digest = SecretDigest::from_base64(string(digest, &at)?)
                .ok_or_else(|| problem(&at, "expected 32 bytes in URL-safe base64"))?;
            Some(digest)
        }
    };
    let mut redirect_uris = Vec::new();
    if let Some(uris) = app.get("redirect_uris") {
        for (i, uri) in array(uris, &field("redirect_uris"))?.iter().enumerate() {
            let at = format!("{at}.redirect_uris[{i}]");
            redirect_uris.push(RedirectUri::new(string(uri, &at)?).map_err(|e| invalid(&at, e))?);
        }
    }
    let permissions = {
        let at = field("permissions");
        let permissions = object(required("permissions")?, &at)?;
        let member = |name: &str| {
            permissions
                .get(name)
                .ok_or_else(|| problem(&format!("{at}.{name}"), "is missing"))
        };
        match string(member("kind")?, &format!("{at}.kind"))? {
            "scoped" => {
                let at = format!("{at}.scopes");
                let mut scopes = Vec::new();
                for (i, scope) in array(member("scopes")?, &at)?.iter().enumerate() {
                    let at = format!("{at}[{i}]");
                    scopes.push(Scope::new(string(scope, &at)?).map_err(|e| invalid(&at, e))?);
                }
                Permissions::Scoped {
                    scopes: ScopeSet::from_scopes(scopes),
                }
            }
            "legacy" => {
                let at = format!("{at}.access");
                let access =
                    match string(member("access")?, &at)? {
                        "app_folder" => LegacyAccess::AppFolder,
                        "full_dropbox" => LegacyAccess::FullDropbox,
                        "team_information" => LegacyAccess::TeamInformation,
                        "team_auditing" => LegacyAccess::TeamAuditing,
                        _ => return Err(problem(
                            &at,
                            "expected app_folder, full_dropbox, team_information or team_auditing",
                        )),
                    };
                Permissions::Legacy { access }
            }
            _ => return Err(problem(&format!("{at}.kind"), "expected scoped or legacy")),
        }
    };
    let default_token_type = match app.get("default_token_type") {
        None => DefaultTokenType::default(),
        Some(value) => {
            let at = field("default_token_type");
            match string(value, &at)? {
                "short_lived" => DefaultTokenType::ShortLived,
                "long_lived" => DefaultTokenType::LongLived,
                _ => return Err(problem(&at, "expected short_lived or long_lived")),
            }
        }
    };
    let implicit_allowed = match app.get("implicit_allowed") {
        None => false,
        Some(value) => boolean(value, &field("implicit_allowed"))?,
    };
    Ok(App {
        key,
        name,
        secret_digest,
        redirect_uris,
        permissions,
        default_token_type,
        implicit_allowed,
    })
}

fn policy_from_json(value: &Value) -> Result<Policy, ConfigError> {
    let mut policy = Policy::default();
    for (name, value) in object(value, "policy")? {
        let at = format!("policy.{name}");
        match name.as_str() {
            "code_ttl" => policy.code_ttl = Seconds(whole(value, &at)?),
            "access_token_ttl" => policy.access_token_ttl = Seconds(whole(value, &at)?),
            "require_s256" => policy.require_s256 = boolean(value, &at)?,
            "long_lived_cutoff" => policy.long_lived_cutoff = UnixTime(whole(value, &at)?),
            "max_input_bytes" => {
                policy.max_input_bytes = usize::try_from(whole(value, &at)?)
                    .map_err(|_| problem(&at, "is too large"))?;
            }
            "token_parameters_in_query" => policy.token_parameters_in_query = boolean(value, &at)?,
            "allow_http_redirect_uris" => policy.allow_http_redirect_uris = boolean(value, &at)?,
            "attempts" => policy.attempts = attempts_from_json(value, &at)?,
            "live_grants_per_link" => {
                let bound = u32::try_from(whole(value, &at)?)
                    .ok()
                    .filter(|&bound| bound >= 1)
                    .ok_or_else(|| problem(&at, "must be at least 1"))?;
                policy.live_grants_per_link = Some(bound);
            }
            "refresh_idle_lifetime" => {
                policy.refresh_idle_lifetime = Some(Seconds(whole(value, &at)?));
            }
            "max_attempts" => {
                policy.max_attempts =
                    u32::try_from(whole(value, &at)?).map_err(|_| problem(&at, "is too large"))?;
            }
            _ => {}
        }
    }
    Ok(policy)
}

fn attempts_from_json(value: &Value, at: &str) -> Result<AttemptLimits, ConfigError> {
    let mut limits = AttemptLimits::default();
    let count = |value: &Value, at: &str| {
        u32::try_from(whole(value, at)?).map_err(|_| problem(at, "is too large"))
    };
    for (name, value) in object(value, at)? {
        let at = format!("{at}.{name}");
        match name.as_str() {
            "window" => limits.window = Seconds(whole(value, &at)?),
            // No longer a limit (see AttemptLimits): still accepted, for older documents.
            "per_client" => {
                count(value, &at)?;
            }
            "per_source" => limits.per_source = count(value, &at)?,
            "per_account" => limits.per_account = count(value, &at)?,
            _ => {}
        }
    }
    Ok(limits)
}

pub(crate) fn problem(field: &str, problem: &str) -> ConfigError {
    ConfigError::Field {
        field: field.to_owned(),
        problem: problem.to_owned(),
    }
}

fn invalid(field: &str, error: crate::ids::InvalidId) -> ConfigError {
    ConfigError::Field {
        field: field.to_owned(),
        problem: error.to_string(),
    }
}

pub(crate) fn object<'v>(
    value: &'v Value,
    at: &str,
) -> Result<&'v Map<String, Value>, ConfigError> {
    value
        .as_object()
        .ok_or_else(|| problem(at, "expected an object"))
}

fn array<'v>(value: &'v Value, at: &str) -> Result<&'v [Value], ConfigError> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| problem(at, "expected a list"))
}

pub(crate) fn string<'v>(value: &'v Value, at: &str) -> Result<&'v str, ConfigError> {
    value
        .as_str()
        .ok_or_else(|| problem(at, "expected a string"))
}

fn boolean(value: &Value, at: &str) -> Result<bool, ConfigError> {
    value
        .as_bool()
        .ok_or_else(|| problem(at, "expected true or false"))
}

/// A whole number, 0 or more.
fn whole(value: &Value, at: &str) -> Result<u64, ConfigError> {
    value
        .as_u64()
        .ok_or_else(|| problem(at, "expected a whole number, 0 or more"))
}
