//! The server's bindings: the engine ([`Core`]) and the configuration helpers.

use edgegrant::{Config, ConfigDocument, Entropy, Input, Records, UnixTime, ENTROPY_LEN};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::{from_json, parse, to_json};

#[wasm_bindgen(typescript_custom_section)]
const SERVER_TYPES: &'static str = r#"
export type RecordKey = string;

export interface App {
  key: string;
  name: string;
  /** URL-safe base64 SHA-256 of the app secret (see `secretDigest`); absent for a public app. */
  secret_digest?: string | null;
  redirect_uris?: string[];
  permissions:
    | { kind: "scoped"; scopes: Scope[] }
    | { kind: "legacy"; access: "app_folder" | "full_dropbox" | "team_information" | "team_auditing" };
  default_token_type?: "short_lived" | "long_lived";
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
}

export interface ConfigDocument {
  apps: App[];
  policy?: Policy;
  /** Required Scope of each API endpoint, by path: `{"/2/users/get_current_account": "account_info.read"}`. */
  api_endpoints?: Record<string, Scope>;
}

export interface User { account_id: string; uid: string }

export interface HttpRequest {
  method: string;
  headers: [string, string][];
  /** Body bytes. */
  body?: Uint8Array | number[];
  /** The URL's query string without `?` (read by the token endpoint only). */
  query?: string;
}

export interface HttpResponse { status: number; headers: [string, string][]; body: string }

export type Input =
  | { kind: "authorize"; query: string; user: User | null }
  | { kind: "consent"; query: string; user: User; decision: "allow" | "deny" }
  | { kind: "token"; request: HttpRequest }
  | { kind: "revoke"; request: HttpRequest }
  | { kind: "api_call"; endpoint: string; request: HttpRequest }
  | { kind: "unlink"; app: string; account_id: string; by: "user" | "team_admin" };

export type TokenAccessType = "online" | "offline" | "legacy";

export type StoredRecord =
  | ({ type: "code" } & Record<string, unknown>)
  | ({ type: "access_token" } & Record<string, unknown>)
  | ({ type: "refresh_token" } & Record<string, unknown>)
  | ({ type: "grant" } & Record<string, unknown>)
  | ({ type: "link" } & Record<string, unknown>);

/** A record as the store holds it. Versions start at 1; every applied put adds one. */
export interface Versioned { version: number; record: StoredRecord }

/** The records loaded so far for one request; `null` for a key looked up and absent. */
export type Records = Record<RecordKey, Versioned | null>;

export type Expect = { expect: "absent" } | { expect: "version"; version: number };

export interface Put {
  key: RecordKey;
  expect: Expect;
  record: StoredRecord;
  /** When the host may delete the record; `null`: keep it. */
  purge_after: UnixTime | null;
}

export type AuditEvent = { event: string } & Record<string, unknown>;

export interface Transaction { puts: Put[]; audit: AuditEvent[] }

export interface ConsentPrompt {
  app: string;
  app_name: string;
  scopes: Scope[];
  access_type: TokenAccessType;
  redirect_uri: string | null;
  already_granted: boolean;
}

export interface Principal {
  app: string;
  account_id: string;
  uid: string;
  scopes: Scope[];
  expires_at: UnixTime | null;
}

export type Outcome =
  | { kind: "http"; value: HttpResponse }
  | { kind: "redirect"; value: string }
  | { kind: "consent"; value: ConsentPrompt }
  | { kind: "display_code"; value: { app: string; code: string } }
  | { kind: "error_page"; value: { error: string; description: string } }
  | { kind: "authorized"; value: Principal }
  | { kind: "unlinked" };

export type Step =
  | { step: "need_records"; keys: RecordKey[] }
  | { step: "commit"; transaction: Transaction; outcome: Outcome }
  | { step: "respond"; outcome: Outcome };

export type ConfigCheck = { tag: "ok" } | { tag: "invalid"; content: string };

"#;

/// Whether a configuration document (JSON) is usable: `{ tag: "ok" }` or
/// `{ tag: "invalid", content }`, as JSON.
#[wasm_bindgen(js_name = checkConfig)]
pub fn check_config(document: &str) -> Result<String, JsError> {
    #[derive(Serialize)]
    #[serde(tag = "tag", content = "content", rename_all = "snake_case")]
    enum Check {
        Ok,
        Invalid(String),
    }
    let check = match parse::<ConfigDocument>("configuration", document) {
        Err(message) => Check::Invalid(message),
        Ok(doc) => match Config::new(doc) {
            Ok(_) => Check::Ok,
            Err(e) => Check::Invalid(e.to_string()),
        },
    };
    to_json(&check)
}

