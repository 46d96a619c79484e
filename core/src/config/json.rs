//! The JSON form of a configuration document: its TypeScript declaration, and its writer
//! (the reader is `read`).

use alloc::collections::BTreeMap;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::*;

/// The TypeScript declaration of this JSON form, kept beside its writer (the reader is
/// `read.rs`): the package's types are generated from it with the names of the core's enums
/// (`core/examples/typescript.rs`), and `tests/tests/typescript.rs` fails when a key or a tag
/// the writer produces is missing here. Uses `Scope` and `UnixTime` (strings and numbers).
pub const CONFIG_TYPESCRIPT: &str = r#"
export interface App {
  /** The app's key, its `client_id`: 1–64 characters of A–Z a–z 0–9 `-` `_` `.` (required). */
  key: string;
  /** Shown to the user on the consent page (required). */
  name: string;
  /** URL-safe base64 SHA-256 of the app secret (see `secretDigest`); absent or null for a public app, which must use PKCE. */
  secret_digest?: string | null;
  /** Where answers may go, compared exactly (http on a loopback address with any port, RFC 8252 §7.3); https, or http on loopback unless `policy.allow_http_redirect_uris`. Default none: codes are shown on a page. */
  redirect_uris?: string[];
  /** What the app may be granted: scopes by name, or a legacy access type (which stands for a fixed set of scopes). Required. */
  permissions:
    | { kind: "scoped"; scopes: Scope[] }
    | { kind: "legacy"; access: "app_folder" | "full_dropbox" | "team_information" | "team_auditing" };
  /** What a code flow yields when the request names no `token_access_type`: short-lived access tokens (`"short_lived"`, the default), a long-lived one (before `policy.long_lived_cutoff`), or a refresh token too (`"offline"`). */
  default_token_type?: "short_lived" | "long_lived" | "offline";
  /** Allow the implicit grant (`response_type=token`; never in the standards profile's metadata for other apps). Default false. */
  implicit_allowed?: boolean;
}

export interface Policy {
  /** Lifetime of an authorization code, in seconds: 1–600. Default 600. */
  code_ttl?: number;
  /** Lifetime of a short-lived access token, in seconds. Default 14400 (4 h). */
  access_token_ttl?: number;
  /** Refuse `code_challenge_method=plain` (the standards profile always does). Default false. */
  require_s256?: boolean;
  /** From this instant (Unix seconds) on, no long-lived access token is created. Default 1633046400 (2021-10-01T00:00:00Z). */
  long_lived_cutoff?: UnixTime;
  /** The largest query, body (of an OAuth endpoint; API bodies have their own bound) or header value taken, in bytes; at least 1024. Default 16384. */
  max_input_bytes?: number;
  /** The largest request body an API endpoint takes, in bytes, unless the endpoint sets its own; a longer one is refused 413. Default 1048576 (1 MiB). */
  max_api_body_bytes?: number;
  /** Read token-endpoint parameters from the URL query when the body is empty (default true: the official SDKs do so). */
  token_parameters_in_query?: boolean;
  /** How many lost races for its writes one request may have before the core answers 503 (default 5). */
  max_attempts?: number;
  /** Failed credential checks allowed per window before 429 (0: no limit): `window` in seconds (default 900), `per_source` failed client authentications per network source (default 50), `per_account` failed sign-ins per account name (default 10). */
  attempts?: { window?: number; per_source?: number; per_account?: number };
  /** The most live offline or long-lived grants one user may hold with one app (at least 1); a new one revokes the oldest. Default: no bound. */
  live_grants_per_link?: number;
  /** Standards profile: a grant whose refresh token goes unused this many seconds ends (longer than `access_token_ttl`). Default: never. */
  refresh_idle_lifetime?: number;
  /** Allow http redirect URIs off the loopback interface (default false: https, or http on 127.0.0.1, [::1], localhost only). */
  allow_http_redirect_uris?: boolean;
}

/** Page templates (a Mustache subset; see the crate docs of `edgegrant`, module pages). */
export interface PageTemplates { consent?: string; code?: string; error?: string; sign_in?: string }

export interface ConfigDocument {
  apps: App[];
  policy?: Policy;
  /** Each API endpoint, by path, with its Required Scope: `{"/2/users/get_current_account": "account_info.read"}`, or with a bound of its own on the request body in bytes (default `policy.max_api_body_bytes`): `{"/mcp": {"scope": "mcp:tools", "max_body_bytes": 4194304}}`. In the standards profile an endpoint's own URL (issuer origin + path) is a resource tokens may name, with its RFC 9728 metadata at `/.well-known/oauth-protected-resource<path>`. */
  api_endpoints?: Record<string, Scope | { scope: Scope; max_body_bytes?: number }>;
  pages?: PageTemplates;
  /** The dialect: SPEC.md's reference service (default), or with the standards around it (RFC 8414, 9207, 7009, 7662, 8707, 9728, refresh-token rotation) under an issuer, with the resources it issues tokens for besides its own API (https URLs; http on loopback). */
  profile?: { kind: "reference" } | { kind: "standards"; issuer: string; resources?: string[]; rotation?: Rotation; resource_servers?: { app: string; resources: string[] }[]; clients?: UnannouncedClients; client_credentials?: ClientCredentials; token_exchange?: TokenExchange; identity_assertions?: IdentityAssertions; dpop?: Dpop };
  /** What each scope lets an app do, in plain words, for the consent page: `{"mcp:tools": "Use the tools of …"}`. The reference scopes and offline_access have defaults. */
  scope_descriptions?: Record<Scope, string>;
  /** The server's own secret, required: 32 random bytes, base64url (43 characters). Partitions, the seal of every credential and rotated refresh tokens are derived under it; every instance of one deployment has the same; keep it out of the store and the logs. */
  server_key: string;
}

