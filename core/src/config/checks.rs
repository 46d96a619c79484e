//! The checks that make a [`ConfigDocument`] a [`Config`]: every limit, every redirect URI,
//! the profile's rotation and resource servers. A configuration exists only valid.

use super::{
    App, Config, ConfigDocument, DefaultTokenType, DocumentPolicy, Issuer, Permissions, Policy,
    Profile, ProviderKeys, Rotation, UnannouncedClients,
};
use crate::ids::{https_host, AppKey, RedirectUri};
use crate::pages::{Pages, TemplateError};
use crate::prelude::*;
use crate::scope::{Scope, OFFLINE_ACCESS};
use crate::wire::uri::{HttpUri, Scheme};
use alloc::sync::Arc;

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
    /// An API endpoint path that does not start with `/2/` (the reference profile), or — in the
    /// standards profile — is no absolute path or lies among the core's own endpoints.
    #[error("API endpoint \"{0}\" must start with /2/ (the standards profile: any absolute path but under /oauth2/ or /.well-known/)")]
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

impl App {
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

impl Config {
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
        if let Profile::Standards(standards) = &doc.profile {
            check_rotation(&standards.rotation, &policy)?;
            if let Some(clients) = &standards.clients {
                if !cfg!(feature = "unannounced") {
                    return Err(problem("profile.clients", WITHOUT_UNANNOUNCED));
                }
                check_unannounced(clients, &policy)?;
            }
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
        let standards = doc.profile != Profile::Reference;
        // SPEC.md's API is under /2/; the standards profile serves others too (an MCP server's
        // /mcp), never where the core's own endpoints are.
        let servable = |path: &str| match standards {
            false => path.starts_with("/2/"),
            true => {
                path.starts_with('/')
                    && path.len() > 1
                    && !path.starts_with("/oauth2/")
                    && !path.starts_with("/.well-known/")
                    && path
                        .bytes()
                        .all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#')
            }
        };
        if let Some(path) = doc.api_endpoints.keys().find(|p| !servable(p)) {
            return Err(ConfigError::EndpointPath(path.clone()));
        }
        for (path, endpoint) in &doc.api_endpoints {
            check_scope_name(endpoint.scope.as_str(), standards)
                .map_err(|reason| problem(&format!("api_endpoints[\"{path}\"]"), reason))?;
        }
        let mut apps: Vec<App> = Vec::with_capacity(doc.apps.len());
        for (i, app) in doc.apps.into_iter().enumerate() {
            let scopes = app.scopes();
            if scopes.is_empty() {
                return Err(ConfigError::NoScopes(app.key));
            }
            if let Some(reason) = scopes
                .iter()
                .find_map(|name| check_scope_name(name, standards).err())
            {
                return Err(problem(&format!("apps[{i}].permissions.scopes"), reason));
            }
            if app.default_token_type == DefaultTokenType::Offline && !standards {
                return Err(problem(
                    &format!("apps[{i}].default_token_type"),
                    "offline needs the standards profile (the reference service asks for \
                     refresh tokens with token_access_type=offline)",
                ));
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
            api_endpoints: doc
                .api_endpoints
                .into_iter()
                .map(|(path, endpoint)| (Arc::from(path), endpoint))
                .collect(),
            pages,
            profile: doc.profile,
            server_key,
            scope_descriptions: doc.scope_descriptions,
        };
        config.check_resource_servers()?;
        config.check_client_credentials()?;
        config.check_identity_assertions()?;
        config.check_dpop()?;
        if config
            .token_exchange()
            .is_some_and(|grant| grant.access_token_lifetime.0 == 0)
        {
            return Err(problem(
                "profile.token_exchange.access_token_lifetime",
                "must be at least one second",
            ));
        }
        Ok(config)
    }

    /// DPoP verifies signatures (the whole build's), within a window of at least a second, and
    /// is required only of configured apps.
    fn check_dpop(&self) -> Result<(), ConfigError> {
        let Some(dpop) = self.standards().and_then(|s| s.dpop.as_ref()) else {
            return Ok(());
        };
        if !cfg!(feature = "unannounced") {
            return Err(problem("profile.dpop", WITHOUT_UNANNOUNCED));
        }
        if dpop.proof_window.0 == 0 {
            return Err(problem(
                "profile.dpop.proof_window",
                "must be at least one second",
            ));
        }
        for (i, app) in dpop.required.apps.iter().enumerate() {
            if self.app(app.as_str()).is_none() {
                return Err(problem(
                    &format!("profile.dpop.required.apps[{i}]"),
                    "is not a configured app",
                ));
            }
        }
        Ok(())
    }

    /// Each identity provider is named once, by an https issuer identifier, with a key to check
    /// its assertions by.
    fn check_identity_assertions(&self) -> Result<(), ConfigError> {
        let Some(standards) = self.standards() else {
            return Ok(());
        };
        let Some(grant) = &standards.identity_assertions else {
            return Ok(());
        };
        if !cfg!(feature = "unannounced") {
            return Err(problem("profile.identity_assertions", WITHOUT_UNANNOUNCED));
        }
        for (i, provider) in grant.providers.iter().enumerate() {
            let at = |field: &str| format!("profile.identity_assertions.providers[{i}].{field}");
            if let Err(why) = Issuer::new(&provider.issuer) {
                return Err(problem(&at("issuer"), why));
            }
            if grant
                .providers
                .iter()
                .take(i)
                .any(|p| p.issuer == provider.issuer)
            {
                return Err(problem(&at("issuer"), "names a provider named before"));
            }
            match &provider.keys {
                ProviderKeys::Inline(keys) if keys.is_empty() => {
                    return Err(problem(
                        &at("jwks"),
                        "holds no ES256 or RS256 signing key to check its assertions by",
                    ))
                }
                ProviderKeys::Remote(url) if https_host(url).is_none() => {
                    return Err(problem(
                        &at("jwks_uri"),
                        "must be an https URL with a host and a path, without credentials, a \
                         fragment or dot segments",
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Each app the client credentials grant names is a configured app with a secret: a client
    /// that cannot authenticate can never get a token for itself.
    fn check_client_credentials(&self) -> Result<(), ConfigError> {
        let Some(grant) = self.client_credentials() else {
            return Ok(());
        };
        for (i, app) in grant.apps.iter().enumerate() {
            if !self.app(app.as_str()).is_some_and(App::is_confidential) {
                return Err(problem(
                    &format!("profile.client_credentials.apps[{i}]"),
                    "must be a registered app with a secret",
                ));
            }
        }
        if grant.unannounced && self.unannounced().is_none() {
            return Err(problem(
                "profile.client_credentials.unannounced",
                "needs profile.clients (the clients that arrive unannounced)",
            ));
        }
        if grant.access_token_lifetime.0 == 0 {
            return Err(problem(
                "profile.client_credentials.access_token_lifetime",
                "must be at least one second",
            ));
        }
        Ok(())
    }

    /// Each resource server is a confidential app (introspection takes a secret) and serves
    /// resources this server issues tokens for.
    fn check_resource_servers(&self) -> Result<(), ConfigError> {
        let Some(standards) = self.standards() else {
            return Ok(());
        };
        for (i, server) in standards.resource_servers.iter().enumerate() {
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

    /// This configuration with `app` registered in place of the app with the same key (or added),
    /// e.g. after [`App::migrated_to_scopes`].
    pub fn with_app(&self, app: App) -> Result<Config, ConfigError> {
        let mut doc = ConfigDocument::from(self.clone());
        doc.apps.retain(|a| a.key != app.key);
        doc.apps.push(app);
        Config::new(doc)
    }

    /// This configuration with the legacy app `key` migrated to scopes (what the app console
    /// does; see [`App::migrated_to_scopes`]). Tokens already issued keep their scopes.
    pub fn with_app_migrated(&self, key: &str) -> Result<Config, ConfigError> {
        let app = self
            .app(key)
            .ok_or_else(|| ConfigError::UnknownApp(key.to_owned()))?;
        self.with_app(app.migrated_to_scopes()?)
    }
}

/// A configured scope (an app's, or an endpoint's Required Scope) in the form the profile
/// takes; never [`OFFLINE_ACCESS`], which every app may ask for and no endpoint can require.
fn check_scope_name(name: &str, standards: bool) -> Result<(), &'static str> {
    if !standards && !Scope::is_dotted(name) {
        return Err(
            "must be <area>.<permission> in a-z 0-9 _ (the reference profile's form; \
                    the standards profile takes any RFC 6749 scope)",
        );
    }
    if name == OFFLINE_ACCESS {
        return Err(
            "offline_access is not configured: every app may ask for it (a refresh \
                    token), and no endpoint can require it",
        );
    }
    Ok(())
}

/// The rules on a web redirect URI beyond its form ([`RedirectUri`]): an authority without
/// user information (which only serves to disguise the host), and `https` unless it is the
/// loopback interface or the policy allows `http` (RFC 9700 §2.6, RFC 8252 §7.3). Other schemes
/// (a native app's private-use scheme, RFC 8252 §7.1) pass.
pub(crate) fn check_redirect_uri(uri: &RedirectUri, policy: &Policy) -> Result<(), &'static str> {
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

/// What unannounced clients may be granted, in the standards profile's form; an app that expires
/// outlives the access tokens it was given.
fn check_unannounced(clients: &UnannouncedClients, policy: &Policy) -> Result<(), ConfigError> {
    if clients.scopes.is_empty() {
        return Err(problem(
            "profile.clients.scopes",
            "must name the scopes a client nobody configured may be granted",
        ));
    }
    if let Some(reason) = clients
        .scopes
        .iter()
        .find_map(|name| check_scope_name(name, true).err())
    {
        return Err(problem("profile.clients.scopes", reason));
    }
    if clients.unused_lifetime.0 <= policy.access_token_ttl.0 {
        return Err(problem(
            "profile.clients.unused_lifetime",
            "must be longer than policy.access_token_ttl",
        ));
    }
    if clients.trial_lifetime.0 == 0 || clients.trial_lifetime.0 > clients.unused_lifetime.0 / 2 {
        return Err(problem(
            "profile.clients.trial_lifetime",
            "must be more than 0 and at most half of profile.clients.unused_lifetime",
        ));
    }
    if let Some(documents) = &clients.documents {
        check_documents(documents, clients)?;
    }
    Ok(())
}

/// Bounds a fetch can keep: a document small enough to hold in a record, a deadline a request
/// can wait for, a cache that lives no longer than the app it keeps.
fn check_documents(
    documents: &DocumentPolicy,
    clients: &UnannouncedClients,
) -> Result<(), ConfigError> {
    if !(256..=65_536).contains(&documents.max_bytes) {
        return Err(problem(
            "profile.clients.documents.max_bytes",
            "must be 256 to 65536",
        ));
    }
    if !(100..=30_000).contains(&documents.timeout_ms) {
        return Err(problem(
            "profile.clients.documents.timeout_ms",
            "must be 100 to 30000",
        ));
    }
    if documents.min_cache.0 > documents.max_cache.0 {
        return Err(problem(
            "profile.clients.documents.min_cache",
            "must be at most max_cache",
        ));
    }
    if documents.failure_backoff.0 == 0 || documents.failure_backoff.0 > 86_400 {
        return Err(problem(
            "profile.clients.documents.failure_backoff",
            "must be 1 to 86400",
        ));
    }
    if documents.max_cache.0 == 0 || documents.max_cache.0 >= clients.unused_lifetime.0 {
        return Err(problem(
            "profile.clients.documents.max_cache",
            "must be more than 0 and less than profile.clients.unused_lifetime",
        ));
    }
    let host_name = |host: &str| {
        !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.:[]".contains(&b))
    };
    for (i, host) in documents.hosts.iter().enumerate() {
        if !host_name(host.strip_prefix("*.").unwrap_or(host)) {
            return Err(problem(
                &format!("profile.clients.documents.hosts[{i}]"),
                "must be a host in lower case (with its port, if not 443), or *. and a domain",
            ));
        }
    }
    Ok(())
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

/// Why `profile.clients` and `profile.identity_assertions` are refused by a build without the
/// `unannounced` feature.
pub(super) const WITHOUT_UNANNOUNCED: &str = "this build has no clients that arrive unannounced \
     and checks no signed assertion (the core without its `unannounced` feature, as in the npm \
     package's `configured-apps` entry points): use the whole build for this setting \
     (edgegrant/node, edgegrant/workers)";

pub(super) fn problem(field: &str, problem: &str) -> ConfigError {
    ConfigError::Field {
        field: field.to_owned(),
        problem: problem.to_owned(),
    }
}
