//! Runner 1 of the conformance corpus (`conformance/`): every vector against the core itself,
//! step by step over the atomic in-memory [`Store`]. The rules — what is observed of each
//! outcome, how expectations match, captures — are those of `conformance/README.md`, which the
//! JavaScript runners (`conformance/runners/lib.mjs`) implement too.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use edgegrant::{
    AccountId, AppKey, Authorized, Config, ConfigDocument, Entropy, FetchFailure, Fetched,
    HttpRequest, HttpResponse, Input, Outcome, Subject, Unlinker, User, ENTROPY_LEN,
};
use serde_json::{json, Map, Value};

use crate::{consent_form, Answer, Decision, Progress, Request, Store};

/// The endpoint with an operation behind it in every host: an authorized call answers 200 with
/// the principal's `account_id`; other declared endpoints have none (404), as in the hosts.
const ACCOUNT_ENDPOINT: &str = "/2/users/get_current_account";

/// The corpus directory.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance")
}

/// One vector, resolved to its configuration and users.
pub struct Vector {
    /// The file it came from.
    pub file: String,
    /// `family/name`.
    pub id: String,
    /// Why the core runner cannot run it, if the vector says so.
    pub unsupported: Option<String>,
    config: Config,
    users: Vec<(String, User)>,
    steps: Vec<Value>,
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn field<'v>(value: &'v Value, name: &str) -> Result<&'v Value, String> {
    value
        .get(name)
        .ok_or_else(|| format!("missing field {name}"))
}

fn string<'v>(value: &'v Value, name: &str) -> Result<&'v str, String> {
    field(value, name)?
        .as_str()
        .ok_or_else(|| format!("{name} is not a string"))
}

/// Every vector of `conformance/vectors/*.json`, in file order. (The JavaScript coverage test
/// validates the files against the schema; this loader fails on anything it cannot read.)
pub fn load_corpus() -> Result<Vec<Vector>, String> {
    let dir = corpus_dir().join("vectors");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut vectors = Vec::new();
    for path in files {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let doc = read_json(&path)?;
        let list = field(&doc, "vectors")?
            .as_array()
            .ok_or_else(|| format!("{file}: vectors is not a list"))?;
        for raw in list {
            let vector = load_vector(&file, raw).map_err(|e| format!("{file}: {e}"))?;
            vectors.push(vector);
        }
    }
    Ok(vectors)
}

