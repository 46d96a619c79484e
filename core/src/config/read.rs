//! Reading the JSON form of a configuration document: one explicit conversion over
//! `serde_json::Value` instead of serde derives, whose monomorphized deserializers were most of
//! the wasm module. Absent fields take their defaults; `null` stands for "none" only where a
//! field is optional (`secret_digest`, page templates, `server_key`, `profile.clients`); an
//! unknown field is refused by name (a misspelled setting would otherwise be silently left at
//! its default). Every error names the path of the field that is wrong
//! (`apps[0].redirect_uris[1]: …`); the path is written out only for the error, so reading a
//! valid document formats none.

use alloc::collections::BTreeMap;
use serde_json::{Map, Value};

use super::checks::{problem, ConfigError, WITHOUT_UNANNOUNCED};
use super::*;

/// What the readers below return: the error boxed, so that passing it up (every `?`) moves a
/// pointer, not the error (measured: 2.0 KiB of the wasm module, gzipped).
type Read<T> = Result<T, Box<ConfigError>>;

impl Config {
    /// Reads and validates the JSON text of a configuration document.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Config::new(ConfigDocument::from_json(text)?)
    }
}

impl ConfigDocument {
    /// Parses the JSON text of a configuration document (not yet validated: see [`Config::new`]).
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ConfigError::Json(json_error(&e)))?;
        ConfigDocument::from_json_value(&value)
    }

    /// Reads a configuration document from its JSON value: `apps`, and optionally `policy`,
    /// `api_endpoints`, `pages`, `profile` (`{"kind": "reference"}`, the default, or
    /// `{"kind": "standards", "issuer": "https://…", "resources": ["https://…"]}`),
    /// `server_key` and `scope_descriptions`. The error names the field that is wrong.
    pub fn from_json_value(value: &Value) -> Result<Self, ConfigError> {
        document_from_json(value).map_err(|error| *error)
    }
}

/// Where the document stops being JSON: serde_json's own message also names the token it
/// expected, but writing it links that crate's message table and `std::io`'s error texts into
/// the wasm module (1.1 KiB gzipped), whose hosts hand it `JSON.stringify`'s output anyway.
fn json_error(error: &serde_json::Error) -> String {
    let what = match error.classify() {
        serde_json::error::Category::Eof => "it ends early",
        _ => "a syntax error",
    };
    format!("{what} at line {}, column {}", error.line(), error.column())
}