/** The client credentials grant (RFC 6749 §4.4; standards profile): apps that get tokens for themselves, with no person and no refresh token. */
export interface ClientCredentials {
  /** The configured apps that may use it; each must have a secret. */
  apps: string[];
  /** Seconds its access tokens live. Default 3600. */
  access_token_lifetime?: number;
  /** Whether clients that arrive unannounced (profile.clients) may use it too: a registered client (RFC 7591) listing client_credentials in its grant_types and authenticating with a secret or private_key_jwt (a machine: no redirect_uris). Default false. */
  unannounced?: boolean;
}

/** Token exchange (RFC 8693; standards profile): the client an access token was issued to, or a resource server it was issued for, exchanges it for a narrower one (fewer scopes, one of its grant's resources), optionally as the actor with its own client credentials token; the result ends with the grant. */
export interface TokenExchange {
  /** Seconds an exchanged token lives at most, never past the token it came from. Default 3600. */
  access_token_lifetime?: number;
}

/** DPoP (RFC 9449; standards profile; the whole build): a client that signs each request with a key of its own (a DPoP proof: ES256, RS256, PS256 or EdDSA) gets tokens bound to that key (token_type DPoP; a public client's refresh token too), good only with a proof of the key, at the token endpoint and at the API served here. */
export interface Dpop {
  /** Seconds a proof's iat may be from now, either way. Default 300. */
  proof_window?: number;
  /** Where a proof must carry a nonce this server handed out (DPoP-Nonce; derived from server_key and the time, no record): "none", "token_endpoint" (default) or "everywhere" (the API too). */
  nonces?: "none" | "token_endpoint" | "everywhere";
  /** Who must present a proof at the token endpoint (else invalid_dpop_proof): every client, every client that arrived unannounced, these configured apps. Default nobody. */
  required?: { all?: boolean; unannounced?: boolean; apps?: string[] };
}

/** Enterprise-managed authorization (standards profile; the whole build): the JWT-bearer grant (RFC 7523) with an Identity Assertion JWT Authorization Grant (ID-JAG, typ oauth-id-jag+jwt) signed by a trusted identity provider, naming one of its users (sub), this server (aud) and the authenticated client (client_id); used once (jti), it gives that user's access token with no consent page and no refresh token. */
export interface IdentityAssertions {
  /** The trusted providers. (Its access tokens are a person's, living policy.access_token_ttl.) */
  providers: IdentityProvider[];
}

/** An identity provider whose assertions this server takes. */
export interface IdentityProvider {
  /** Its issuer identifier, exactly as its assertions' iss names it (https). */
  issuer: string;
  /** Its public signing keys, a JWK set (ES256 on P-256, RS256 of 2048 bits or more). Give this or jwks_uri. */
  jwks?: { keys: object[] };
  /** The https URL of its JWK set: fetched by the host's document fetcher (its address checks and limits, at most 32 KiB), kept for its Cache-Control max-age within documents' min_cache and max_cache (their defaults without documents), and fetched again when an assertion names a key it lacks (at most once every 30 s). Give this or jwks. */
  jwks_uri?: string;
  /** Its subjects that are people here: sub → the account. An assertion naming another is refused (invalid_grant). */
  accounts: Record<string, { account_id: string; uid: string }>;
}

/** Clients nobody configured (standards profile): registered by themselves (RFC 7591) or named by a metadata document, their apps kept in the store. */
export interface UnannouncedClients {
  /** The scopes such a client may be granted. */
  scopes: Scope[];
  /** Seconds an app may go unused before it expires with its grants. Default 7776000 (90 days). */
  unused_lifetime?: number;
  /** Seconds an app is kept before its first completed authorization (a code issued after consent); at most half of unused_lifetime. Default 21600 (6 hours). */
  trial_lifetime?: number;
  /** Whether such apps get refresh tokens: "on" (default) or "off" (offline access is not granted). */
  refresh_tokens?: "on" | "off";
  /** RFC 7591 registration at /oauth2/register; absent: off. No initial access tokens: open registration. per_source: registrations per source (an IPv6 /64 is one source) per attempts window, default 20; all_sources: registrations per window in all, default 100; 0 turns either off. */
  registration?: { initial_access_tokens?: string[]; per_source?: number; all_sources?: number };
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
    /** Seconds a URL whose fetch failed is not fetched again. Default 300. */
    failure_backoff?: number;
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

impl ConfigDocument {
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
        out.serialize_entry("max_api_body_bytes", &(p.max_api_body_bytes as u64))?;
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
                if let Some(grant) = &standards.client_credentials {
                    out.serialize_entry("client_credentials", &ClientCredentialsJson(grant))?;
                }
                if let Some(grant) = &standards.token_exchange {
                    out.serialize_entry(
                        "token_exchange",
                        &[("access_token_lifetime", grant.access_token_lifetime.0)]
                            .into_iter()
                            .collect::<BTreeMap<_, _>>(),
                    )?;
                }
                if let Some(grant) = &standards.identity_assertions {
                    out.serialize_entry("identity_assertions", &IdentityAssertionsJson(grant))?;
                }
                if let Some(dpop) = &standards.dpop {
                    out.serialize_entry("dpop", &DpopJson(dpop))?;
                }
            }
        }
        out.end()
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