fn load_vector(file: &str, raw: &Value) -> Result<Vector, String> {
    let id = string(raw, "id")?.to_owned();
    let setup = match field(raw, "setup")? {
        Value::String(name) => read_json(&corpus_dir().join(format!("setups/{name}.json")))?,
        inline => inline.clone(),
    };
    let mut document = field(&setup, "config")?.clone();
    if let Some(Value::Object(policy)) = raw.get("policy") {
        let merged = document
            .as_object_mut()
            .ok_or("config is not an object")?
            .entry("policy")
            .or_insert_with(|| json!({}));
        if let Value::Object(base) = merged {
            base.extend(policy.clone());
        }
    }
    let config = ConfigDocument::from_json_value(&document)
        .and_then(Config::new)
        .map_err(|e| format!("{id}: configuration: {e}"))?;
    let mut users = Vec::new();
    for user in field(&setup, "users")?
        .as_array()
        .ok_or("users is not a list")?
    {
        let parsed = User {
            account_id: AccountId::new(string(user, "account_id")?)
                .map_err(|e| format!("{id}: account_id: {e}"))?,
            uid: edgegrant::Uid::new(string(user, "uid")?)
                .map_err(|e| format!("{id}: uid: {e}"))?,
            name: None,
            props: None,
        };
        users.push((string(user, "name")?.to_owned(), parsed));
    }
    let unsupported = raw
        .get("unsupported")
        .and_then(|u| u.get("core"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let steps = field(raw, "steps")?
        .as_array()
        .ok_or("steps is not a list")?
        .clone();
    Ok(Vector {
        file: file.to_owned(),
        id,
        unsupported,
        config,
        users,
        steps,
    })
}

/// The step's entropy: its hex bytes repeated to [`ENTROPY_LEN`].
fn entropy(hex: &str) -> Result<Entropy, String> {
    let unit = decode_hex(hex)?;
    if unit.is_empty() {
        return Err("entropy is empty".into());
    }
    let bytes: Vec<u8> = unit.iter().copied().cycle().take(ENTROPY_LEN).collect();
    Entropy::from_slice(&bytes).ok_or_else(|| "entropy length".into())
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, String> {
    if !hex.len().is_multiple_of(2) {
        return Err(format!("odd hex {hex:?}"));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad hex {hex:?}"))
        })
        .collect()
}

/// `input` with the DPoP proof its `dpop` describes (README, "DPoP proofs") as its last `DPoP`
/// header: ES256 by the key `signed_by` (else `key`) of `dpop-keys.json`, the header carrying
/// `key`'s public JWK.
fn with_proof(input: &Value, at: u64) -> Result<Value, String> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use p256::ecdsa::signature::Signer as _;
    use sha2::Digest as _;
    let keys = read_json(&corpus_dir().join("dpop-keys.json"))?;
    let dpop = field(input, "dpop")?;
    let key_of = |name: &str| field(field(&keys, "keys")?, name).cloned();
    let public = key_of(string(dpop, "key")?)?;
    let mut jwk =
        json!({ "crv": public["crv"], "kty": public["kty"], "x": public["x"], "y": public["y"] });
    if dpop.get("with_private_key") == Some(&Value::Bool(true)) {
        jwk["d"] = public["d"].clone();
    }
    let typ = dpop
        .get("typ")
        .and_then(Value::as_str)
        .unwrap_or("dpop+jwt");
    let header = json!({ "typ": typ, "alg": "ES256", "jwk": jwk });
    let mut claims = json!({
        "jti": string(dpop, "jti")?,
        "htm": string(dpop, "htm")?,
        "htu": string(dpop, "htu")?,
        "iat": dpop.get("iat").and_then(Value::as_u64).unwrap_or(at),
    });
    if let Some(nonce) = dpop.get("nonce") {
        claims["nonce"] = nonce.clone();
    }
    if let Some(token) = dpop.get("ath_of").and_then(Value::as_str) {
        claims["ath"] = URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(token.as_bytes()))
            .into();
    }
    let b64 = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string().as_bytes());
    let signing_input = format!("{}.{}", b64(&header), b64(&claims));
    let signer = match dpop.get("signed_by").and_then(Value::as_str) {
        Some(name) => key_of(name)?,
        None => public,
    };
    let d = URL_SAFE_NO_PAD
        .decode(string(&signer, "d")?)
        .map_err(|e| format!("dpop key: {e}"))?;
    let key = p256::ecdsa::SigningKey::from_slice(&d).map_err(|e| format!("dpop key: {e}"))?;
    let signature: p256::ecdsa::Signature = key.sign(signing_input.as_bytes());
    let proof = format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature.to_bytes())
    );
    let mut out = input.clone();
    let object = out.as_object_mut().ok_or("input is not an object")?;
    object.remove("dpop");
    let headers = object.entry("headers").or_insert_with(|| json!([]));
    headers
        .as_array_mut()
        .ok_or("headers is not a list")?
        .push(json!(["DPoP", proof]));
    Ok(out)
}

/// A `text` of the schema as bytes.
fn text_bytes(text: &Value) -> Result<Vec<u8>, String> {
    match text {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        Value::Object(o) => decode_hex(o.get("hex").and_then(Value::as_str).ok_or("bad text")?),
        Value::Array(parts) => {
            let mut out = Vec::new();
            for part in parts {
                match part {
                    Value::String(s) => out.extend_from_slice(s.as_bytes()),
                    _ => {
                        let unit = string(part, "repeat")?;
                        let count = field(part, "count")?.as_u64().ok_or("bad count")?;
                        out.extend(unit.repeat(usize::try_from(count).unwrap_or(0)).bytes());
                    }
                }
            }
            Ok(out)
        }
        _ => Err("bad text".into()),
    }
}

fn text_string(text: Option<&Value>) -> Result<String, String> {
    match text {
        None => Ok(String::new()),
        Some(t) => Ok(String::from_utf8_lossy(&text_bytes(t)?).into_owned()),
    }
}

/// `value` with every `${name}` in its strings replaced by a captured value.
fn substitute(value: &Value, captures: &BTreeMap<String, String>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(start) = rest.find("${") {
                let end = rest[start..]
                    .find('}')
                    .map(|e| start + e)
                    .ok_or_else(|| format!("unclosed ${{ in {s:?}"))?;
                let name = &rest[start + 2..end];
                let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                out.push_str(&rest[..start]);
                if valid {
                    let captured = captures
                        .get(name)
                        .ok_or_else(|| format!("${{{name}}} is used before a step captured it"))?;
                    out.push_str(captured);
                } else {
                    out.push_str(&rest[start..=end]);
                }
                rest = &rest[end + 1..];
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, captures))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, captures)?)))
                .collect::<Result<Map<_, _>, String>>()?,
        ),
        other => other.clone(),
    })
}

