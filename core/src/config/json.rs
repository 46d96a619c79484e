//! The JSON form of a configuration document, read and written explicitly.

use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::checks::{problem, ConfigError};
use super::*;

/// The TypeScript declaration of this JSON form, kept beside its reader and writer: the
/// package's types are generated from it with the names of the core's enums
/// (`core/examples/typescript.rs`), and `tests/tests/typescript.rs` fails when a key or a tag
/// the writer produces is missing here. Uses `Scope` and `UnixTime` (strings and numbers).
pub const CONFIG_TYPESCRIPT: &str = r#"
export interface App {
  key: string;
  name: string;
  /** URL-safe base64 SHA-256 of the app secret (see `secretDigest`); absent for a public app. */
  secret_digest?: string | null;
  redirect_uris?: string[];
  permissions:
    | { kind: "scoped"; scopes: Scope[] }
    | { kind: "legacy"; access: "app_folder" | "full_dropbox" | "team_information" | "team_auditing" };
  default_token_type?: "short_lived" | "long_lived" | "offline";
  implicit_allowed?: boolean;
}

export interface Policy {
  code_ttl?: number;
  access_token_ttl?: number;
  require_s256?: boolean;
  long_lived_cutoff?: UnixTime;
  max_input_bytes?: number;
  /** Read token-endpoint parameters from the URL query when the body is empty (default true: the official SDKs do so). */
  token_parameters_in_query?: boolean;
  /** How many lost races for its writes one request may have before the core answers 503 (default 5). */
  max_attempts?: number;
  /** Failed credential checks allowed per window before 429 (0: no limit). */
  attempts?: { window?: number; per_source?: number; per_account?: number };
  live_grants_per_link?: number;
  refresh_idle_lifetime?: number;
  /** Allow http redirect URIs off the loopback interface (default false: https, or http on 127.0.0.1, [::1], localhost only). */
  allow_http_redirect_uris?: boolean;
}

/** Page templates (a Mustache subset; see the crate docs of `edgegrant`, module pages). */
export interface PageTemplates { consent?: string; code?: string; error?: string; sign_in?: string }

export interface ConfigDocument {
  apps: App[];
  policy?: Policy;
  /** Required Scope of each API endpoint, by path: `{"/2/users/get_current_account": "account_info.read"}`. */
  api_endpoints?: Record<string, Scope>;
  pages?: PageTemplates;
  /** The dialect: SPEC.md's reference service (default), or with the standards around it (RFC 8414, 9207, 7009, 7662, 8707, 9728, refresh-token rotation) under an issuer, with the resources it issues tokens for besides its own API (https URLs; http on loopback). */
  profile?: { kind: "reference" } | { kind: "standards"; issuer: string; resources?: string[]; rotation?: Rotation; resource_servers?: { app: string; resources: string[] }[]; clients?: UnannouncedClients };
  /** What each scope lets an app do, in plain words, for the consent page: `{"mcp:tools": "Use the tools of …"}`. The reference scopes and offline_access have defaults. */
  scope_descriptions?: Record<Scope, string>;
  /** The server's own secret, required: 32 random bytes, base64url (43 characters). Partitions, the seal of every credential and rotated refresh tokens are derived under it; every instance of one deployment has the same; keep it out of the store and the logs. */
  server_key: string;
}

/** Clients nobody configured (standards profile): registered by themselves (RFC 7591) or named by a metadata document, their apps kept in the store. */
export interface UnannouncedClients {
  /** The scopes such a client may be granted. */
  scopes: Scope[];
  /** Seconds an app may go unused before it expires with its grants. Default 7776000 (90 days). */
  unused_lifetime?: number;
  /** RFC 7591 registration at /oauth2/register; absent: off. No initial access tokens: open registration. */
  registration?: { initial_access_tokens?: string[]; per_source?: number };
  /** Client ID Metadata Documents: a client_id that is an https URL names a document the host fetches (with the package's guarded fetch); absent: off. The JWK sets clients name by jwks_uri are fetched under this policy too (at most 32 KiB each); absent, no jwks_uri is taken. */
  documents?: {
    /** Hosts documents may come from: "app.example" exactly, "*.example.com" any host under it; empty or absent: any. */
    hosts?: string[];
    /** The largest document, in bytes. Default 5120. */
    max_bytes?: number;
    /** How long a fetch may take, in milliseconds. Default 5000. */
    timeout_ms?: number;
    /** Seconds a document is kept at least before it is fetched again, whatever its Cache-Control says. Default 300. */
    min_cache?: number;
    /** Seconds a document is kept at most. Default 86400. */
    max_cache?: number;
  };
}

