//! The PKCE client machine's bindings, built as a module of its own for browsers.

use alloc::format;
use alloc::string::{String, ToString};
use edgegrant::{client, UnixTime};
use wasm_bindgen::prelude::*;

use crate::{from_json, to_json};

#[wasm_bindgen(typescript_custom_section)]
const CLIENT_TYPES: &'static str = r#"
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
  /**
   * Bind the tokens to a key (DPoP, RFC 9449): the public half of the host's signing key as a
   * JWK (EC P-256, or RSA of 2048 bits or more), e.g. `crypto.subtle.exportKey("jwk",
   * keyPair.publicKey)`. The host signs each `ProofToSign` with the private half. Absent or
   * `null`: bearer tokens.
   */
  dpop_public_key?: { kty: string; [member: string]: unknown } | null;
}
/** A DPoP proof to sign: sign `signing_input`'s bytes with the key (ES256: ECDSA P-256 SHA-256,
 *  the raw `r ‖ s` WebCrypto gives; RS256: RSASSA-PKCS1-v1_5 SHA-256) and send
 *  `${signing_input}.${base64url(signature)}` as the request's `DPoP` header. */
export interface ProofToSign { alg: "ES256" | "RS256"; signing_input: string }
/** What the client holds once authorized. Secret: keep it where only this client can read it. */
export interface ClientSession {
  access_token: string;
  expires_at: UnixTime | null;
  refresh_token: string | null;
  scopes: Scope[];
  account_id: string | null;
  uid: string | null;
  after_refusal: boolean;
  /** The tokens are bound to the DPoP key: the access token goes as `DPoP` with a proof. */
  bound: boolean;
  /** The last `DPoP-Nonce` of the authorization server, and of the API. */
  server_nonce: string | null;
  api_nonce: string | null;
}
/** A `ClientSession` without its secrets. */
export interface SessionView {
  expires_at: UnixTime | null;
  refreshable: boolean;
  scopes: Scope[];
  account_id: string | null;
  uid: string | null;
  bound: boolean;
}
/** Where the client stands; the host keeps it between calls (start with `{ phase: "idle" }`). */
export type ClientState =
  | { phase: "idle" }
  | { phase: "authorizing"; state: string; verifier: string }
  | { phase: "exchanging"; sent_at: UnixTime; code?: string; verifier?: string; nonce?: string }
  | { phase: "authorized"; session: ClientSession }
  | { phase: "refreshing"; session: ClientSession; sent_at: UnixTime; reason: "due" | "refused" | "to_revoke" }
  | { phase: "revoking"; session: ClientSession };
export type ClientInput =
  | { kind: "begin" }
  | { kind: "redirected"; url: string }
  | { kind: "code_entered"; code: string }
  | { kind: "response"; response: { status: number; headers?: [string, string][]; body: string } }
  /** `method` and `url` name the call in its DPoP proof: needed when the tokens are bound. */
  | { kind: "call"; method?: string; url?: string }
  /** The 401's `WWW-Authenticate` and `DPoP-Nonce`, and the call, to make it again with a nonce. */
  | { kind: "unauthorized"; challenge?: string | null; nonce?: string | null; method?: string; url?: string }
  | { kind: "revoke" };
/** A request to send; with `proof`, sign it and add the `DPoP` header. */
export interface ClientRequest { method: string; url: string; headers: [string, string][]; body: string; proof?: ProofToSign }
export type ClientError =
  | { kind: "state_mismatch" }
  | { kind: "wrong_redirect_target" }
  | { kind: "authorization_refused"; error: string; description: string | null }
  | { kind: "missing_code" }
  | { kind: "token_refused"; status: number; error: string; description: string | null }
  | { kind: "malformed_response"; reason: string }
  | { kind: "call_target_missing" }
  | { kind: "revocation_failed"; status: number }
  | { kind: "unexpected"; input: string; state: string };
export type ClientStep =
  | { step: "navigate"; url: string }
  | { step: "send"; request: ClientRequest }
  | { step: "attach"; authorization: string; proof?: ProofToSign }
  | { step: "authorized"; session: SessionView }
  | { step: "reauthorize"; reason: string }
  | { step: "signed_out" }
  | { step: "failed"; error: ClientError };
export interface ClientTransition { state: ClientState; step: ClientStep }
"#;

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
    /// Checks the configuration (JSON); throws if it cannot work.
    #[wasm_bindgen(constructor)]
    pub fn new(config: &str) -> Result<PkceClient, JsError> {
        let config = from_json::<client::ClientConfig>("client configuration", config)?;
        let client = client::PkceClient::new(config).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(PkceClient { client })
    }

    /// The next state and step (a `ClientTransition`, as JSON) for `input` in `state` (both
    /// JSON) at `now`, with fresh entropy. Protocol failures are `failed` steps; only malformed
    /// arguments throw.
    pub fn handle(
        &self,
        state: &str,
        input: &str,
        now: u64,
        entropy: &[u8],
    ) -> Result<String, JsError> {
        let state: client::ClientState = from_json("client state", state)?;
        let input: client::ClientInput = from_json("client input", input)?;
        let entropy = client::ClientEntropy::from_slice(entropy).ok_or_else(|| {
            JsError::new(&format!(
                "entropy must be exactly {} bytes",
                client::CLIENT_ENTROPY_LEN
            ))
        })?;
        to_json(&self.client.handle(&state, &input, UnixTime(now), &entropy))
    }
}