/// What a layer shows of one step, in the shape `lib.mjs` builds from HTTP.
#[derive(Debug, Default)]
struct Observation {
    status: Option<u16>,
    headers: Vec<(String, String)>,
    json: Option<Value>,
    redirect: Option<Redirect>,
    page: Option<Value>,
    outcome: Option<String>,
    audit: Vec<Value>,
}

#[derive(Debug)]
struct Redirect {
    target: String,
    query: Vec<(String, String)>,
    fragment: Vec<(String, String)>,
}

impl Observation {
    fn header(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }

    fn as_json(&self) -> Value {
        json!({
            "status": self.status,
            "headers": self.headers,
            "json": self.json,
            "redirect": self.redirect.as_ref().map(|r| json!({"target": r.target, "query": r.query, "fragment": r.fragment})),
            "page": self.page,
            "outcome": self.outcome,
            "audit": self.audit,
        })
    }
}

fn redirect_of(location: &str) -> Redirect {
    let (before_hash, fragment) = location.split_once('#').unwrap_or((location, ""));
    let (target, query) = before_hash.split_once('?').unwrap_or((before_hash, ""));
    let pairs = |s: &str| -> Vec<(String, String)> {
        form_urlencoded::parse(s.as_bytes()).into_owned().collect()
    };
    Redirect {
        target: target.to_owned(),
        query: pairs(query),
        fragment: pairs(fragment),
    }
}