/** Refresh-token rotation (standards profile). A retry of a rotated refresh within `retry_window` seconds gets the same answer; a superseded token at any other time revokes its grant. */
export interface Rotation {
  /** Whose refreshes rotate: those made without a client secret (default), or all. */
  clients?: "public" | "all";
  /** Seconds, 0..=300, shorter than the access-token lifetime. Default 60. */
  retry_window?: number;
  /** Seconds a superseded token is kept to catch its reuse. Default 2592000 (30 days). */
  reuse_detection?: number;
}
"#;

impl Config {
    /// Reads and validates the JSON text of a configuration document.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Config::new(ConfigDocument::from_json(text)?)
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
                _ => {
                    return Err(unknown(
                        "pages",
                        name,
                        &["consent", "code", "error", "sign_in"],
                    ))
                }
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
// (`secret_digest`, page templates); an unknown field is refused by name (a misspelled setting
// would otherwise be silently left at its default).

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
        only(
            doc,
            "",
            &[
                "apps",
                "policy",
                "api_endpoints",
                "pages",
                "profile",
                "server_key",
                "scope_descriptions",
            ],
        )?;
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
        let mut scope_descriptions = Vec::new();
        if let Some(descriptions) = doc.get("scope_descriptions") {
            for (scope, words) in object(descriptions, "scope_descriptions")? {
                let at = format!("scope_descriptions[\"{scope}\"]");
                scope_descriptions.push((scope.clone(), string(words, &at)?.to_owned()));
            }
        }
        Ok(ConfigDocument {
            apps,
            policy,
            api_endpoints,
            pages,
            profile,
            server_key,
            scope_descriptions,
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
        if !self.scope_descriptions.is_empty() {
            doc.serialize_entry(
                "scope_descriptions",
                &DescriptionsJson(&self.scope_descriptions),
            )?;
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
            DefaultTokenType::Offline => "offline",
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
                out.serialize_entry("kind", "legacy")?;
                out.serialize_entry("access", access.name())?;
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
            Profile::Standards(standards) => {
                out.serialize_entry("kind", "standards")?;
                out.serialize_entry("issuer", standards.issuer.as_str())?;
                out.serialize_entry("resources", &Each(&standards.resources, Resource::as_str))?;
                out.serialize_entry("rotation", &RotationJson(&standards.rotation))?;
                if !standards.resource_servers.is_empty() {
                    out.serialize_entry(
                        "resource_servers",
                        &Each(&standards.resource_servers, ResourceServerJson),
                    )?;
                }
                if let Some(clients) = &standards.clients {
                    out.serialize_entry("clients", &ClientsJson(clients))?;
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
        "reference" => {
            only(profile, "profile", &["kind"])?;
            Ok(Profile::Reference)
        }
        "standards" => {
            only(
                profile,
                "profile",
                &[
                    "kind",
                    "issuer",
                    "resources",
                    "resource_servers",
                    "rotation",
                    "clients",
                ],
            )?;
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
                    only(fields, &at, &["app", "resources"])?;
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
            let clients = match profile.get("clients") {
                None | Some(Value::Null) => None,
                Some(value) => Some(clients_from_json(value)?),
            };
            Ok(Profile::Standards(Standards {
                issuer,
                resources,
                rotation,
                resource_servers,
                clients,
            }))
        }
        _ => Err(problem("profile.kind", "expected reference or standards")),
    }
}

struct DescriptionsJson<'a>(&'a [(String, String)]);

impl Serialize for DescriptionsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(self.0.len()))?;
        for (scope, words) in self.0 {
            out.serialize_entry(scope, words)?;
        }
        out.end()
    }
}