struct DpopJson<'a>(&'a Dpop);

impl Serialize for DpopJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let dpop = self.0;
        let mut out = s.serialize_map(Some(3))?;
        out.serialize_entry("proof_window", &dpop.proof_window.0)?;
        out.serialize_entry(
            "nonces",
            match dpop.nonces {
                DpopNonces::None => "none",
                DpopNonces::TokenEndpoint => "token_endpoint",
                DpopNonces::Everywhere => "everywhere",
            },
        )?;
        let mut required = BTreeMap::new();
        required.insert("all", serde_json::Value::Bool(dpop.required.all));
        required.insert(
            "unannounced",
            serde_json::Value::Bool(dpop.required.unannounced),
        );
        required.insert(
            "apps",
            dpop.required
                .apps
                .iter()
                .map(|app| serde_json::Value::from(app.as_str()))
                .collect(),
        );
        out.serialize_entry("required", &required)?;
        out.end()
    }
}

struct ClientCredentialsJson<'a>(&'a ClientCredentials);

impl Serialize for ClientCredentialsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(3))?;
        out.serialize_entry("apps", &Each(&self.0.apps, AppKey::as_str))?;
        out.serialize_entry("access_token_lifetime", &self.0.access_token_lifetime.0)?;
        out.serialize_entry("unannounced", &self.0.unannounced)?;
        out.end()
    }
}

struct IdentityAssertionsJson<'a>(&'a IdentityAssertions);

impl Serialize for IdentityAssertionsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let providers: Vec<Value> = self
            .0
            .providers
            .iter()
            .map(|provider| {
                let mut fields = serde_json::Map::new();
                fields.insert("issuer".into(), provider.issuer.as_str().into());
                match &provider.keys {
                    ProviderKeys::Inline(keys) => {
                        // Each key as its JWK (only the members that make it), read back.
                        let keys: Vec<Value> = keys
                            .iter()
                            .filter_map(|key| serde_json::from_str(&key.jwk).ok())
                            .collect();
                        let mut jwks = serde_json::Map::new();
                        jwks.insert("keys".into(), Value::Array(keys));
                        fields.insert("jwks".into(), Value::Object(jwks));
                    }
                    ProviderKeys::Remote(url) => {
                        fields.insert("jwks_uri".into(), url.as_str().into());
                    }
                }
                let accounts: serde_json::Map<String, Value> = provider
                    .accounts
                    .iter()
                    .map(|(subject, account)| {
                        let mut fields = serde_json::Map::new();
                        fields.insert("account_id".into(), account.account_id.as_str().into());
                        fields.insert("uid".into(), account.uid.as_str().into());
                        (subject.clone(), Value::Object(fields))
                    })
                    .collect();
                fields.insert("accounts".into(), Value::Object(accounts));
                Value::Object(fields)
            })
            .collect();
        let mut out = s.serialize_map(Some(1))?;
        out.serialize_entry("providers", &providers)?;
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
        out.serialize_entry("trial_lifetime", &clients.trial_lifetime.0)?;
        out.serialize_entry(
            "refresh_tokens",
            match clients.refresh_tokens {
                UnannouncedRefresh::On => "on",
                UnannouncedRefresh::Off => "off",
            },
        )?;
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
        out.serialize_entry("failure_backoff", &policy.failure_backoff.0)?;
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
        out.serialize_entry("all_sources", &u64::from(policy.all_sources))?;
        out.end()
    }
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

struct EndpointsJson<'a>(&'a BTreeMap<String, ApiEndpoint>);

impl Serialize for EndpointsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(
            self.0
                .iter()
                .map(|(path, endpoint)| (path, EndpointJson(endpoint))),
        )
    }
}

/// An endpoint as read: its scope alone where it sets no bound of its own.
struct EndpointJson<'a>(&'a ApiEndpoint);

impl Serialize for EndpointJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let endpoint = self.0;
        match endpoint.max_body_bytes {
            None => s.serialize_str(endpoint.scope.as_str()),
            Some(bound) => {
                let mut out = s.serialize_map(Some(2))?;
                out.serialize_entry("scope", endpoint.scope.as_str())?;
                out.serialize_entry("max_body_bytes", &(bound as u64))?;
                out.end()
            }
        }
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