/// The configuration (JSON) with the legacy app `app` migrated to scopes, pre-selected from its
/// legacy access type (what an app console does). Tokens already issued keep their scopes.
/// Throws if the document is invalid, the app unknown or already scoped.
#[wasm_bindgen(js_name = migrateApp)]
pub fn migrate_app(document: &str, app: &str) -> Result<String, JsError> {
    let config: Config = from_json("configuration", document)?;
    let migrated = config
        .with_app_migrated(app)
        .map_err(|e| JsError::new(&e.to_string()))?;
    to_json(&ConfigDocument::from(migrated))
}

/// The digest to register for an app secret (URL-safe base64 of its SHA-256).
#[wasm_bindgen(js_name = secretDigest)]
pub fn secret_digest(secret: &str) -> String {
    edgegrant::ClientSecret::presented(secret)
        .digest()
        .to_base64()
}

/// How many entropy bytes every call to [`Core::handle`] takes.
#[wasm_bindgen(js_name = entropyLength)]
pub fn entropy_length() -> usize {
    ENTROPY_LEN
}

/// [`ENTROPY_LEN`] bytes from the platform CSPRNG (`crypto.getRandomValues`).
#[wasm_bindgen(js_name = randomEntropy)]
pub fn random_entropy() -> Result<Vec<u8>, JsError> {
    let mut bytes = vec![0u8; ENTROPY_LEN];
    getrandom::fill(&mut bytes).map_err(|e| JsError::new(&format!("no random source: {e}")))?;
    Ok(bytes)
}

/// The engine with its validated configuration. Stateless between calls.
#[wasm_bindgen]
pub struct Core {
    config: Config,
}

#[wasm_bindgen]
impl Core {
    /// Validates the configuration (JSON); throws if it is unusable (see `checkConfig`).
    #[wasm_bindgen(constructor)]
    pub fn new(document: &str) -> Result<Core, JsError> {
        let config = from_json::<Config>("configuration", document)?;
        Ok(Core { config })
    }

    /// One step of the calling contract (see the `edgegrant` crate documentation): `input` and
    /// `records` are JSON, `body` the bytes of `input.request.body` (which the JSON leaves
    /// out), and the `Step` comes back as JSON. Throws on host misuse; protocol errors are
    /// ordinary steps. Hosts that call again with more records use [`Core::begin`] instead,
    /// which parses the input and each record once.
    pub fn handle(
        &self,
        input: &str,
        body: Vec<u8>,
        now: u64,
        entropy: &[u8],
        records: &str,
    ) -> Result<String, JsError> {
        let mut pending = self.begin(input, body, now, entropy)?;
        pending.step(self, records)
    }

    /// Starts one request: the input (JSON, with its body's bytes beside it), the time and the
    /// entropy are parsed once and held by the returned [`PendingRequest`], whose `step` takes
    /// only the records each step adds. Throws on malformed arguments.
    pub fn begin(
        &self,
        input: &str,
        body: Vec<u8>,
        now: u64,
        entropy: &[u8],
    ) -> Result<PendingRequest, JsError> {
        let mut input: Input = from_json("input", input)?;
        if let Some(request) = input.request_mut() {
            if !body.is_empty() {
                request.body = body;
            }
        }
        let entropy = Entropy::from_slice(entropy)
            .ok_or_else(|| JsError::new(&format!("entropy must be exactly {ENTROPY_LEN} bytes")))?;
        Ok(PendingRequest {
            input,
            now: UnixTime(now),
            entropy,
            records: Records::new(),
        })
    }

    /// The Required Scope the configuration declares for `endpoint`, if any.
    #[wasm_bindgen(js_name = requiredScope)]
    pub fn required_scope(&self, endpoint: &str) -> Option<String> {
        self.config
            .required_scope(endpoint)
            .map(|s| s.as_str().to_owned())
    }
}

/// One request between its steps: what [`Core::begin`] parsed and every record loaded since.
/// Only this binding holds it; the core itself stays a function of its arguments.
#[wasm_bindgen]
pub struct PendingRequest {
    input: Input,
    now: UnixTime,
    entropy: Entropy,
    records: Records,
}

#[wasm_bindgen]
impl PendingRequest {
    /// Adds the records just loaded (a `Records` object as JSON) to those of earlier steps and
    /// runs the next step of `core`; the `Step` comes back as JSON. Throws on host misuse.
    pub fn step(&mut self, core: &Core, loaded: &str) -> Result<String, JsError> {
        let loaded: Records = from_json("records", loaded)?;
        self.records.extend(loaded);
        let step = edgegrant::handle(
            &core.config,
            &self.input,
            self.now,
            &self.entropy,
            &self.records,
        )
        .map_err(|misuse| JsError::new(&misuse.to_string()))?;
        to_json(&step)
    }
}