struct ClientsJson<'a>(&'a UnannouncedClients);

impl Serialize for ClientsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let clients = self.0;
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("scopes", &ScopesJson(&clients.scopes))?;
        out.serialize_entry("unused_lifetime", &clients.unused_lifetime.0)?;
        if let Some(registration) = &clients.registration {
            out.serialize_entry("registration", &RegistrationJson(registration))?;
        }
        if let Some(documents) = &clients.documents {
            out.serialize_entry("documents", &DocumentsJson(documents))?;
        }
        out.end()
    }
}

struct DocumentsJson<'a>(&'a DocumentPolicy);

impl Serialize for DocumentsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let policy = self.0;
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("hosts", &policy.hosts)?;
        out.serialize_entry("max_bytes", &u64::from(policy.max_bytes))?;
        out.serialize_entry("timeout_ms", &u64::from(policy.timeout_ms))?;
        out.serialize_entry("min_cache", &policy.min_cache.0)?;
        out.serialize_entry("max_cache", &policy.max_cache.0)?;
        out.end()
    }
}

struct RegistrationJson<'a>(&'a RegistrationPolicy);

impl Serialize for RegistrationJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let policy = self.0;
        let mut out = s.serialize_map(None)?;
        out.serialize_entry(
            "initial_access_tokens",
            &Each(&policy.initial_access_tokens, |d: &SecretDigest| {
                d.to_base64()
            }),
        )?;
        out.serialize_entry("per_source", &u64::from(policy.per_source))?;
        out.end()
    }
}

fn clients_from_json(value: &Value) -> Result<UnannouncedClients, ConfigError> {
    let fields = object(value, "profile.clients")?;
    let scopes = fields
        .get("scopes")
        .ok_or_else(|| problem("profile.clients.scopes", "is missing"))?;
    let mut names = Vec::new();
    for (i, scope) in array(scopes, "profile.clients.scopes")?.iter().enumerate() {
        let at = format!("profile.clients.scopes[{i}]");
        names.push(Scope::new(string(scope, &at)?).map_err(|e| invalid(&at, e))?);
    }
    let mut clients = UnannouncedClients::new(ScopeSet::from_scopes(names));
    for (name, value) in fields {
        let at = format!("profile.clients.{name}");
        match name.as_str() {
            "scopes" => {}
            "unused_lifetime" => clients.unused_lifetime = Seconds(whole(value, &at)?),
            "registration" => {
                let fields = object(value, &at)?;
                let mut policy = RegistrationPolicy::default();
                for (name, value) in fields {
                    let at = format!("{at}.{name}");
                    match name.as_str() {
                        "initial_access_tokens" => {
                            for (i, digest) in array(value, &at)?.iter().enumerate() {
                                let at = format!("{at}[{i}]");
                                let digest = SecretDigest::from_base64(string(digest, &at)?)
                                    .ok_or_else(|| {
                                        problem(&at, "expected 32 bytes in URL-safe base64")
                                    })?;
                                policy.initial_access_tokens.push(digest);
                            }
                        }
                        "per_source" => {
                            policy.per_source = u32::try_from(whole(value, &at)?)
                                .map_err(|_| problem(&at, "is too large"))?;
                        }
                        _ => {
                            return Err(unknown(
                                "profile.clients.registration",
                                name,
                                &["initial_access_tokens", "per_source"],
                            ))
                        }
                    }
                }
                clients.registration = Some(policy);
            }
            "documents" => clients.documents = Some(documents_from_json(value, &at)?),
            _ => {
                return Err(unknown(
                    "profile.clients",
                    name,
                    &["scopes", "unused_lifetime", "registration", "documents"],
                ))
            }
        }
    }
    Ok(clients)
}