/// The attributes of the page's `data-page` element, as `lib.mjs`'s `pageOf` reads them.
fn page_of(html: &str) -> Option<Value> {
    let tag_pattern =
        regex::Regex::new(r#"<[a-z][a-z0-9]*\s[^>]*\bdata-page="[^"]*"[^>]*>"#).ok()?;
    let attribute = regex::Regex::new(r#"\bdata-([a-z-]+)="([^"]*)""#).ok()?;
    let tag = tag_pattern.find(html)?.as_str();
    let mut page = Map::new();
    for found in attribute.captures_iter(tag) {
        let (name, value) = (&found[1], unescape_html(&found[2]));
        match name {
            "page" => {
                page.insert("kind".into(), json!(value));
            }
            "scopes" | "resources" => {
                let list: Vec<&str> = value.split(' ').filter(|s| !s.is_empty()).collect();
                page.insert(name.into(), json!(list));
            }
            "app" | "code" | "error" => {
                page.insert(name.into(), json!(value));
            }
            "access-type" => {
                page.insert("access_type".into(), json!(value));
            }
            "client-host" => {
                page.insert("client_host".into(), json!(value));
            }
            "unverified" => {
                page.insert("unverified".into(), json!(value));
            }
            _ => {}
        }
    }
    Some(Value::Object(page))
}

fn unescape_html(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The observation of an HTTP response, as `lib.mjs`'s `observeHttp` builds it.
fn observe_response(response: &HttpResponse) -> Observation {
    let headers: Vec<(String, String)> = response
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .collect();
    let content_type = headers
        .iter()
        .find(|(n, _)| n == "content-type")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let location = headers
        .iter()
        .find(|(n, _)| n == "location")
        .map(|(_, v)| v.clone());
    Observation {
        status: Some(response.status),
        json: if content_type.starts_with("application/json") {
            serde_json::from_str(&response.body).ok()
        } else {
            None
        },
        redirect: location
            .filter(|_| (300..400).contains(&response.status))
            .map(|l| redirect_of(&l)),
        page: if content_type.starts_with("text/html") {
            page_of(&response.body)
        } else {
            None
        },
        headers,
        ..Observation::default()
    }
}

/// The observation of an answer: its response, or what the host's account endpoint answers
/// for an authorized call (every other declared endpoint has no operation behind it: 404).
fn observe(answer: &Answer, path: &str) -> Observation {
    match answer {
        Answer::Reply(reply) if reply.outcome == Outcome::Unlinked => Observation {
            outcome: Some("unlinked".into()),
            ..Observation::default()
        },
        Answer::Reply(reply) => observe_response(&reply.response),
        // The host's answer carries the headers the core handed it, as every host sets them.
        Answer::Serve(Authorized { principal, headers }) if path == ACCOUNT_ENDPOINT => {
            let mut observed = vec![("content-type".into(), "application/json".into())];
            observed.extend(
                headers
                    .iter()
                    .map(|(n, v)| (n.to_ascii_lowercase(), v.clone())),
            );
            Observation {
                status: Some(200),
                headers: observed,
                // The hosts' echo: a person's account, or the app acting for itself.
                json: Some(match &principal.subject {
                    Subject::Account(account) => json!({"account_id": account.as_str()}),
                    Subject::Client => json!({"client_id": principal.app.as_str()}),
                }),
                ..Observation::default()
            }
        }
        Answer::Serve(Authorized { headers, .. }) => Observation {
            status: Some(404),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
                .collect(),
            ..Observation::default()
        },
    }
}

/// A fresh server for one vector: its configuration, its users, an empty store.
struct Server<'v> {
    config: Arc<Config>,
    users: &'v [(String, User)],
    store: Store,
}

impl Server<'_> {
    fn user(&self, name: &str) -> Result<User, String> {
        self.users
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, u)| u.clone())
            .ok_or_else(|| format!("no user named {name} in the setup"))
    }

    /// Runs one input to its answer (one attempt, as the JavaScript runners), collecting audit.
    fn run(
        &mut self,
        input: Input,
        now: u64,
        entropy: &Entropy,
        audit: &mut Vec<Value>,
    ) -> Result<Answer, String> {
        let mut request = Request::new(
            &self.config,
            input,
            edgegrant::UnixTime(now),
            entropy.clone(),
        );
        loop {
            match request.step(&mut self.store) {
                Err(misuse) => return Err(format!("host misuse: {misuse}")),
                Ok(Progress::Committed { audit: events }) => {
                    for event in events {
                        audit.push(serde_json::to_value(&event).map_err(|e| e.to_string())?);
                    }
                }
                // The harness holds the request to the core's published bound (max_steps).
                Ok(Progress::Loaded(_)) => {}
                Ok(Progress::Fetched(url)) => {
                    if !self.store.web.contains_key(&url) {
                        return Err(format!(
                            "the core fetched {url}, which this step's web does not hold \
                             (a fetch where none was expected)"
                        ));
                    }
                }
                Ok(Progress::Conflicted(key)) => {
                    return Err(format!(
                        "a transaction conflicted on {:?} (entropy reused?)",
                        key.0
                    ))
                }
                Ok(Progress::Done {
                    answer,
                    audit: events,
                    ..
                }) => {
                    for event in events {
                        audit.push(serde_json::to_value(&event).map_err(|e| e.to_string())?);
                    }
                    return Ok(answer);
                }
            }
        }
    }

    /// One step's input, observed.
    fn step(&mut self, now: u64, entropy: &Entropy, input: &Value) -> Result<Observation, String> {
        let mut audit = Vec::new();
        let mut observation = match string(input, "kind")? {
            "http" => self.http(now, entropy, input, &mut audit)?,
            kind @ ("consent" | "deny") => {
                let decision = if kind == "consent" {
                    Decision::Allow
                } else {
                    Decision::Deny
                };
                let consent = Input::Http {
                    request: consent_form(string(input, "query")?, decision),
                    user: Some(self.user(string(input, "user")?)?),
                };
                observe(&self.run(consent, now, entropy, &mut audit)?, "")
            }
            "unlink" => {
                let by = match string(input, "by")? {
                    "user" => Unlinker::User,
                    _ => Unlinker::TeamAdmin,
                };
                let unlink = Input::Unlink {
                    app: AppKey::new(string(input, "app")?).map_err(|e| e.to_string())?,
                    account_id: self.user(string(input, "user")?)?.account_id,
                    by,
                };
                observe(&self.run(unlink, now, entropy, &mut audit)?, "")
            }
            "migrate_app" => {
                self.config = Arc::new(
                    self.config
                        .with_app_migrated(string(input, "app")?)
                        .map_err(|e| e.to_string())?,
                );
                Observation {
                    outcome: Some("migrated".into()),
                    ..Observation::default()
                }
            }
            other => return Err(format!("unknown input kind {other}")),
        };
        observation.audit = audit;
        Ok(observation)
    }

    /// An HTTP input, as the core routes it.
    fn http(
        &mut self,
        now: u64,
        entropy: &Entropy,
        input: &Value,
        audit: &mut Vec<Value>,
    ) -> Result<Observation, String> {
        let path = string(input, "path")?.to_owned();
        let mut request = HttpRequest::new(
            string(input, "method")?,
            &path,
            &text_string(input.get("query"))?,
        );
        for pair in input
            .get("headers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = pair
                .get(0)
                .and_then(Value::as_str)
                .ok_or("bad header name")?;
            request
                .headers
                .push((name.to_owned(), text_string(pair.get(1))?));
        }
        if let Some(text) = input.get("body") {
            request.body = text_bytes(text)?;
        }
        let user = match input.get("user").and_then(Value::as_str) {
            Some(name) => Some(self.user(name)?),
            None => None,
        };
        let answer = self.run(Input::Http { request, user }, now, entropy, audit)?;
        Ok(observe(&answer, &path))
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or("(absent)".into(), Value::to_string)
}

