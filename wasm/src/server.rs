//! The server's bindings: the engine ([`Core`]) and one request at a time ([`Request`]).
//!
//! On the request path each step crosses once each way, packed in bytes (the module
//! `packed`): the step out, what came of it in. Records cross as the opaque bytes the core
//! encodes. JSON is left to the configuration (once) and to audit events (once per write).

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use edgegrant::{
    AccountId, AppKey, AttemptStep, Attempter, Config, Entropy, Event, FetchFailure, Fetched,
    HttpRequest, Input, Seconds, Step, Uid, UnixTime, Unlinker, User, ENTROPY_LEN,
};
use wasm_bindgen::prelude::*;

use crate::{numbers_are_exact, packed, UNREPRESENTABLE};

#[wasm_bindgen(typescript_custom_section)]
const SERVER_TYPES: &'static str = r#"
export type ConfigCheck = { tag: "ok" } | { tag: "invalid"; content: string };
"#;

/// The JSON list of `events` (each [`AuditEvent::to_json`](edgegrant::AuditEvent::to_json)),
/// refusing a 64-bit number a JS number cannot hold exactly. No serde serializer of maps is
/// linked for them: 1.1 KiB of the module, gzipped, with the configuration check's answer below.
pub(crate) fn audit_json(events: &[edgegrant::AuditEvent]) -> Result<String, JsError> {
    let mut json = String::from("[");
    for (at, event) in events.iter().enumerate() {
        if at > 0 {
            json.push(',');
        }
        json.push_str(&event.to_json());
    }
    json.push(']');
    if numbers_are_exact(&json) {
        Ok(json)
    } else {
        Err(JsError::new(UNREPRESENTABLE))
    }
}

/// The validated configuration of a document (JSON), read by the core's one conversion.
fn config_of(document: &str) -> Result<Config, String> {
    if !numbers_are_exact(document) {
        return Err(format!("invalid configuration: {UNREPRESENTABLE}"));
    }
    Config::from_json(document).map_err(|e| format!("invalid configuration: {e}"))
}