/// [`ConfigDocument::from_json_value`], its error boxed.
fn document_from_json(value: &Value) -> Read<ConfigDocument> {
    let doc = value
        .as_object()
        .ok_or_else(|| Box::new(problem("the configuration", "expected an object")))?;
    let root = Path::Root;
    only(
        doc,
        &root,
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
    let mut apps = Vec::new();
    each(
        required(doc, &root, "apps")?,
        &root.field("apps"),
        |app, at| {
            apps.push(app_from_json(app, at)?);
            Ok(())
        },
    )?;
    let policy = match doc.get("policy") {
        None => Policy::default(),
        Some(policy) => policy_from_json(policy, &root.field("policy"))?,
    };
    let mut api_endpoints = BTreeMap::new();
    if let Some(endpoints) = doc.get("api_endpoints") {
        let at = root.field("api_endpoints");
        for (path, endpoint) in object(endpoints, &at)? {
            api_endpoints.insert(path.clone(), api_endpoint(endpoint, &at.key(path))?);
        }
    }
    let pages = match doc.get("pages") {
        None => PageTemplates::default(),
        Some(pages) => pages_from_json(pages, &root.field("pages"))?,
    };
    let profile = match doc.get("profile") {
        None => Profile::default(),
        Some(profile) => profile_from_json(profile, &root.field("profile"))?,
    };
    let server_key = match doc.get("server_key") {
        None | Some(Value::Null) => None,
        Some(key) => {
            let at = root.field("server_key");
            Some(ServerKey::from_base64(string(key, &at)?).map_err(|why| at.problem(why))?)
        }
    };
    let mut scope_descriptions = Vec::new();
    if let Some(descriptions) = doc.get("scope_descriptions") {
        let at = root.field("scope_descriptions");
        for (scope, words) in object(descriptions, &at)? {
            let words = string(words, &at.key(scope))?;
            scope_descriptions.push((scope.clone(), words.to_owned()));
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

impl PageTemplates {
    /// Reads the templates from their JSON value: an object of `consent`, `code`, `error` and
    /// `sign_in`, each a string (absent or `null`: the core's default).
    pub fn from_json_value(value: &Value) -> Result<Self, ConfigError> {
        pages_from_json(value, &Path::Root.field("pages")).map_err(|error| *error)
    }
}

/// Where a value lies in the document, for its errors: a path such as
/// `apps[0].redirect_uris[1]` or `api_endpoints["/2/files/list_folder"]`, kept as links to its
/// parent and written out only when an error is made.
#[derive(Clone, Copy)]
enum Path<'a> {
    /// The document itself.
    Root,
    /// A member of an object, by name.
    Field(&'a Path<'a>, &'a str),
    /// An item of a list.
    Index(&'a Path<'a>, usize),
    /// A member of a map whose names are data (an endpoint's path, a scope).
    Key(&'a Path<'a>, &'a str),
}

impl Path<'_> {
    fn field<'b>(&'b self, name: &'b str) -> Path<'b> {
        Path::Field(self, name)
    }

    fn index(&self, index: usize) -> Path<'_> {
        Path::Index(self, index)
    }

    fn key<'b>(&'b self, key: &'b str) -> Path<'b> {
        Path::Key(self, key)
    }

    fn write(&self, out: &mut String) {
        match *self {
            Path::Root => {}
            Path::Field(parent, name) => {
                parent.write(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Path::Index(parent, index) => {
                parent.write(out);
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
            Path::Key(parent, key) => {
                parent.write(out);
                out.push_str("[\"");
                out.push_str(key);
                out.push_str("\"]");
            }
        }
    }

    /// The error of the value here: `why` it is wrong.
    #[inline(never)]
    fn problem(&self, why: &str) -> Box<ConfigError> {
        let mut field = String::new();
        self.write(&mut field);
        Box::new(problem(&field, why))
    }
}

fn pages_from_json(value: &Value, at: &Path<'_>) -> Read<PageTemplates> {
    let mut pages = PageTemplates::default();
    for (name, value) in object(value, at)? {
        let slot = match name.as_str() {
            "consent" => &mut pages.consent,
            "code" => &mut pages.code,
            "error" => &mut pages.error,
            "sign_in" => &mut pages.sign_in,
            _ => return Err(unknown(at, name, &["consent", "code", "error", "sign_in"])),
        };
        *slot = match value {
            Value::Null => None,
            text => Some(string(text, &at.field(name))?.to_owned()),
        };
    }
    Ok(pages)
}

fn app_from_json(value: &Value, at: &Path<'_>) -> Read<App> {
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
    let key_at = at.field("key");
    let key = AppKey::new(string(required(app, at, "key")?, &key_at)?)
        .map_err(|e| key_at.problem(&e.to_string()))?;
    let name = string(required(app, at, "name")?, &at.field("name"))?.to_owned();
    let secret_digest = match app.get("secret_digest") {
        None | Some(Value::Null) => None,
        Some(value) => Some(digest(value, &at.field("secret_digest"))?),
    };
    let mut redirect_uris = Vec::new();
    if let Some(uris) = app.get("redirect_uris") {
        each(uris, &at.field("redirect_uris"), |uri, at| {
            let uri = RedirectUri::new(string(uri, at)?).map_err(|e| at.problem(&e.to_string()))?;
            redirect_uris.push(uri);
            Ok(())
        })?;
    }
    let permissions = {
        let value = required(app, at, "permissions")?;
        let at = at.field("permissions");
        let permissions = object(value, &at)?;
        let kind_at = at.field("kind");
        match string(required(permissions, &at, "kind")?, &kind_at)? {
            "scoped" => {
                only(permissions, &at, &["kind", "scopes"])?;
                let scopes =
                    scope_list(required(permissions, &at, "scopes")?, &at.field("scopes"))?;
                Permissions::Scoped {
                    scopes: ScopeSet::from_scopes(scopes),
                }
            }
            "legacy" => {
                only(permissions, &at, &["kind", "access"])?;
                let access_at = at.field("access");
                let name = string(required(permissions, &at, "access")?, &access_at)?;
                let access = LegacyAccess::from_name(name).ok_or_else(|| {
                    access_at.problem(
                        "expected app_folder, full_dropbox, team_information or team_auditing",
                    )
                })?;
                Permissions::Legacy { access }
            }
            _ => return Err(kind_at.problem("expected scoped or legacy")),
        }
    };
    let default_token_type = match app.get("default_token_type") {
        None => DefaultTokenType::default(),
        Some(value) => {
            let at = at.field("default_token_type");
            match string(value, &at)? {
                "short_lived" => DefaultTokenType::ShortLived,
                "long_lived" => DefaultTokenType::LongLived,
                "offline" => DefaultTokenType::Offline,
                _ => return Err(at.problem("expected short_lived, long_lived or offline")),
            }
        }
    };
    let implicit_allowed = match app.get("implicit_allowed") {
        None => false,
        Some(value) => boolean(value, &at.field("implicit_allowed"))?,
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

/// An API endpoint: its Required Scope alone (`"mcp:tools"`), or that with its body's bound
/// (`{"scope": "mcp:tools", "max_body_bytes": 4194304}`).
fn api_endpoint(value: &Value, at: &Path<'_>) -> Read<ApiEndpoint> {
    let Value::Object(fields) = value else {
        return Ok(ApiEndpoint::from(scope(value, at)?));
    };
    only(fields, at, &["scope", "max_body_bytes"])?;
    let max_body_bytes = match fields.get("max_body_bytes") {
        Some(bound) => Some(bytes(bound, &at.field("max_body_bytes"))?),
        None => None,
    };
    Ok(ApiEndpoint {
        scope: scope(required(fields, at, "scope")?, &at.field("scope"))?,
        max_body_bytes,
    })
}

/// A count of bytes.
fn bytes(value: &Value, at: &Path<'_>) -> Read<usize> {
    usize::try_from(whole(value, at)?).map_err(|_| at.problem("is too large"))
}

fn policy_from_json(value: &Value, at: &Path<'_>) -> Read<Policy> {
    let mut policy = Policy::default();
    for (name, value) in object(value, at)? {
        let here = at.field(name);
        match name.as_str() {
            "code_ttl" => policy.code_ttl = seconds(value, &here)?,
            "access_token_ttl" => policy.access_token_ttl = seconds(value, &here)?,
            "require_s256" => policy.require_s256 = boolean(value, &here)?,
            "long_lived_cutoff" => policy.long_lived_cutoff = UnixTime(whole(value, &here)?),
            "max_input_bytes" => policy.max_input_bytes = bytes(value, &here)?,
            "max_api_body_bytes" => policy.max_api_body_bytes = bytes(value, &here)?,
            "token_parameters_in_query" => {
                policy.token_parameters_in_query = boolean(value, &here)?;
            }
            "allow_http_redirect_uris" => policy.allow_http_redirect_uris = boolean(value, &here)?,
            "attempts" => policy.attempts = attempts_from_json(value, &here)?,
            "live_grants_per_link" => {
                let bound = Some(small(value, &here)?)
                    .filter(|&bound| bound >= 1)
                    .ok_or_else(|| here.problem("must be at least 1"))?;
                policy.live_grants_per_link = Some(bound);
            }
            "refresh_idle_lifetime" => policy.refresh_idle_lifetime = Some(seconds(value, &here)?),
            "max_attempts" => policy.max_attempts = small(value, &here)?,
            _ => {
                return Err(unknown(
                    at,
                    name,
                    &[
                        "code_ttl",
                        "access_token_ttl",
                        "require_s256",
                        "long_lived_cutoff",
                        "max_input_bytes",
                        "max_api_body_bytes",
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

fn attempts_from_json(value: &Value, at: &Path<'_>) -> Read<AttemptLimits> {
    let mut limits = AttemptLimits::default();
    for (name, value) in object(value, at)? {
        let here = at.field(name);
        match name.as_str() {
            "window" => limits.window = seconds(value, &here)?,
            // No longer a limit (see AttemptLimits): still accepted, for older documents.
            "per_client" => {
                small(value, &here)?;
            }
            "per_source" => limits.per_source = small(value, &here)?,
            "per_account" => limits.per_account = small(value, &here)?,
            _ => return Err(unknown(at, name, &["window", "per_source", "per_account"])),
        }
    }
    Ok(limits)
}

fn profile_from_json(value: &Value, at: &Path<'_>) -> Read<Profile> {
    let profile = object(value, at)?;
    let kind_at = at.field("kind");
    match string(required(profile, at, "kind")?, &kind_at)? {
        "reference" => {
            only(profile, at, &["kind"])?;
            Ok(Profile::Reference)
        }
        "standards" => {
            only(
                profile,
                at,
                &[
                    "kind",
                    "issuer",
                    "resources",
                    "resource_servers",
                    "rotation",
                    "clients",
                    "client_credentials",
                    "token_exchange",
                    "identity_assertions",
                    "dpop",
                ],
            )?;
            let issuer_at = at.field("issuer");
            let issuer = Issuer::new(string(required(profile, at, "issuer")?, &issuer_at)?)
                .map_err(|why| issuer_at.problem(why))?;
            let resources = match profile.get("resources") {
                Some(list) => resources_from_json(list, &at.field("resources"))?,
                None => Vec::new(),
            };
            let mut resource_servers = Vec::new();
            if let Some(list) = profile.get("resource_servers") {
                each(list, &at.field("resource_servers"), |server, at| {
                    let fields = object(server, at)?;
                    only(fields, at, &["app", "resources"])?;
                    let app_at = at.field("app");
                    let app = AppKey::new(string(required(fields, at, "app")?, &app_at)?)
                        .map_err(|_| app_at.problem("is not an app key"))?;
                    let list = required(fields, at, "resources")?;
                    let resources = resources_from_json(list, &at.field("resources"))?;
                    resource_servers.push(ResourceServer { app, resources });
                    Ok(())
                })?;
            }
            let rotation = match profile.get("rotation") {
                None => Rotation::default(),
                Some(value) => rotation_from_json(value, &at.field("rotation"))?,
            };
            let clients = match profile.get("clients") {
                None | Some(Value::Null) => None,
                // Refused before it is read, so that a build without the feature links no
                // reader of it.
                Some(_) if !cfg!(feature = "unannounced") => {
                    return Err(at.field("clients").problem(WITHOUT_UNANNOUNCED));
                }
                Some(value) => Some(clients_from_json(value, &at.field("clients"))?),
            };
            let client_credentials = match profile.get("client_credentials") {
                None | Some(Value::Null) => None,
                Some(value) => Some(client_credentials_from_json(
                    value,
                    &at.field("client_credentials"),
                )?),
            };
            let token_exchange = match profile.get("token_exchange") {
                None | Some(Value::Null) => None,
                Some(value) => Some(token_exchange_from_json(
                    value,
                    &at.field("token_exchange"),
                )?),
            };
            let identity_assertions = match profile.get("identity_assertions") {
                None | Some(Value::Null) => None,
                // Refused before it is read, as `clients` is: signatures are the whole build's.
                Some(_) if !cfg!(feature = "unannounced") => {
                    return Err(at.field("identity_assertions").problem(WITHOUT_UNANNOUNCED));
                }
                Some(value) => Some(identity_assertions_from_json(
                    value,
                    &at.field("identity_assertions"),
                )?),
            };
            let dpop = match profile.get("dpop") {
                None | Some(Value::Null) => None,
                // Refused before it is read: proofs are signatures, the whole build's.
                Some(_) if !cfg!(feature = "unannounced") => {
                    return Err(at.field("dpop").problem(WITHOUT_UNANNOUNCED));
                }
                Some(value) => Some(dpop_from_json(value, &at.field("dpop"))?),
            };
            Ok(Profile::Standards(Standards {
                dpop,
                issuer,
                resources,
                rotation,
                resource_servers,
                clients,
                client_credentials,
                token_exchange,
                identity_assertions,
            }))
        }
        _ => Err(kind_at.problem("expected reference or standards")),
    }
}

fn client_credentials_from_json(value: &Value, at: &Path<'_>) -> Read<ClientCredentials> {
    let fields = object(value, at)?;
    only(
        fields,
        at,
        &["apps", "access_token_lifetime", "unannounced"],
    )?;
    let mut apps = Vec::new();
    each(
        required(fields, at, "apps")?,
        &at.field("apps"),
        |app, at| {
            let key = AppKey::new(string(app, at)?).map_err(|_| at.problem("is not an app key"))?;
            apps.push(key);
            Ok(())
        },
    )?;
    let mut grant = ClientCredentials::new(apps);
    if let Some(lifetime) = fields.get("access_token_lifetime") {
        grant.access_token_lifetime = seconds(lifetime, &at.field("access_token_lifetime"))?;
    }
    if let Some(unannounced) = fields.get("unannounced") {
        grant.unannounced = boolean(unannounced, &at.field("unannounced"))?;
    }
    Ok(grant)
}

fn dpop_from_json(value: &Value, at: &Path<'_>) -> Read<Dpop> {
    let fields = object(value, at)?;
    only(fields, at, &["proof_window", "nonces", "required"])?;
    let mut dpop = Dpop::default();
    if let Some(window) = fields.get("proof_window") {
        dpop.proof_window = seconds(window, &at.field("proof_window"))?;
    }
    if let Some(nonces) = fields.get("nonces") {
        let nonces_at = at.field("nonces");
        dpop.nonces = match string(nonces, &nonces_at)? {
            "none" => DpopNonces::None,
            "token_endpoint" => DpopNonces::TokenEndpoint,
            "everywhere" => DpopNonces::Everywhere,
            _ => return Err(nonces_at.problem("expected none, token_endpoint or everywhere")),
        };
    }
    if let Some(required) = fields.get("required") {
        let at = at.field("required");
        let fields = object(required, &at)?;
        only(fields, &at, &["all", "unannounced", "apps"])?;
        if let Some(all) = fields.get("all") {
            dpop.required.all = boolean(all, &at.field("all"))?;
        }
        if let Some(unannounced) = fields.get("unannounced") {
            dpop.required.unannounced = boolean(unannounced, &at.field("unannounced"))?;
        }
        if let Some(list) = fields.get("apps") {
            each(list, &at.field("apps"), |app, at| {
                let key =
                    AppKey::new(string(app, at)?).map_err(|_| at.problem("is not an app key"))?;
                dpop.required.apps.push(key);
                Ok(())
            })?;
        }
    }
    Ok(dpop)
}

fn token_exchange_from_json(value: &Value, at: &Path<'_>) -> Read<TokenExchange> {
    let fields = object(value, at)?;
    only(fields, at, &["access_token_lifetime"])?;
    let mut grant = TokenExchange::default();
    if let Some(lifetime) = fields.get("access_token_lifetime") {
        grant.access_token_lifetime = seconds(lifetime, &at.field("access_token_lifetime"))?;
    }
    Ok(grant)
}

fn identity_assertions_from_json(value: &Value, at: &Path<'_>) -> Read<IdentityAssertions> {
    let fields = object(value, at)?;
    only(fields, at, &["providers"])?;
    let mut providers = Vec::new();
    each(
        required(fields, at, "providers")?,
        &at.field("providers"),
        |provider, at| {
            let fields = object(provider, at)?;
            only(fields, at, &["issuer", "jwks", "jwks_uri", "accounts"])?;
            let issuer = string(required(fields, at, "issuer")?, &at.field("issuer"))?;
            let keys = match (fields.get("jwks"), fields.get("jwks_uri")) {
                (Some(jwks), None) => ProviderKeys::Inline(
                    crate::jose::client_keys(jwks).map_err(|why| at.field("jwks").problem(why))?,
                ),
                (None, Some(url)) => {
                    ProviderKeys::Remote(string(url, &at.field("jwks_uri"))?.to_owned())
                }
                _ => return Err(at.problem("needs its keys: jwks or jwks_uri, one of them")),
            };
            let mut accounts = Vec::new();
            let accounts_at = at.field("accounts");
            for (subject, account) in object(required(fields, at, "accounts")?, &accounts_at)? {
                let at = accounts_at.field(subject);
                let fields = object(account, &at)?;
                only(fields, &at, &["account_id", "uid"])?;
                let id_at = at.field("account_id");
                let account_id =
                    AccountId::new(string(required(fields, &at, "account_id")?, &id_at)?)
                        .map_err(|e| id_at.problem(e.reason))?;
                let uid_at = at.field("uid");
                let uid = Uid::new(string(required(fields, &at, "uid")?, &uid_at)?)
                    .map_err(|e| uid_at.problem(e.reason))?;
                accounts.push((subject.clone(), ProviderAccount { account_id, uid }));
            }
            providers.push(IdentityProvider {
                issuer: issuer.to_owned(),
                keys,
                accounts,
            });
            Ok(())
        },
    )?;
    Ok(IdentityAssertions::new(providers))
}

fn rotation_from_json(value: &Value, at: &Path<'_>) -> Read<Rotation> {
    let fields = object(value, at)?;
    only(fields, at, &["clients", "retry_window", "reuse_detection"])?;
    let mut rotation = Rotation::default();
    if let Some(clients) = fields.get("clients") {
        let at = at.field("clients");
        rotation.clients = match string(clients, &at)? {
            "public" => RotatedClients::Public,
            "all" => RotatedClients::All,
            _ => return Err(at.problem("expected public or all")),
        };
    }
    if let Some(window) = fields.get("retry_window") {
        rotation.retry_window = seconds(window, &at.field("retry_window"))?;
    }
    if let Some(kept) = fields.get("reuse_detection") {
        rotation.reuse_detection = seconds(kept, &at.field("reuse_detection"))?;
    }
    Ok(rotation)
}

fn clients_from_json(value: &Value, at: &Path<'_>) -> Read<UnannouncedClients> {
    let fields = object(value, at)?;
    let scopes = scope_list(required(fields, at, "scopes")?, &at.field("scopes"))?;
    let mut clients = UnannouncedClients::new(ScopeSet::from_scopes(scopes));
    for (name, value) in fields {
        let here = at.field(name);
        match name.as_str() {
            "scopes" => {}
            "unused_lifetime" => clients.unused_lifetime = seconds(value, &here)?,
            "trial_lifetime" => clients.trial_lifetime = seconds(value, &here)?,
            "refresh_tokens" => {
                clients.refresh_tokens = match string(value, &here)? {
                    "on" => UnannouncedRefresh::On,
                    "off" => UnannouncedRefresh::Off,
                    _ => return Err(here.problem("must be \"on\" or \"off\"")),
                }
            }
            "registration" => clients.registration = Some(registration_from_json(value, &here)?),
            "documents" => clients.documents = Some(documents_from_json(value, &here)?),
            _ => {
                return Err(unknown(
                    at,
                    name,
                    &[
                        "scopes",
                        "unused_lifetime",
                        "trial_lifetime",
                        "refresh_tokens",
                        "registration",
                        "documents",
                    ],
                ))
            }
        }
    }
    Ok(clients)
}

fn registration_from_json(value: &Value, at: &Path<'_>) -> Read<RegistrationPolicy> {
    let mut policy = RegistrationPolicy::default();
    for (name, value) in object(value, at)? {
        let here = at.field(name);
        match name.as_str() {
            "initial_access_tokens" => each(value, &here, |token, at| {
                policy.initial_access_tokens.push(digest(token, at)?);
                Ok(())
            })?,
            "per_source" => policy.per_source = small(value, &here)?,
            "all_sources" => policy.all_sources = small(value, &here)?,
            _ => {
                return Err(unknown(
                    at,
                    name,
                    &["initial_access_tokens", "per_source", "all_sources"],
                ))
            }
        }
    }
    Ok(policy)
}

fn documents_from_json(value: &Value, at: &Path<'_>) -> Read<DocumentPolicy> {
    let mut policy = DocumentPolicy::default();
    for (name, value) in object(value, at)? {
        let here = at.field(name);
        match name.as_str() {
            "hosts" => each(value, &here, |host, at| {
                policy.hosts.push(string(host, at)?.to_owned());
                Ok(())
            })?,
            "max_bytes" => policy.max_bytes = small(value, &here)?,
            "timeout_ms" => policy.timeout_ms = small(value, &here)?,
            "min_cache" => policy.min_cache = seconds(value, &here)?,
            "max_cache" => policy.max_cache = seconds(value, &here)?,
            "failure_backoff" => policy.failure_backoff = seconds(value, &here)?,
            _ => {
                return Err(unknown(
                    at,
                    name,
                    &[
                        "hosts",
                        "max_bytes",
                        "timeout_ms",
                        "min_cache",
                        "max_cache",
                        "failure_backoff",
                    ],
                ))
            }
        }
    }
    Ok(policy)
}

/// A list of resource identifiers, each checked.
fn resources_from_json(list: &Value, at: &Path<'_>) -> Read<Vec<Resource>> {
    let mut resources = Vec::new();
    each(list, at, |resource, at| {
        resources.push(Resource::new(string(resource, at)?).map_err(|why| at.problem(why))?);
        Ok(())
    })?;
    Ok(resources)
}

/// Reads each item of the list at `at` with `read`, which gets the item and its path.
fn each<'v>(
    value: &'v Value,
    at: &Path<'_>,
    mut read: impl FnMut(&'v Value, &Path<'_>) -> Read<()>,
) -> Read<()> {
    let items = value
        .as_array()
        .ok_or_else(|| at.problem("expected a list"))?;
    for (index, item) in items.iter().enumerate() {
        read(item, &at.index(index))?;
    }
    Ok(())
}

/// A list of scopes, each checked.
fn scope_list(value: &Value, at: &Path<'_>) -> Read<Vec<Scope>> {
    let mut scopes = Vec::new();
    each(value, at, |item, at| {
        scopes.push(scope(item, at)?);
        Ok(())
    })?;
    Ok(scopes)
}

fn scope(value: &Value, at: &Path<'_>) -> Read<Scope> {
    Scope::new(string(value, at)?).map_err(|e| at.problem(&e.to_string()))
}

/// A SHA-256 digest, URL-safe base64 (an app secret's, an initial access token's).
fn digest(value: &Value, at: &Path<'_>) -> Read<SecretDigest> {
    SecretDigest::from_base64(string(value, at)?)
        .ok_or_else(|| at.problem("expected 32 bytes in URL-safe base64"))
}

/// The member `name` of the object at `at`, which must be there.
fn required<'v>(fields: &'v Map<String, Value>, at: &Path<'_>, name: &str) -> Read<&'v Value> {
    fields
        .get(name)
        .ok_or_else(|| at.field(name).problem("is missing"))
}

/// Refuses the first member of `fields` (the object at `at`) that is none of `known`.
fn only(fields: &Map<String, Value>, at: &Path<'_>, known: &[&str]) -> Read<()> {
    match fields.keys().find(|name| !known.contains(&name.as_str())) {
        Some(name) => Err(unknown(at, name, known)),
        None => Ok(()),
    }
}

/// The error for the member `name` of the object at `at`, which takes only `known`.
#[inline(never)]
fn unknown(at: &Path<'_>, name: &str, known: &[&str]) -> Box<ConfigError> {
    at.field(name).problem(&format!(
        "is not a setting here (expected {})",
        known.join(", ")
    ))
}

fn object<'v>(value: &'v Value, at: &Path<'_>) -> Read<&'v Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| at.problem("expected an object"))
}

fn string<'v>(value: &'v Value, at: &Path<'_>) -> Read<&'v str> {
    value
        .as_str()
        .ok_or_else(|| at.problem("expected a string"))
}

fn boolean(value: &Value, at: &Path<'_>) -> Read<bool> {
    value
        .as_bool()
        .ok_or_else(|| at.problem("expected true or false"))
}

/// A whole number, 0 or more.
fn whole(value: &Value, at: &Path<'_>) -> Read<u64> {
    value
        .as_u64()
        .ok_or_else(|| at.problem("expected a whole number, 0 or more"))
}

/// A whole number of seconds.
fn seconds(value: &Value, at: &Path<'_>) -> Read<Seconds> {
    whole(value, at).map(Seconds)
}

/// A whole number that fits 32 bits.
fn small(value: &Value, at: &Path<'_>) -> Read<u32> {
    u32::try_from(whole(value, at)?).map_err(|_| at.problem("is too large"))
}
