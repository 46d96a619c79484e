//! JavaScript bindings of [`edgegrant`]: values in, values out, nothing decided here.
//!
//! - Values cross as plain JS objects in the JSON shapes of the core's serde types; the
//!   TypeScript declarations below are written once and describe exactly those shapes.
//! - 64-bit integers (times, versions) cross as `number` when they are safe integers and are
//!   refused otherwise — never rounded; `bigint` is accepted on the way in.
//! - Expected failures come back as tagged values (`{ tag: "invalid", content }`); host misuse
//!   (records not asked for, malformed values) throws a real `Error`.
//! - Entropy comes from the caller; [`random_entropy`] draws it with `getrandom`'s `wasm_js`
//!   backend (`crypto.getRandomValues`) for hosts that want it done for them.

use edgegrant::{client, Config, ConfigDocument, Entropy, Input, Records, UnixTime, ENTROPY_LEN};
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Seconds since the Unix epoch. */
export type UnixTime = number;
export type Scope = string;
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

/** The PKCE client machine's configuration. */
export interface ClientConfig {
  client_id: string;
  authorize_url: string;
  token_url: string;
  revoke_url: string;
  /** `null`: the server displays the code and the user types it in (`code_entered`). */
  redirect_uri?: string | null;
  /** Empty or absent: the app's scopes. */
  scopes?: Scope[];
  access_type: "online" | "offline";
  /** Refresh this many seconds before expiry (default 300). */
  refresh_margin?: number;
}
/** What the client holds once authorized. Secret: keep it where only this client can read it. */
export interface ClientSession {
  access_token: string;
  expires_at: UnixTime | null;
  refresh_token: string | null;
  scopes: Scope[];
  account_id: string | null;
  uid: string | null;
  after_refusal: boolean;
}
/** A `ClientSession` without its secrets. */
export interface SessionView {
  expires_at: UnixTime | null;
  refreshable: boolean;
  scopes: Scope[];
  account_id: string | null;
  uid: string | null;
}
/** Where the client stands; the host keeps it between calls (start with `{ phase: "idle" }`). */
export type ClientState =
  | { phase: "idle" }
  | { phase: "authorizing"; state: string; verifier: string }
  | { phase: "exchanging"; sent_at: UnixTime }
  | { phase: "authorized"; session: ClientSession }
  | { phase: "refreshing"; session: ClientSession; sent_at: UnixTime; reason: "due" | "refused" | "to_revoke" }
  | { phase: "revoking"; session: ClientSession };
export type ClientInput =
  | { kind: "begin" }
  | { kind: "redirected"; url: string }
  | { kind: "code_entered"; code: string }
  | { kind: "response"; response: { status: number; headers?: [string, string][]; body: string } }
  | { kind: "call" }
  | { kind: "unauthorized" }
  | { kind: "revoke" };
export interface ClientRequest { method: string; url: string; headers: [string, string][]; body: string }
export type ClientError =
  | { kind: "state_mismatch" }
  | { kind: "wrong_redirect_target" }
  | { kind: "authorization_refused"; error: string; description: string | null }
  | { kind: "missing_code" }
  | { kind: "token_refused"; status: number; error: string; description: string | null }
  | { kind: "malformed_response"; reason: string }
  | { kind: "revocation_failed"; status: number }
  | { kind: "unexpected"; input: string; state: string };
export type ClientStep =
  | { step: "navigate"; url: string }
  | { step: "send"; request: ClientRequest }
  | { step: "attach"; authorization: string }
  | { step: "authorized"; session: SessionView }
  | { step: "reauthorize"; reason: string }
  | { step: "signed_out" }
  | { step: "failed"; error: ClientError };
export interface ClientTransition { state: ClientState; step: ClientStep }
"#;

// The TypeScript names of the values above, for the generated signatures.
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "ConfigDocument")]
    /// A `ConfigDocument` object.
    pub type JsConfigDocument;
    #[wasm_bindgen(typescript_type = "Input")]
    /// An `Input` object.
    pub type JsInput;
    #[wasm_bindgen(typescript_type = "Records")]
    /// A `Records` object.
    pub type JsRecords;
    #[wasm_bindgen(typescript_type = "Step")]
    /// A `Step` object.
    pub type JsStep;
    #[wasm_bindgen(typescript_type = "ConfigCheck")]
    /// A `ConfigCheck` object.
    pub type JsConfigCheck;
    #[wasm_bindgen(typescript_type = "ClientConfig")]
    /// A `ClientConfig` object.
    pub type JsClientConfig;

    #[wasm_bindgen(typescript_type = "ClientState")]
    /// A `ClientState` object.
    pub type JsClientState;

    #[wasm_bindgen(typescript_type = "ClientInput")]
    /// A `ClientInput` object.
    pub type JsClientInput;

    #[wasm_bindgen(typescript_type = "ClientTransition")]
    /// A `ClientTransition` object.
    pub type JsClientTransition;

    #[wasm_bindgen(typescript_type = "UnixTime | bigint")]
    /// A `UnixTime` (number or bigint).
    pub type JsTime;
}

