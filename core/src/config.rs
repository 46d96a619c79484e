//! The configuration a host passes on every call: registered apps, policy switches and the
//! Required Scope of each API endpoint. Validated once, when built.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::credentials::SecretDigest;
use crate::ids::{AppKey, RedirectUri};
use crate::pages::{PageTemplates, Pages};
use crate::scope::{LegacyAccess, Scope, ScopeSet};
use crate::time::{Seconds, UnixTime};

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
    /// `max_attempts` is zero.
    #[error("max_attempts must be at least 1")]
    Attempts,
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
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
#[serde(rename_all = "snake_case")]
pub enum DefaultTokenType {
    /// Short-lived access tokens only (`online`). The default of newly created scoped apps.
    #[default]
    ShortLived,
    /// Long-lived (non-expiring) access tokens, created only before
    /// [`Policy::long_lived_cutoff`]; from then on such apps get short-lived tokens.
    LongLived,
}

/// One registered app (client).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct App {
    /// The app key (`client_id`).
    pub key: AppKey,
    /// The name shown on the consent page.
    pub name: String,
    /// Digest of the app secret; `None` for a public app, which can only use PKCE.
    #[serde(default)]
    pub secret_digest: Option<SecretDigest>,
    /// Registered redirect URIs, compared by exact string match.
    #[serde(default)]
    pub redirect_uris: Vec<RedirectUri>,
    /// Scoped or legacy.
    pub permissions: Permissions,
    /// The token type when `token_access_type` is omitted.
    #[serde(default)]
    pub default_token_type: DefaultTokenType,
    /// Whether the legacy implicit flow (`response_type=token`) is allowed at all.
    #[serde(default)]
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

    /// Whether `uri` is registered for this app, by exact string match.
    pub fn has_redirect_uri(&self, uri: &str) -> bool {
        self.redirect_uris.iter().any(|r| r.as_str() == uri)
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
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
        }
    }
}

/// The configuration document as written (JSON, or built in code): what [`Config`] validates.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ConfigDocument {
    /// Registered apps.
    pub apps: Vec<App>,
    /// Policy switches.
    #[serde(default)]
    pub policy: Policy,
    /// The Required Scope of each API endpoint, by path (`/2/users/get_current_account` →
    /// `account_info.read`).
    #[serde(default)]
    pub api_endpoints: BTreeMap<String, Scope>,
    /// The host's templates of the pages of the flow (consent, code, error, sign-in); the
    /// core's plain defaults stand in for any left out.
    #[serde(default)]
    pub pages: PageTemplates,
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
/// }).unwrap();
/// assert!(config.app("demo-app").is_some());
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "ConfigDocument", into = "ConfigDocument")]
pub struct Config {
    apps: BTreeMap<AppKey, App>,
    policy: Policy,
    api_endpoints: BTreeMap<String, Scope>,
    pages: Pages,
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
        let pages = Pages::compile(doc.pages)?;
        if let Some(path) = doc.api_endpoints.keys().find(|p| !p.starts_with("/2/")) {
            return Err(ConfigError::EndpointPath(path.clone()));
        }
        let mut apps = BTreeMap::new();
        for app in doc.apps {
            if app.scopes().is_empty() {
                return Err(ConfigError::NoScopes(app.key));
            }
            if apps.contains_key(&app.key) {
                return Err(ConfigError::DuplicateApp(app.key));
            }
            apps.insert(app.key.clone(), app);
        }
        Ok(Config {
            apps,
            policy,
            api_endpoints: doc.api_endpoints,
            pages,
        })
    }

    /// The app registered under `key`.
    pub fn app(&self, key: &str) -> Option<&App> {
        self.apps.get(key)
    }

    /// Every registered app.
    pub fn apps(&self) -> impl Iterator<Item = &App> {
        self.apps.values()
    }

    /// The policy switches.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The compiled page templates.
    pub(crate) fn pages(&self) -> &Pages {
        &self.pages
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

impl TryFrom<ConfigDocument> for Config {
    type Error = ConfigError;
    fn try_from(doc: ConfigDocument) -> Result<Self, ConfigError> {
        Config::new(doc)
    }
}

impl From<Config> for ConfigDocument {
    fn from(config: Config) -> Self {
        ConfigDocument {
            apps: config.apps.into_values().collect(),
            policy: config.policy,
            api_endpoints: config.api_endpoints,
            pages: config.pages.source,
        }
    }
}