/// Whether a configuration document (JSON) is usable: `{ tag: "ok" }` or
/// `{ tag: "invalid", content }`, as JSON.
#[wasm_bindgen(js_name = checkConfig)]
pub fn check_config(document: &str) -> String {
    match config_of(document) {
        Ok(_) => String::from(r#"{"tag":"ok"}"#),
        // A string always serializes.
        Err(message) => format!(
            r#"{{"tag":"invalid","content":{}}}"#,
            serde_json::to_string(&message).unwrap_or_default()
        ),
    }
}

/// The scopes the legacy access type `access` (its name in the configuration, `app_folder`
/// …) stands for, joined by spaces: what migrating a legacy app to scopes pre-selects
/// ([`edgegrant::App::migrated_to_scopes`]; the package's `migrateApp` rewrites the document in
/// JavaScript, so that writing a configuration's JSON is not in this module: 5.3 KiB gzipped);
/// `undefined` for another name.
#[wasm_bindgen(js_name = legacyScopes)]
pub fn legacy_scopes(access: &str) -> Option<String> {
    edgegrant::LegacyAccess::from_name(access).map(|access| access.scopes().to_string())
}

/// The digest to register for an app secret (URL-safe base64 of its SHA-256).
#[wasm_bindgen(js_name = secretDigest)]
pub fn secret_digest(secret: &str) -> String {
    edgegrant::ClientSecret::presented(secret)
        .digest()
        .to_base64()
}

/// Whether a form post with these headers (names and values alternately, joined by NUL, the
/// `Host` among them), to this server reached by `scheme` (`http`, `https`, or unknown), may
/// come from another site: the rule the consent form follows
/// (`edgegrant::HttpRequest::is_cross_site`), for a host's own forms.
#[wasm_bindgen(js_name = isCrossSite)]
pub fn is_cross_site(headers: &str, scheme: Option<String>) -> bool {
    let mut request = HttpRequest::new("POST", "/", "");
    request.scheme = scheme;
    let mut names_and_values = headers.split('\0');
    while let (Some(name), Some(value)) = (names_and_values.next(), names_and_values.next()) {
        request.headers.push((name.to_owned(), value.to_owned()));
    }
    request.is_cross_site()
}

/// The headers of every page (the core's [`edgegrant::PAGE_HEADERS`]), names and values
/// alternately, joined by NUL (which no header holds), for a host's own pages.
#[wasm_bindgen(js_name = pageHeaders)]
pub fn page_headers() -> String {
    let mut joined = String::new();
    for (name, value) in edgegrant::PAGE_HEADERS {
        for part in [name, value] {
            if !joined.is_empty() {
                joined.push('\0');
            }
            joined.push_str(part);
        }
    }
    joined
}

/// The canonical form of a resource identifier (`edgegrant::Resource::canonical`: what
/// tokens name in `aud`), or `undefined` for text that is none.
#[wasm_bindgen(js_name = canonicalResource)]
pub fn canonical_resource(text: &str) -> Option<String> {
    edgegrant::Resource::canonical(text)
}

/// A protected resource's metadata (RFC 9728): where it is served (its URL), a NUL, and the
/// document, for `resource` protected by the authorization server `issuer`, requiring `scopes`
/// (joined by NUL), taking DPoP proofs when `dpop`; `undefined` if `resource` or `issuer` is no
/// identifier.
#[wasm_bindgen(js_name = resourceMetadata)]
pub fn resource_metadata(resource: &str, issuer: &str, scopes: &str, dpop: bool) -> Option<String> {
    let canonical = edgegrant::Resource::canonical(resource)?;
    let issuer = edgegrant::Issuer::new(issuer).ok()?;
    let scopes = scopes.split('\0').filter(|scope| !scope.is_empty());
    let mut out = edgegrant::protected_resource_metadata_url(&canonical);
    out.push('\0');
    out.push_str(&edgegrant::protected_resource_metadata(
        resource, &issuer, scopes, dpop,
    ));
    Some(out)
}

/// The access token of an `Authorization` header's value as the core reads it
/// (`edgegrant::presented_token_of`): `b` (the `Bearer` scheme) or `d` (`DPoP`, only when
/// `dpop`), a NUL and the token; or `r`, a NUL and the refusal's name. For the resource helper.
#[wasm_bindgen(js_name = accessToken)]
pub fn access_token(authorization: Option<String>, dpop: bool) -> String {
    match edgegrant::presented_token_of(authorization.as_deref(), dpop) {
        Ok((true, token)) => format!("d\0{token}"),
        Ok((false, token)) => format!("b\0{token}"),
        Err(refusal) => format!("r\0{}", refusal.name()),
    }
}

/// The DPoP proof of a request to a resource server (`edgegrant::resource_server_proof`):
/// `method`, the resource's `uri` (no query), the request's `DPoP` header as it came (`undefined`:
/// none), the access token it comes with, now and the window, in seconds. `p`, a NUL, the key's
/// thumbprint, a NUL, the signature's algorithm, a NUL and the key (a JWK): the host verifies the
/// signature (the header's third part over its first two) with it; or `r`, a NUL and why not
/// (a `DpopFault` name). The module for configured apps reads no proof: always `r`.
#[wasm_bindgen(js_name = dpopProof)]
pub fn dpop_proof(
    method: String,
    uri: &str,
    proof: Option<String>,
    access_token: &str,
    now: f64,
    window: f64,
) -> String {
    let malformed = || "r\0malformed".to_owned();
    // Whole seconds a JavaScript number holds exactly.
    let whole = |n: f64| (0.0..=9_007_199_254_740_991.0).contains(&n) && n as u64 as f64 == n;
    if !cfg!(feature = "unannounced") || !whole(now) || !whole(window) {
        return malformed();
    }
    let mut request = HttpRequest::new(&method, "", "");
    request
        .headers
        .extend(proof.map(|value| ("DPoP".to_owned(), value)));
    let (now, window) = (UnixTime(now as u64), Seconds(window as u64));
    match edgegrant::resource_server_proof(&request, uri, access_token, now, window) {
        Ok(proof) => format!(
            "p\0{}\0{}\0{}",
            proof.thumbprint,
            proof.signature.alg.name(),
            proof.signature.key
        ),
        Err(edgegrant::Refusal::DpopProofInvalid(fault)) => format!("r\0{}", fault.name()),
        Err(_) => malformed(),
    }
}

/// The bearer token of an `Authorization` header's value as the core reads it
/// (`edgegrant::bearer_token_of`): `t`, a NUL and the token; or `r`, a NUL and the refusal's
/// name (`bearer_missing`, `malformed_bearer`). For the resource helper.
#[wasm_bindgen(js_name = bearerToken)]
pub fn bearer_token(authorization: Option<String>) -> String {
    match edgegrant::bearer_token_of(authorization.as_deref()) {
        Ok(token) => format!("t\0{token}"),
        Err(refusal) => format!("r\0{}", refusal.name()),
    }
}

/// The status, a NUL and the `WWW-Authenticate` challenge the core answers a resource server's
/// failed bearer check with (`edgegrant::resource_server_challenge`): `refusal` is
/// `bearer_missing`, `malformed_bearer`, `invalid_token`, `insufficient_scope` (which needs
/// `required_scope`), `token_bound_to_another_key`, or `dpop_proof_invalid:` and a `DpopFault`
/// name; `undefined` for any other, or a scope that is none. `challenges`: `bearer` (the
/// resource takes no proofs), `bearer_and_dpop` (it does; the token came as a bearer token) or
/// `dpop` (it came under the `DPoP` scheme: the refusal on the `DPoP` challenge); `undefined`
/// for another.
#[wasm_bindgen(js_name = resourceChallenge)]
pub fn resource_challenge(
    refusal: &str,
    required_scope: Option<String>,
    metadata_url: &str,
    challenges: &str,
) -> Option<String> {
    let challenges = match challenges {
        "bearer" => edgegrant::Challenges::Bearer,
        "bearer_and_dpop" => edgegrant::Challenges::BearerAndDpop,
        "dpop" => edgegrant::Challenges::Dpop,
        _ => return None,
    };
    let required = match required_scope {
        Some(scope) => Some(edgegrant::Scope::new(scope).ok()?),
        None => None,
    };
    let refusal = match refusal {
        "bearer_missing" => edgegrant::Refusal::BearerMissing,
        "malformed_bearer" => edgegrant::Refusal::MalformedBearer,
        "invalid_token" => edgegrant::Refusal::UnknownAccessToken,
        "insufficient_scope" => edgegrant::Refusal::MissingScope(required.clone()?),
        "token_bound_to_another_key" => edgegrant::Refusal::TokenBoundToAnotherKey,
        other => {
            use edgegrant::DpopFault::*;
            let fault = match other.strip_prefix("dpop_proof_invalid:")? {
                "malformed" => Malformed,
                "method" => Method,
                "uri" => Uri,
                "token_hash" => TokenHash,
                "time" => Time,
                "signature" => Signature,
                "replayed" => Replayed,
                _ => return None,
            };
            edgegrant::Refusal::DpopProofInvalid(fault)
        }
    };
    let (status, challenge) =
        edgegrant::resource_server_challenge(&refusal, required.as_ref(), metadata_url, challenges);
    Some(format!("{status}\0{challenge}"))
}

/// How many entropy bytes every request takes.
#[wasm_bindgen(js_name = entropyLength)]
pub fn entropy_length() -> usize {
    ENTROPY_LEN
}

/// The HTTP input of [`Core::request`] and [`Core::partition_of`]. Method, path and query are
/// taken as the strings the bindings allocated for them (an owned parameter is moved in, where
/// a borrowed one would be copied again).
#[allow(clippy::too_many_arguments)]
fn http_input(
    method: String,
    path: String,
    query: String,
    headers: &str,
    body: Vec<u8>,
    account_id: Option<String>,
    uid: Option<String>,
    name: Option<String>,
    props: Option<String>,
    source: Option<String>,
    scheme: Option<String>,
) -> Result<Input, JsError> {
    // Room for every pair up front: a browser sends a dozen headers or more.
    let mut pairs = Vec::with_capacity(headers.bytes().filter(|&b| b == 0).count().div_ceil(2));
    let mut names_and_values = headers.split('\0');
    while let (Some(name), Some(value)) = (names_and_values.next(), names_and_values.next()) {
        pairs.push((name.to_owned(), value.to_owned()));
    }
    let user = match (account_id, uid) {
        (Some(account_id), Some(uid)) => Some(User {
            account_id: AccountId::new(account_id).map_err(|e| JsError::new(&e.to_string()))?,
            uid: Uid::new(uid).map_err(|e| JsError::new(&e.to_string()))?,
            name,
            // JSON text from the driver; a NUL would break the packed principal's fields.
            props: match props {
                Some(props) if props.contains('\0') => {
                    return Err(JsError::new("user.props: JSON text holds no NUL"))
                }
                props => props,
            },
        }),
        _ => None,
    };
    let request = HttpRequest {
        method,
        path,
        query,
        headers: pairs,
        body,
        source,
        scheme,
    };
    Ok(Input::Http { request, user })
}

/// A whole, non-negative, exactly representable JS number as a `u64`.
fn whole(what: &str, value: f64) -> Result<u64, JsError> {
    // No float formatting in the error: it would pull kilobytes of code into the module.
    packed::safe_integer(value).ok_or_else(|| {
        JsError::new(&format!(
            "edgegrant: {what} must be a non-negative safe integer"
        ))
    })
}

fn entropy_of(bytes: &[u8]) -> Result<Entropy, JsError> {
    Entropy::from_slice(bytes)
        .ok_or_else(|| JsError::new(&format!("entropy must be exactly {ENTROPY_LEN} bytes")))
}

/// The engine with its validated configuration. Stateless between requests.
#[wasm_bindgen]
pub struct Core {
    config: Arc<Config>,
}

#[wasm_bindgen]
impl Core {
    /// Validates the configuration (JSON); throws if it is unusable (see `checkConfig`).
    #[wasm_bindgen(constructor)]
    pub fn new(document: &str) -> Result<Core, JsError> {
        let config = config_of(document).map_err(|message| JsError::new(&message))?;
        Ok(Core {
            config: Arc::new(config),
        })
    }

    /// Starts an HTTP request: `headers` holds names and values alternately, joined by NUL
    /// (`rawHeaders.join("\0")`: one string crosses, not one per header; HTTP forbids NUL in
    /// names and values, and Node and Fetch refuse it), `body` its bytes (up to one byte past
    /// `max_input_bytes` is enough); the signed-in user, if any, as `accountId` and `uid`;
    /// `source`, the client's address as the host knows it (failed client authentications
    /// are counted against it), if known; `now` in Unix seconds; fresh entropy.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        &self,
        method: String,
        path: String,
        query: String,
        headers: &str,
        body: Vec<u8>,
        #[wasm_bindgen(js_name = accountId)] account_id: Option<String>,
        uid: Option<String>,
        name: Option<String>,
        props: Option<String>,
        source: Option<String>,
        scheme: Option<String>,
        now: f64,
        entropy: &[u8],
    ) -> Result<Request, JsError> {
        let input = http_input(
            method, path, query, headers, body, account_id, uid, name, props, source, scheme,
        )?;
        self.start(input, now, entropy)
    }

    /// The partition an HTTP request (the arguments of [`request`](Self::request)) is routed
    /// to, or `undefined` if it needs none: what a front that spreads partitions over many
    /// stores routes by, before it starts the request where the partition lives.
    #[wasm_bindgen(js_name = partitionOf)]
    #[allow(clippy::too_many_arguments)]
    pub fn partition_of(
        &self,
        method: String,
        path: String,
        query: String,
        headers: &str,
        body: Vec<u8>,
        #[wasm_bindgen(js_name = accountId)] account_id: Option<String>,
        uid: Option<String>,
    ) -> Result<Option<String>, JsError> {
        let input = http_input(
            method, path, query, headers, body, account_id, uid, None, None, None, None,
        )?;
        Ok(edgegrant::partition_of(&self.config, &input).map(|p| p.to_string()))
    }

    /// The client an HTTP request (the arguments of [`request`](Self::request)) names, as it
    /// names it, if it is a well-formed app key (never a secret): for a host's log of
    /// refusals (`edgegrant::named_client`).
    #[wasm_bindgen(js_name = namedClient)]
    pub fn named_client(
        &self,
        method: String,
        path: String,
        query: String,
        headers: &str,
        body: Vec<u8>,
    ) -> Result<Option<String>, JsError> {
        let Input::Http { request, .. } = http_input(
            method, path, query, headers, body, None, None, None, None, None, None,
        )?
        else {
            return Ok(None);
        };
        Ok(edgegrant::named_client(&self.config, &request).map(|app| app.as_str().to_owned()))
    }

    /// What in the configuration is valid but most likely a mistake, one line each (joined by
    /// newlines; empty: none), for a log at start-up (`edgegrant::Config::warnings`).
    pub fn warnings(&self) -> String {
        self.config.warnings().join("\n")
    }

    /// Starts an unlink: the user (`by = "user"`) or a team admin (`"team_admin"`) ends every
    /// token of `app` for `accountId`.
    pub fn unlink(
        &self,
        app: &str,
        #[wasm_bindgen(js_name = accountId)] account_id: &str,
        by: &str,
        now: f64,
        entropy: &[u8],
    ) -> Result<Request, JsError> {
        let by = match by {
            "user" => Unlinker::User,
            "team_admin" => Unlinker::TeamAdmin,
            other => {
                return Err(JsError::new(&format!(
                    "unlink: by must be user or team_admin, got {other}"
                )))
            }
        };
        let input = Input::Unlink {
            app: AppKey::new(app).map_err(|e| JsError::new(&e.to_string()))?,
            account_id: AccountId::new(account_id).map_err(|e| JsError::new(&e.to_string()))?,
            by,
        };
        self.start(input, now, entropy)
    }

    /// Starts a credential check of the host's own (its sign-in form): the attempters as two
    /// lists of one length, `kinds` (`account`, `source`) and `values` — each value whole, so
    /// no name typed at sign-in can spell another attempter; `succeeded: false` before the
    /// check (may it go ahead? it is counted now), `true` after a correct one (take it back).
    pub fn attempts(
        &self,
        kinds: Vec<String>,
        values: Vec<String>,
        succeeded: bool,
        now: f64,
        entropy: &[u8],
    ) -> Result<Request, JsError> {
        if kinds.len() != values.len() {
            return Err(JsError::new("attempts: one value per kind"));
        }
        let mut list = Vec::with_capacity(kinds.len());
        for (kind, value) in kinds.iter().zip(values) {
            list.push(match kind.as_str() {
                "account" => Attempter::Account(value),
                "source" => Attempter::Source(value),
                other => {
                    return Err(JsError::new(&format!(
                        "attempts: an attempter is account or source, got {other}"
                    )))
                }
            });
        }
        let step = if succeeded {
            AttemptStep::Succeeded
        } else {
            AttemptStep::Reserve
        };
        let input = Input::Attempts {
            attempters: list,
            step,
        };
        self.start(input, now, entropy)
    }

    fn start(&self, input: Input, now: f64, entropy: &[u8]) -> Result<Request, JsError> {
        let now = UnixTime(whole("now", now)?);
        let (inner, step) =
            edgegrant::Request::start(self.config.clone(), input, now, entropy_of(entropy)?);
        Ok(Request {
            inner,
            step,
            packed: Vec::new(),
            max_steps: edgegrant::Request::max_steps(&self.config),
        })
    }

    /// How much of a body the core reads: a host may stop reading one byte past this.
    #[wasm_bindgen(js_name = maxInputBytes)]
    pub fn max_input_bytes(&self) -> usize {
        self.config.policy().max_input_bytes
    }

    /// How much of a body to `path` the core reads (an API endpoint's bound, else
    /// `maxInputBytes`): a host may stop reading one byte past this.
    #[wasm_bindgen(js_name = bodyLimit)]
    pub fn body_limit(&self, path: &str) -> usize {
        self.config.body_limit(path)
    }

    /// The Required Scope the configuration declares for `endpoint`, if any.
    #[wasm_bindgen(js_name = requiredScope)]
    pub fn required_scope(&self, endpoint: &str) -> Option<String> {
        self.config
            .required_scope(endpoint)
            .map(|s| s.as_str().to_owned())
    }
}