/// Plain objects for maps, `null` for absent options, safe-integer numbers for 64-bit values (an unsafe one is an error,
/// never a rounded number).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let serializer = serde_wasm_bindgen::Serializer::new()
        .serialize_maps_as_objects(true)
        .serialize_missing_as_null(true);
    value
        .serialize(&serializer)
        .map_err(|e| JsError::new(&e.to_string()))
}

fn from_js<T: serde::de::DeserializeOwned>(what: &str, value: JsValue) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("invalid {what}: {e}")))
}

/// Whether a configuration document is usable: `{ tag: "ok" }` or `{ tag: "invalid", content }`.
#[wasm_bindgen(js_name = checkConfig)]
pub fn check_config(document: JsConfigDocument) -> Result<JsConfigCheck, JsError> {
    #[derive(Serialize)]
    #[serde(tag = "tag", content = "content", rename_all = "snake_case")]
    enum Check {
        Ok,
        Invalid(String),
    }
    let check = match serde_wasm_bindgen::from_value::<ConfigDocument>(document.into()) {
        Err(e) => Check::Invalid(e.to_string()),
        Ok(doc) => match Config::new(doc) {
            Ok(_) => Check::Ok,
            Err(e) => Check::Invalid(e.to_string()),
        },
    };
    Ok(to_js(&check)?.unchecked_into())
}

/// The configuration with the legacy app `app` migrated to scopes, pre-selected from its legacy
/// access type (what an app console does). Tokens already issued keep their scopes. Throws if
/// the document is invalid, the app unknown or already scoped.
#[wasm_bindgen(js_name = migrateApp)]
pub fn migrate_app(document: JsConfigDocument, app: &str) -> Result<JsConfigDocument, JsError> {
    let config: Config = from_js("configuration", document.into())?;
    let migrated = config
        .with_app_migrated(app)
        .map_err(|e| JsError::new(&e.to_string()))?;
    Ok(to_js(&ConfigDocument::from(migrated))?.unchecked_into())
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
    /// Validates the configuration; throws if it is unusable (see `checkConfig`).
    #[wasm_bindgen(constructor)]
    pub fn new(document: JsConfigDocument) -> Result<Core, JsError> {
        let config = from_js::<Config>("configuration", document.into())?;
        Ok(Core { config })
    }

    /// One step of the calling contract: see the `edgegrant` crate documentation.
    /// Throws on host misuse; protocol errors are ordinary steps.
    pub fn handle(
        &self,
        input: JsInput,
        now: JsTime,
        entropy: &[u8],
        records: JsRecords,
    ) -> Result<JsStep, JsError> {
        let input: Input = from_js("input", input.into())?;
        let now: UnixTime = from_js("time", now.into())?;
        let entropy = Entropy::from_slice(entropy)
            .ok_or_else(|| JsError::new(&format!("entropy must be exactly {ENTROPY_LEN} bytes")))?;
        let records: Records = from_js("records", records.into())?;
        let step = edgegrant::handle(&self.config, &input, now, &entropy, &records)
            .map_err(|misuse| JsError::new(&misuse.to_string()))?;
        Ok(to_js(&step)?.unchecked_into())
    }

    /// The Required Scope the configuration declares for `endpoint`, if any.
    #[wasm_bindgen(js_name = requiredScope)]
    pub fn required_scope(&self, endpoint: &str) -> Option<String> {
        self.config
            .required_scope(endpoint)
            .map(|s| s.as_str().to_owned())
    }
}

/// How many entropy bytes every call to [`PkceClient::handle`] takes.
#[wasm_bindgen(js_name = clientEntropyLength)]
pub fn client_entropy_length() -> usize {
    client::CLIENT_ENTROPY_LEN
}

/// The PKCE client machine (see `edgegrant::client`): pure transitions, the host keeps the state.
#[wasm_bindgen]
pub struct PkceClient {
    client: client::PkceClient,
}

#[wasm_bindgen]
impl PkceClient {
    /// Checks the configuration; throws if it cannot work.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsClientConfig) -> Result<PkceClient, JsError> {
        let config = from_js::<client::ClientConfig>("client configuration", config.into())?;
        let client = client::PkceClient::new(config).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(PkceClient { client })
    }

    /// The next state and step for `input` in `state` at `now`, with fresh entropy. Protocol
    /// failures are `failed` steps; only malformed arguments throw.
    pub fn handle(
        &self,
        state: JsClientState,
        input: JsClientInput,
        now: JsTime,
        entropy: &[u8],
    ) -> Result<JsClientTransition, JsError> {
        let state: client::ClientState = from_js("client state", state.into())?;
        let input: client::ClientInput = from_js("client input", input.into())?;
        let now: UnixTime = from_js("time", now.into())?;
        let entropy = client::ClientEntropy::from_slice(entropy).ok_or_else(|| {
            JsError::new(&format!(
                "entropy must be exactly {} bytes",
                client::CLIENT_ENTROPY_LEN
            ))
        })?;
        let transition = self.client.handle(&state, &input, now, &entropy);
        Ok(to_js(&transition)?.unchecked_into())
    }
}