fn documents_from_json(value: &Value, at: &str) -> Result<DocumentPolicy, ConfigError> {
    let mut policy = DocumentPolicy::default();
    let small = |value: &Value, at: &str| {
        u32::try_from(whole(value, at)?).map_err(|_| problem(at, "is too large"))
    };
    for (name, value) in object(value, at)? {
        let at = format!("{at}.{name}");
        match name.as_str() {
            "hosts" => {
                for (i, host) in array(value, &at)?.iter().enumerate() {
                    policy
                        .hosts
                        .push(string(host, &format!("{at}[{i}]"))?.to_owned());
                }
            }
            "max_bytes" => policy.max_bytes = small(value, &at)?,
            "timeout_ms" => policy.timeout_ms = small(value, &at)?,
            "min_cache" => policy.min_cache = Seconds(whole(value, &at)?),
            "max_cache" => policy.max_cache = Seconds(whole(value, &at)?),
            _ => {
                return Err(unknown(
                    "profile.clients.documents",
                    name,
                    &["hosts", "max_bytes", "timeout_ms", "min_cache", "max_cache"],
                ))
            }
        }
    }
    Ok(policy)
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
    only(
        fields,
        "profile.rotation",
        &["clients", "retry_window", "reuse_detection"],
    )?;
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
    only(
        app,
        at,
        &[
            "key",
            "name",
            "secret_digest",
            "redirect_uris",
            "permissions",
            "default_token_type",
            "implicit_allowed",
        ],
    )?;
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
                only(permissions, &at, &["kind", "scopes"])?;
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
                only(permissions, &at, &["kind", "access"])?;
                let at = format!("{at}.access");
                let access =
                    LegacyAccess::from_name(string(member("access")?, &at)?).ok_or_else(|| {
                        problem(
                            &at,
                            "expected app_folder, full_dropbox, team_information or team_auditing",
                        )
                    })?;
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
                "offline" => DefaultTokenType::Offline,
                _ => return Err(problem(&at, "expected short_lived, long_lived or offline")),
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
            _ => {
                return Err(unknown(
                    "policy",
                    name,
                    &[
                        "code_ttl",
                        "access_token_ttl",
                        "require_s256",
                        "long_lived_cutoff",
                        "max_input_bytes",
                        "token_parameters_in_query",
                        "allow_http_redirect_uris",
                        "attempts",
                        "live_grants_per_link",
                        "refresh_idle_lifetime",
                        "max_attempts",
                    ],
                ))
            }
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
        let field = format!("{at}.{name}");
        match name.as_str() {
            "window" => limits.window = Seconds(whole(value, &field)?),
            // No longer a limit (see AttemptLimits): still accepted, for older documents.
            "per_client" => {
                count(value, &field)?;
            }
            "per_source" => limits.per_source = count(value, &field)?,
            "per_account" => limits.per_account = count(value, &field)?,
            _ => return Err(unknown(at, name, &["window", "per_source", "per_account"])),
        }
    }
    Ok(limits)
}

fn invalid(field: &str, error: crate::ids::InvalidId) -> ConfigError {
    ConfigError::Field {
        field: field.to_owned(),
        problem: error.to_string(),
    }
}

/// Refuses the first member of `fields` (the object at `at`, `""` for the document) that is
/// none of `known`.
fn only(fields: &Map<String, Value>, at: &str, known: &[&str]) -> Result<(), ConfigError> {
    match fields.keys().find(|name| !known.contains(&name.as_str())) {
        Some(name) => Err(unknown(at, name, known)),
        None => Ok(()),
    }
}

/// The error for the member `name` of the object at `at`, which takes only `known`.
fn unknown(at: &str, name: &str, known: &[&str]) -> ConfigError {
    let field = if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}.{name}")
    };
    problem(
        &field,
        &format!("is not a setting here (expected {})", known.join(", ")),
    )
}

fn object<'v>(value: &'v Value, at: &str) -> Result<&'v Map<String, Value>, ConfigError> {
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

fn string<'v>(value: &'v Value, at: &str) -> Result<&'v str, ConfigError> {
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