/// One request in progress (see `edgegrant::Request`). `step` gives the step to act on,
/// packed in bytes (see the module `packed`); what came of it goes back in one call, which
/// returns the next step the same way: one crossing each way per step. Free it once done.
#[wasm_bindgen]
pub struct Request {
    inner: edgegrant::Request,
    /// The step to act on.
    step: Step,
    /// The step, packed: what JavaScript reads in the module's memory.
    packed: Vec<u8>,
    max_steps: u32,
}

fn misuse(error: impl core::fmt::Display) -> JsError {
    JsError::new(&format!("edgegrant: {error}"))
}

impl Request {
    /// Hands `event` to the core and packs the step it gives.
    fn next(&mut self, event: Event) -> Result<u32, JsError> {
        self.step = self.inner.advance(event).map_err(misuse)?;
        self.step()
    }
}

#[wasm_bindgen]
impl Request {
    /// The step to act on, packed, as its address in the module's memory (`pkg/src/packed.js`
    /// reads it there, before the request's next call): its kind — `r` (read the keys, then
    /// `found`), `w` (apply the puts all or nothing, then `advance("committed")` or
    /// `advance("conflicted")`), `p` (send the reply), `s` (answer the authorized API call),
    /// `f` (fetch a client's metadata document, then `fetched` or `fetchFailed`), `v` (verify a
    /// client assertion's signature, then `verified`) — its fields as NUL-joined text, and its
    /// bytes.
    pub fn step(&mut self) -> Result<u32, JsError> {
        packed::step(&self.step, &mut self.packed)?;
        // An address in the module's 32-bit memory.
        Ok(self.packed.as_ptr() as usize as u32)
    }