/// Whether `actual` matches `expected` (the schema's `matcher`); mismatches go to `problems`.
fn matches(expected: &Value, actual: Option<&Value>, path: &str, problems: &mut Vec<String>) {
    if let Value::Object(map) = expected {
        if let (1, Some((op, arg))) = (map.len(), map.iter().next()) {
            if op.starts_with('$') {
                let ok = match op.as_str() {
                    "$absent" => actual.is_none(),
                    "$present" => actual.is_some(),
                    "$re" => match (actual.and_then(Value::as_str), arg.as_str()) {
                        (Some(text), Some(pattern)) => {
                            regex::Regex::new(pattern).is_ok_and(|re| re.is_match(text))
                        }
                        _ => false,
                    },
                    "$ne" => actual.is_some_and(|a| a != arg),
                    "$type" => actual.is_some_and(|a| Some(type_name(a)) == arg.as_str()),
                    _ => false,
                };
                if !ok {
                    problems.push(format!("{path}: expected {op} {arg}, got {}", show(actual)));
                }
                return;
            }
        }
        let Some(Value::Object(actual)) = actual else {
            problems.push(format!("{path}: expected an object, got {}", show(actual)));
            return;
        };
        for (key, value) in map {
            matches(value, actual.get(key), &format!("{path}.{key}"), problems);
        }
    } else if let Value::Array(items) = expected {
        match actual {
            Some(Value::Array(got)) if got.len() == items.len() => {
                for (i, (e, a)) in items.iter().zip(got).enumerate() {
                    matches(e, Some(a), &format!("{path}[{i}]"), problems);
                }
            }
            _ => problems.push(format!("{path}: expected {expected}, got {}", show(actual))),
        }
    } else if actual != Some(expected) {
        problems.push(format!("{path}: expected {expected}, got {}", show(actual)));
    }
}

fn first_values(pairs: &[(String, String)]) -> Value {
    let mut object = Map::new();
    for (k, v) in pairs {
        object
            .entry(k.clone())
            .or_insert_with(|| Value::String(v.clone()));
    }
    Value::Object(object)
}

fn same_keys(expected: &Value, actual: Vec<String>) -> bool {
    let mut expected: Vec<String> = expected
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    let mut actual = actual;
    expected.sort();
    actual.sort();
    expected == actual
}

/// Every way `observation` differs from `expect`.
fn check(expect: &Value, observation: &Observation) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(status) = expect.get("status") {
        if status.as_u64() != observation.status.map(u64::from) {
            problems.push(format!(
                "status: expected {status}, got {:?}",
                observation.status
            ));
        }
    }
    for (name, expected) in expect
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let actual = observation.header(name).map(Value::String);
        matches(
            expected,
            actual.as_ref(),
            &format!("headers.{name}"),
            &mut problems,
        );
    }
    if let Some(expected) = expect.get("json") {
        matches(expected, observation.json.as_ref(), "json", &mut problems);
    }
    if let Some(keys) = expect.get("json_keys") {
        let actual: Vec<String> = observation
            .json
            .as_ref()
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        if !same_keys(keys, actual.clone()) {
            problems.push(format!("json keys: expected {keys}, got {actual:?}"));
        }
    }
    if let Some(expected) = expect.get("redirect") {
        match &observation.redirect {
            None => problems.push("redirect: expected a redirect, got none".into()),
            Some(redirect) => {
                if let Some(target) = expected.get("target") {
                    let actual = Value::String(redirect.target.clone());
                    matches(target, Some(&actual), "redirect.target", &mut problems);
                }
                for (part, pairs) in [("query", &redirect.query), ("fragment", &redirect.fragment)]
                {
                    if let Some(e) = expected.get(part) {
                        matches(
                            e,
                            Some(&first_values(pairs)),
                            &format!("redirect.{part}"),
                            &mut problems,
                        );
                    }
                    if let Some(keys) = expected.get(format!("{part}_keys").as_str()) {
                        let actual: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
                        if !same_keys(keys, actual.clone()) {
                            problems.push(format!(
                                "redirect.{part} keys: expected {keys}, got {actual:?}"
                            ));
                        }
                    }
                }
            }
        }
    }
    if let Some(expected) = expect.get("page") {
        matches(expected, observation.page.as_ref(), "page", &mut problems);
    }
    if let Some(expected) = expect.get("outcome") {
        if expected.as_str() != observation.outcome.as_deref() {
            problems.push(format!(
                "outcome: expected {expected}, got {:?}",
                observation.outcome
            ));
        }
    }
    let audit = Value::Array(observation.audit.clone());
    let expected_audit = expect.get("audit").cloned().unwrap_or(json!([]));
    matches(&expected_audit, Some(&audit), "audit", &mut problems);
    problems
}