    /// The most reads and writes this request asks for before it answers
    /// (`edgegrant::Request::max_steps`): a host loop needs no bound of its own.
    #[wasm_bindgen(js_name = maxSteps)]
    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }

    /// The partition every record of the request lies in (but for a count of failed attempts
    /// read beside a token request's credential), if it needs any.
    pub fn partition(&self) -> Option<String> {
        self.inner.partition().map(|p| p.to_string())
    }

    /// What the store holds under each key of the `r` step, packed in the keys' order (a tag,
    /// then a stored record's version and bytes: see `packed`); returns the next step.
    pub fn found(&mut self, records: &[u8]) -> Result<u32, JsError> {
        let Step::Read(keys) = &self.step else {
            return Err(misuse("found: the step is not a read"));
        };
        let found =
            packed::records(keys, records).map_err(|why| misuse(format!("found: {why}")))?;
        self.next(Event::Read(found))
    }

    /// What came of a write, or of a read the store failed: `committed`, `conflicted` (a
    /// condition failed) or `unavailable` (the store failed on the pending read or write: the
    /// request ends in 503 with `Retry-After`). Returns the next step.
    pub fn advance(&mut self, event: &str) -> Result<u32, JsError> {
        let event = match event {
            "committed" => Event::Committed,
            "conflicted" => Event::Conflicted,
            "unavailable" => Event::Unavailable,
            other => return Err(misuse(format!("no event {other}"))),
        };
        self.next(event)
    }

    /// What the fetch of a `f` step got: the status, the `Cache-Control` header and the body.
    /// Returns the next step.
    pub fn fetched(
        &mut self,
        status: u16,
        cache_control: Option<String>,
        body: Vec<u8>,
    ) -> Result<u32, JsError> {
        self.next(Event::Fetched(Fetched {
            status,
            cache_control,
            body,
        }))
    }

    /// Whether the signature of a `v` step holds. Returns the next step.
    pub fn verified(&mut self, holds: bool) -> Result<u32, JsError> {
        self.next(Event::Verified(holds))
    }

    /// The fetch of a `f` step got no answer: `refused`, `too_large`, `timeout` or
    /// `unreachable`. Returns the next step.
    #[wasm_bindgen(js_name = fetchFailed)]
    pub fn fetch_failed(&mut self, failure: &str) -> Result<u32, JsError> {
        let failure = FetchFailure::from_name(failure)
            .ok_or_else(|| misuse(format!("no fetch failure {failure}")))?;
        self.next(Event::FetchFailed(failure))
    }

    /// What a credential check of the host's own may do, as the reply to its `attempts` says
    /// (`AttemptVerdict::name`: `allowed`, `limited`, `unavailable`, `malformed`), and for the
    /// two that say to wait, a space and how long (`Retry-After`, seconds).
    pub fn verdict(&self) -> String {
        let Step::Respond(reply) = &self.step else {
            return String::new();
        };
        let verdict = reply.attempt_verdict();
        let mut out = verdict.name().to_owned();
        if let Some(wait) = verdict.retry_after() {
            out.push(' ');
            out.push_str(&wait.0.to_string());
        }
        out
    }
}