/// The value at a capture path.
fn capture(observation: &Observation, path: &str) -> Result<String, String> {
    let mut parts = path.split('.');
    let head = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    let value: Option<Value> = match (head, rest.as_slice()) {
        ("status", []) => observation.status.map(|s| json!(s)),
        ("headers", [name]) => observation.header(name).map(Value::String),
        ("json", keys) => {
            let mut value = observation.json.as_ref();
            for key in keys {
                value = value.and_then(|v| v.get(key));
            }
            value.cloned()
        }
        ("redirect", ["target"]) => observation.redirect.as_ref().map(|r| json!(r.target)),
        ("redirect", [part @ ("query" | "fragment"), name]) => {
            observation.redirect.as_ref().and_then(|r| {
                let pairs = if *part == "query" {
                    &r.query
                } else {
                    &r.fragment
                };
                first_values(pairs).get(*name).cloned()
            })
        }
        ("page", [name]) => observation
            .page
            .as_ref()
            .and_then(|p| p.get(*name).cloned()),
        _ => None,
    };
    match value {
        Some(Value::String(s)) => Ok(s),
        Some(Value::Number(n)) => Ok(n.to_string()),
        other => Err(format!(
            "capture {path}: nothing there ({})",
            show(other.as_ref())
        )),
    }
}

/// A step's `web`: what the host's fetch gets for each URL — `{status, cache_control, body}`
/// or `{fails: "timeout"}` (a [`FetchFailure`] name).
fn web(raw: Option<&Value>) -> Result<crate::web::Web, String> {
    let mut web = std::collections::HashMap::new();
    for (url, answer) in raw.and_then(Value::as_object).into_iter().flatten() {
        let answer = match answer.get("fails").and_then(Value::as_str) {
            Some(name) => {
                Err(FetchFailure::from_name(name).ok_or(format!("web {url}: no failure {name}"))?)
            }
            None => Ok(Fetched {
                status: field(answer, "status")?
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok())
                    .ok_or(format!("web {url}: status is not a status"))?,
                cache_control: answer
                    .get("cache_control")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                body: match answer.get("body") {
                    Some(body) => text_bytes(body)?,
                    None => Vec::new(),
                },
            }),
        };
        web.insert(url.clone(), answer);
    }
    Ok(web)
}

/// Runs one vector; `Err` says at which step and how it differed.
pub fn run_vector(vector: &Vector) -> Result<(), String> {
    let mut server = Server {
        config: Arc::new(vector.config.clone()),
        users: &vector.users,
        store: Store::default(),
    };
    let mut captures = BTreeMap::new();
    for (index, raw) in vector.steps.iter().enumerate() {
        let mut step = substitute(raw, &captures)?;
        let at = field(&step, "at")?.as_u64().ok_or("at is not a time")?;
        if let Some(input) = step.get_mut("input") {
            if input.get("dpop").is_some() {
                *input = with_proof(input, at)?;
            }
        }
        let entropy = entropy(string(&step, "entropy")?)?;
        server.store.web = web(step.get("web"))?;
        let observation = server.step(at, &entropy, field(&step, "input")?)?;
        let problems = check(field(&step, "expect")?, &observation);
        if !problems.is_empty() {
            let note = step
                .get("note")
                .and_then(Value::as_str)
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            return Err(format!(
                "{}, step {}{note}:\n  {}\nobserved: {}",
                vector.id,
                index + 1,
                problems.join("\n  "),
                observation.as_json()
            ));
        }
        for (name, path) in step
            .get("capture")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let path = path.as_str().ok_or("capture path is not a string")?;
            captures.insert(name.clone(), capture(&observation, path)?);
        }
    }
    Ok(())
}
