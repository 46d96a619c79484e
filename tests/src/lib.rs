//! Simulation harness for `edgegrant`: an in-memory store that applies transactions
//! all-or-nothing, hosts that run the step loop one step at a time (so two can interleave), a
//! hand-moved clock, deterministic entropy, and the fixtures the tests share.
//!
//! ```
//! use edgegrant_tests::*;
//! let mut sim = Sim::new(fixture_config());
//! let code = sim.code_for(&pkce_offline_query("xyz"), &alice());
//! let tokens = sim.exchange_pkce(&code, VERIFIER);
//! assert_eq!(tokens.status, 200);
//! ```

use std::collections::HashMap;
use std::sync::Arc;

pub mod bench_host;
pub mod conformance;
pub mod explorer;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use edgegrant::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Why a transaction did not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict(pub RecordKey);

/// An in-memory store with versioned records and atomic conditional transactions: a hash map,
/// as a lean host keeps one (the order of [`Store::iter`] is unspecified).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Store {
    records: HashMap<RecordKey, Stored>,
    /// The purge time of each record that has one.
    purge_after: HashMap<RecordKey, UnixTime>,
    /// The web, as the host's guarded fetch sees it: what a [`Step::Fetch`] of each URL gets
    /// (a URL not here is unreachable). Not records, but the other world outside the core.
    pub web: web::Web,
}

impl Store {
    /// What the host's fetch reports for `fetch`: the web's answer, held to the fetch's size
    /// limit as the package's fetch is.
    pub fn fetch(&self, fetch: &Fetch) -> Event {
        web::answer(&self.web, fetch)
    }

    /// What is stored under `key`.
    pub fn get(&self, key: &RecordKey) -> Option<&Stored> {
        self.records.get(key)
    }

    /// The record stored under `key`, decoded.
    pub fn record(&self, key: &RecordKey) -> Option<Record> {
        self.records.get(key).and_then(|s| s.record().ok())
    }

    /// Every stored record.
    pub fn iter(&self) -> impl Iterator<Item = (&RecordKey, &Stored)> {
        self.records.iter()
    }

    /// Makes room for `additional` more records, so that inserting them does not grow the map.
    pub fn reserve(&mut self, additional: usize) {
        self.records.reserve(additional);
    }

    /// How many records are stored.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Puts a record as it is, with no condition and its own version: a hand-made or corrupted
    /// store, for the fuzz targets and the regression tests drawn from them.
    pub fn put_raw(&mut self, key: RecordKey, version: u64, record: &Record) {
        self.put_bytes(key, version, record.encode());
    }

    /// Puts `bytes` under `key` as they are, with no condition and their own version: a record
    /// as an older release wrote it, or damaged.
    pub fn put_bytes(&mut self, key: RecordKey, version: u64, bytes: Vec<u8>) {
        self.records.insert(key, Stored { version, bytes });
    }

    /// Deletes the record under `key`, as a host's purge does once its purge time has come.
    pub fn remove(&mut self, key: &RecordKey) -> Option<Stored> {
        self.purge_after.remove(key);
        self.records.remove(key)
    }

    /// When the record under `key` may be purged, if ever.
    pub fn purge_after(&self, key: &RecordKey) -> Option<UnixTime> {
        self.purge_after.get(key).copied()
    }

    /// Deletes every record whose purge time has come (`purge_after <= now`), as a host's
    /// periodic purge does; returns how many.
    pub fn purge(&mut self, now: UnixTime) -> usize {
        let due: Vec<RecordKey> = self
            .purge_after
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &due {
            self.records.remove(key);
            self.purge_after.remove(key);
        }
        due.len()
    }

    /// What it holds under each of `keys`, as the core takes it.
    pub fn read(&self, keys: Vec<RecordKey>) -> Event {
        Event::Read(
            keys.into_iter()
                .map(|key| {
                    let found = self.get(&key).cloned();
                    (key, found)
                })
                .collect(),
        )
    }

    /// Applies `transaction` if every condition holds, else nothing (the conflicting key).
    pub fn apply(&mut self, transaction: &Transaction) -> Result<(), Conflict> {
        for put in &transaction.puts {
            let current = self.records.get(&put.key).map(|v| v.version);
            let holds = match put.expect {
                Expect::Absent => current.is_none(),
                Expect::Version(v) => current == Some(v),
            };
            if !holds {
                return Err(Conflict(put.key.clone()));
            }
        }
        for put in &transaction.puts {
            let version = self.records.get(&put.key).map_or(1, |v| v.version + 1);
            self.records.insert(
                put.key.clone(),
                Stored {
                    version,
                    bytes: put.bytes.clone(),
                },
            );
            match put.purge_after {
                Some(at) => self.purge_after.insert(put.key.clone(), at),
                None => self.purge_after.remove(&put.key),
            };
        }
        Ok(())
    }
}

/// How a request ended, as its host sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Send this reply.
    Reply(Reply),
    /// Serve the API call for this principal, with these headers.
    Serve(Authorized),
}

impl Answer {
    /// The reply (panics on an authorized API call, which has none).
    pub fn reply(&self) -> &Reply {
        match self {
            Answer::Reply(reply) => reply,
            Answer::Serve(authorized) => {
                panic!("expected a reply, got an authorized call for {authorized:?}")
            }
        }
    }

    /// What happened.
    pub fn outcome(&self) -> &Outcome {
        &self.reply().outcome
    }

    /// The response to send.
    pub fn response(&self) -> &HttpResponse {
        &self.reply().response
    }

    /// Why the request was refused, if it was.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Answer::Reply(reply) => reply.refusal(),
            Answer::Serve(_) => None,
        }
    }
}

/// What one step of a host did.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// It loaded records (the request goes on).
    Loaded(Vec<RecordKey>),
    /// It fetched a client's metadata document from the store's web (the request goes on).
    Fetched(String),
    /// Its transaction lost a race; it starts over with fresh records.
    Conflicted(Conflict),
    /// Its transaction applied, and the request goes on to read again (an unlink's sweep):
    /// a point where other requests see what it wrote.
    Committed {
        /// The audit events of the applied transaction.
        audit: Vec<AuditEvent>,
    },
    /// It finished, after committing if `committed`.
    Done {
        /// How it ended.
        answer: Answer,
        /// Whether a transaction that changed protocol records (not only failure counts) was
        /// applied.
        committed: bool,
        /// The audit events of the transactions applied since the request last yielded
        /// ([`Progress::Committed`]; [`Request::run`] gathers them all).
        audit: Vec<AuditEvent>,
    },
}

/// One request in flight on one host, advanced a step at a time: a batched read or an atomic
/// commit per step.
#[derive(Debug, Clone)]
pub struct Request {
    request: edgegrant::Request,
    /// The step the core gave last, to act on next.
    next: Step,
    committed: Option<Vec<AuditEvent>>,
    /// The reads and writes the core asked for, against [`edgegrant::Request::max_steps`].
    asked: u32,
    max_steps: u32,
    /// How many steps were taken.
    pub steps: usize,
    /// How many batched reads were made.
    pub reads: usize,
    /// How many conflicts were met.
    pub conflicts: usize,
}

impl Request {
    /// A request starting now with this entropy.
    ///
    /// Every request of every test checks the partition contract — the core's routing answer
    /// ([`partition_of`]) is the request's partition, every record it touches but failure
    /// counts lies there, and every transaction lies in one partition — and the published
    /// bound: it asks for no more than [`edgegrant::Request::max_steps`] reads and writes.
    pub fn new(config: &Arc<Config>, input: Input, now: UnixTime, entropy: Entropy) -> Self {
        let routed = partition_of(config, &input);
        let (request, next) = edgegrant::Request::start(config.clone(), input, now, entropy);
        if let Some(partition) = request.partition() {
            assert_eq!(
                routed,
                Some(partition),
                "the routing answer is the request's partition"
            );
        }
        let mut request = Request {
            request,
            next,
            committed: None,
            asked: 0,
            max_steps: edgegrant::Request::max_steps(config),
            steps: 0,
            reads: 0,
            conflicts: 0,
        };
        request.count_asked();
        request
    }

    /// Reports `event` and keeps the step it gets back.
    fn advance(&mut self, event: Event) -> Result<(), Misuse> {
        self.next = self.request.advance(event)?;
        self.count_asked();
        Ok(())
    }

    fn count_asked(&mut self) {
        if matches!(self.next, Step::Read(_) | Step::Write(_)) {
            self.asked += 1;
            assert!(
                self.asked <= self.max_steps,
                "the request asked for more than max_steps ({}) reads and writes",
                self.max_steps
            );
        }
    }

    /// One step: the batched read or the atomic commit the request asks for, or its answer.
    pub fn step(&mut self, store: &mut Store) -> Result<Progress, Misuse> {
        self.steps += 1;
        let partition = self.request.partition();
        match &self.next {
            Step::Read(keys) => {
                let keys = keys.clone();
                for key in &keys {
                    check_partition(partition, key);
                }
                self.reads += 1;
                self.advance(store.read(keys.clone()))?;
                Ok(Progress::Loaded(keys))
            }
            Step::Write(transaction) => match store.apply(checked(partition, transaction)) {
                Ok(()) => {
                    // Every applied transaction's events (an unlink writes its sweep after
                    // the transaction that carries its event; a failed fetch's count carries
                    // the fetch's).
                    let audit = transaction.audit.clone();
                    self.committed.get_or_insert_with(Vec::new).extend(audit);
                    self.advance(Event::Committed)?;
                    self.steps -= 1;
                    if matches!(self.next, Step::Read(_)) {
                        let audit = self.committed.take().unwrap_or_default();
                        return Ok(Progress::Committed { audit });
                    }
                    self.step(store)
                }
                Err(conflict) => {
                    self.conflicts += 1;
                    self.advance(Event::Conflicted)?;
                    Ok(Progress::Conflicted(conflict))
                }
            },
            Step::Fetch(fetch) => {
                let url = fetch.url.clone();
                self.advance(store.fetch(fetch))?;
                Ok(Progress::Fetched(url))
            }
            // A signature is the host's to verify, with real cryptography (RustCrypto here).
            Step::Verify(verify) => {
                self.advance(Event::Verified(verify_signature(verify)))?;
                Ok(Progress::Loaded(Vec::new()))
            }
            Step::Respond(reply) => Ok(done(Answer::Reply(reply.clone()), &self.committed)),
            Step::Serve(principal) => Ok(done(Answer::Serve(principal.clone()), &self.committed)),
        }
    }

    /// The store failed on the pending read or write: reports it, and gives the answer.
    pub fn unavailable(&mut self) -> Result<Answer, Misuse> {
        self.advance(Event::Unavailable)?;
        match &self.next {
            Step::Respond(reply) => Ok(Answer::Reply(reply.clone())),
            Step::Serve(authorized) => Ok(Answer::Serve(authorized.clone())),
            other => panic!("an unavailable store ends the request, not {other:?}"),
        }
    }

    /// The step the core gave last.
    pub fn next(&self) -> &Step {
        &self.next
    }

    /// Reports `event` as it is (a test of the contract's misuse checks).
    pub fn report(&mut self, event: Event) -> Result<&Step, Misuse> {
        self.advance(event)?;
        Ok(&self.next)
    }

    /// Steps until done, with the audit events of every transaction it applied. Panics after
    /// `limit` reads: a request that does not finish is a bug of the core, not a misuse by
    /// the host. (An unlink's sweep pages do not count: each is bounded, and they are as many
    /// as the user held grants.)
    pub fn run(&mut self, store: &mut Store, limit: usize) -> Result<Progress, Misuse> {
        let mut earlier: Option<Vec<AuditEvent>> = None;
        let mut reads = 0;
        while reads < limit {
            match self.step(store)? {
                Progress::Committed { audit } => {
                    earlier.get_or_insert_with(Vec::new).extend(audit);
                    reads = 0;
                }
                Progress::Done {
                    answer,
                    committed,
                    audit,
                } => {
                    let committed = committed || earlier.is_some();
                    let mut all = earlier.unwrap_or_default();
                    all.extend(audit);
                    return Ok(Progress::Done {
                        answer,
                        committed,
                        audit: all,
                    });
                }
                _ => reads += 1,
            }
        }
        panic!("the request did not finish within {limit} steps")
    }
}

/// A transaction lies in one partition: the request's, or a failure count's own.
fn checked(partition: Option<Partition>, transaction: &Transaction) -> &Transaction {
    for put in &transaction.puts {
        assert_eq!(
            Some(put.key.partition()),
            transaction.partition(),
            "a transaction crosses partitions: {transaction:?}"
        );
        check_partition(partition, &put.key);
    }
    transaction
}

/// A record a request touches lies in its partition (failure counts, stored apps, used
/// assertions and providers' key sets in their own).
fn check_partition(partition: Option<Partition>, key: &RecordKey) {
    if !matches!(
        key,
        RecordKey::Attempts(_)
            | RecordKey::App(..)
            | RecordKey::Assertion(_)
            | RecordKey::ProviderKeys(_)
    ) {
        assert_eq!(
            Some(key.partition()),
            partition,
            "{key} is outside the request's partition"
        );
    }
}

fn done(answer: Answer, committed: &Option<Vec<AuditEvent>>) -> Progress {
    // The committed transactions' events, then the answer's own (a defect's).
    let mut audit = committed.clone().unwrap_or_default();
    if let Answer::Reply(reply) = &answer {
        audit.extend(reply.audit.iter().cloned());
    }
    Progress::Done {
        answer,
        committed: committed.is_some(),
        audit,
    }
}

/// Prints a test's summary line (a corpus's counts, a search's schedules) and, when the test
/// command asked for them (`EDGEGRANT_TEST_REPORT` names a file), appends it there: cargo
/// shows a passing test's output only under `--nocapture`, and running the long tests twice to
/// see it cost a minute.
pub fn report(line: &str) {
    println!("{line}");
    if let Some(path) = std::env::var_os("EDGEGRANT_TEST_REPORT") {
        use std::io::Write as _;
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| writeln!(file, "{line}"));
        if let Err(error) = appended {
            panic!("cannot append to the test report {path:?}: {error}");
        }
    }
}

/// Whether `verify`'s signature holds, as a host answers [`Step::Verify`]: the native host's
/// own code (RustCrypto), the one source of both.
pub fn verify_signature(verify: &Verify) -> bool {
    signatures::holds(verify)
}

#[path = "../../examples/native/src/signatures.rs"]
mod signatures;

/// The web of client metadata documents as a table: the native host's test mode's own code.
#[path = "../../examples/native/src/web.rs"]
pub mod web;

/// A grant's, access token's or refresh token's bytes as a release before record format 11
/// laid them out (the current format's number kept): the account id where the subject's variant
/// now precedes it, a grant's uid without its option's tag, an access token without format
/// 12's exchanging client and acting flag, and a grant or an access token without format 13's key
/// binding and format 14's props. Every such record was a
/// person's. For the tests of older formats, which set the format byte themselves.
pub fn before_format_11(record: &Record) -> Vec<u8> {
    let mut bytes = record.encode();
    // One-byte lengths: ids shorter than 128 bytes, as the fixtures' are.
    let text = |t: &str| {
        assert!(t.len() < 128, "{t}: a longer id than this helper reads");
        1 + t.len()
    };
    let person = |subject: &Subject| match subject {
        Subject::Account(account) => account.clone(),
        Subject::Client => panic!("no release before format 11 wrote an app's own grant"),
    };
    match record {
        Record::AccessToken(r) => {
            person(&r.subject);
            assert!(
                r.exchanged_by.is_none() && !r.acting,
                "no exchange before format 12"
            );
            assert!(r.bound_to.is_none(), "no key binding before format 13");
            assert!(r.props.is_none(), "no props before format 14");
            // Format 12's, 13's and 14's last fields: no exchanging client, not acting, no key,
            // no props.
            assert_eq!(bytes.split_off(bytes.len() - 4), [0, 0, 0, 0]);
            let at = 2 + text(r.grant.as_str()) + text(r.app.as_str());
            assert_eq!(bytes.remove(at), 0, "a person's subject");
        }
        Record::RefreshToken(r) => {
            person(&r.subject);
            let at = 2 + text(r.grant.as_str()) + text(r.app.as_str());
            assert_eq!(bytes.remove(at), 0, "a person's subject");
        }
        Record::Grant(r) => {
            let account = person(&r.subject);
            assert!(
                r.refresh_bound_to.is_none(),
                "no key binding before format 13"
            );
            assert!(r.props.is_none(), "no props before format 14");
            assert_eq!(bytes.pop(), Some(0), "format 14's props: none");
            assert_eq!(bytes.pop(), Some(0), "format 13's key binding: none");
            let at = 2 + text(r.app.as_str());
            assert_eq!(bytes.remove(at), 0, "a person's subject");
            assert_eq!(
                bytes.remove(at + text(account.as_str())),
                1,
                "the uid, some"
            );
        }
        _ => {}
    }
    bytes
}

/// Deterministic entropy: SHA-256 in counter mode over a seed.
pub fn entropy(seed: u64) -> Entropy {
    let mut bytes = [0u8; ENTROPY_LEN];
    for (block, chunk) in bytes.chunks_mut(32).enumerate() {
        let digest = Sha256::new()
            .chain_update(seed.to_be_bytes())
            .chain_update((block as u64).to_be_bytes())
            .finalize();
        let n = chunk.len();
        chunk.copy_from_slice(digest.get(..n).unwrap_or_default());
    }
    Entropy::new(bytes)
}

/// A whole deployment on one store: one host at a time, a hand-moved clock, an audit log.
pub struct Sim {
    /// The configuration every request gets.
    pub config: Arc<Config>,
    /// The shared store.
    pub store: Store,
    /// The clock; tests move it by hand.
    pub now: UnixTime,
    /// Every audit event of every applied transaction, in order.
    pub audit: Vec<AuditEvent>,
    seed: u64,
}

/// 2023-11-14T22:13:20Z: a "now" after the long-lived cutoff.
pub const T0: UnixTime = UnixTime(1_700_000_000);

impl Sim {
    /// A deployment at [`T0`] with an empty store.
    pub fn new(config: Config) -> Self {
        Sim {
            config: Arc::new(config),
            store: Store::default(),
            now: T0,
            audit: Vec::new(),
            seed: 0,
        }
    }

    /// Replaces the configuration (an app console's change).
    pub fn reconfigure(&mut self, config: Config) {
        self.config = Arc::new(config);
    }

    /// Moves the clock by `seconds`.
    pub fn advance(&mut self, seconds: u64) {
        self.now = UnixTime(self.now.0 + seconds);
    }

    /// Fresh deterministic entropy for the next request.
    pub fn next_entropy(&mut self) -> Entropy {
        self.seed += 1;
        entropy(self.seed)
    }

    /// Runs `input` to its answer, retrying on conflict.
    pub fn run(&mut self, input: Input) -> Answer {
        let entropy = self.next_entropy();
        let mut request = Request::new(&self.config, input, self.now, entropy);
        match request.run(&mut self.store, 32) {
            Ok(Progress::Done { answer, audit, .. }) => {
                self.audit.extend(audit);
                answer
            }
            other => panic!("request did not finish: {other:?}"),
        }
    }

    /// An HTTP request, with the signed-in `user` if any.
    pub fn http(&mut self, request: HttpRequest, user: Option<&User>) -> Answer {
        self.run(Input::Http {
            request,
            user: user.cloned(),
        })
    }

    /// `GET /oauth2/authorize?query` for a signed-in `user` (or none).
    pub fn authorize(&mut self, query: &str, user: Option<&User>) -> Answer {
        self.http(HttpRequest::new("GET", "/oauth2/authorize", query), user)
    }

    /// The user's decision on the consent page for `query`: the page's form, posted from this
    /// origin.
    pub fn consent(&mut self, query: &str, user: &User, decision: Decision) -> Answer {
        self.http(consent_form(query, decision), Some(user))
    }

    /// Consents to `query` and returns the code from the redirect or the code display.
    pub fn code_for(&mut self, query: &str, user: &User) -> String {
        match self.consent(query, user, Decision::Allow).outcome() {
            Outcome::Redirect(location) => {
                redirect_param(location, "code").unwrap_or_else(|| panic!("no code in {location}"))
            }
            Outcome::DisplayCode { code, .. } => code.expose().to_owned(),
            other => panic!("expected a code, got {other:?}"),
        }
    }

    /// `POST /oauth2/token` with a form body and optional Basic credentials.
    pub fn token(&mut self, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> HttpResponse {
        self.token_form_answer(form, basic).response().clone()
    }

    /// `POST /oauth2/token` with a form body and optional Basic credentials, answered.
    pub fn token_form_answer(
        &mut self,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Answer {
        self.post_form_answer("/oauth2/token", form, basic)
    }

    /// `POST path` with a form body and optional Basic credentials (the token endpoint and the
    /// endpoints sharing its client authentication: RFC 7009, RFC 7662).
    pub fn post_form(
        &mut self,
        path: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> HttpResponse {
        self.post_form_answer(path, form, basic).response().clone()
    }

    /// [`Sim::post_form`], answered.
    pub fn post_form_answer(
        &mut self,
        path: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Answer {
        let mut request = form_request(form);
        request.path = path.into();
        if let Some((id, secret)) = basic {
            request
                .headers
                .push(("Authorization".to_owned(), basic_header(id, secret)));
        }
        self.http(request, None)
    }

    /// RFC 7662 introspection of `token` by the confidential fixture app: the answer's JSON
    /// (which must be a 200, never cached).
    pub fn introspect(&mut self, token: &str) -> Value {
        let response = self.post_form(
            "/oauth2/introspect",
            &[("token", token)],
            Some((CONF_APP, CONF_SECRET)),
        );
        assert_eq!(response.status, 200, "{token:?}: {}", response.body);
        assert_eq!(response.header("Cache-Control"), Some("no-store"));
        serde_json::from_str(&response.body).expect("introspection answers JSON")
    }

    /// `POST /oauth2/token` with a hand-built request (its path is set here).
    pub fn token_request(&mut self, request: HttpRequest) -> HttpResponse {
        self.token_answer(request).response().clone()
    }

    /// `POST /oauth2/token`, answered.
    pub fn token_answer(&mut self, mut request: HttpRequest) -> Answer {
        request.path = "/oauth2/token".into();
        self.http(request, None)
    }

    /// Exchanges a PKCE code of the public fixture app.
    pub fn exchange_pkce(&mut self, code: &str, verifier: &str) -> HttpResponse {
        self.token(&pkce_exchange(code, verifier), None)
    }

    /// Exchanges a code of the confidential fixture app (secret in the body).
    pub fn exchange_confidential(&mut self, code: &str) -> HttpResponse {
        self.token(&conf_exchange(code), None)
    }

    /// Refreshes with `refresh_token` as `client_id` alone (PKCE) or with a secret.
    pub fn refresh(
        &mut self,
        refresh_token: &str,
        client_id: &str,
        secret: Option<&str>,
    ) -> HttpResponse {
        self.refresh_answer(refresh_token, client_id, secret)
            .response()
            .clone()
    }

    /// Refreshes as [`Sim::refresh`], answered.
    pub fn refresh_answer(
        &mut self,
        refresh_token: &str,
        client_id: &str,
        secret: Option<&str>,
    ) -> Answer {
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
        ];
        form.extend(secret.map(|s| ("client_secret", s)));
        self.token_form_answer(&form, None)
    }

    /// An API call to `endpoint` with `Authorization: Bearer <token>`.
    pub fn api(&mut self, endpoint: &str, token: &str) -> Answer {
        self.http(bearer_request(endpoint, token), None)
    }

    /// `POST /2/auth/token/revoke` with the bearer token.
    pub fn revoke(&mut self, token: &str) -> HttpResponse {
        self.revoke_answer(token).response().clone()
    }

    /// `POST /2/auth/token/revoke` with the bearer token, answered.
    pub fn revoke_answer(&mut self, token: &str) -> Answer {
        self.http(bearer_request(REVOKE, token), None)
    }

    /// The user or a team admin unlinks `app` for `user`.
    pub fn unlink(&mut self, app: &str, user: &User, by: Unlinker) -> Answer {
        self.run(Input::Unlink {
            app: AppKey::new(app).expect("fixture app key"),
            account_id: user.account_id.clone(),
            by,
        })
    }

    /// Signs `user` through the PKCE offline flow of the public app; returns the token response.
    pub fn pkce_offline_tokens(&mut self, user: &User) -> Value {
        let code = self.code_for(&pkce_offline_query("s"), user);
        json(&self.exchange_pkce(&code, VERIFIER))
    }
}

/// The user's answer on the consent page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allow.
    Allow,
    /// Deny.
    Deny,
}

/// The consent page's form for `query`, as a same-origin browser posts it.
pub fn consent_form(query: &str, decision: Decision) -> HttpRequest {
    let decision = match decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
    };
    let mut request = HttpRequest::new("POST", "/oauth2/authorize", "");
    request.headers = vec![
        (
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ),
        ("Sec-Fetch-Site".into(), "same-origin".into()),
    ];
    request.body = form_body(&[("query", query), ("decision", decision)]).into_bytes();
    request
}

/// The response of an answer that must be a reply.
pub fn http(answer: Answer) -> HttpResponse {
    answer.response().clone()
}

/// The JSON body of a response.
pub fn json(response: &HttpResponse) -> Value {
    serde_json::from_str(&response.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", response.body))
}

/// `error` of an RFC 6749 §5.2 error body.
pub fn oauth_error(response: &HttpResponse) -> String {
    json(response)["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// `.tag` of a `/2/` error body.
pub fn api_tag(response: &HttpResponse) -> String {
    json(response)["error"][".tag"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Form-encodes pairs.
pub fn form_body(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded_serializer();
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

fn form_urlencoded_serializer() -> FormSerializer {
    FormSerializer(String::new())
}

/// A minimal form encoder for tests (the WHATWG byte serializer).
pub struct FormSerializer(String);

impl FormSerializer {
    /// Appends `name=value`.
    pub fn append_pair(&mut self, name: &str, value: &str) {
        if !self.0.is_empty() {
            self.0.push('&');
        }
        self.0.push_str(&encode_component(name));
        self.0.push('=');
        self.0.push_str(&encode_component(value));
    }

    /// The encoded form.
    pub fn finish(self) -> String {
        self.0
    }
}

/// Percent-encodes one form component (space as `+`).
pub fn encode_component(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Decodes one form component.
pub fn decode_component(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(v) = hex {
                    out.push(v);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The parameters after `?` (or `#`, for a fragment) of a redirect location.
pub fn redirect_params(location: &str, separator: char) -> Vec<(String, String)> {
    let Some((_, tail)) = location.split_once(separator) else {
        return Vec::new();
    };
    let tail = if separator == '?' {
        tail.split('#').next().unwrap_or_default()
    } else {
        tail
    };
    tail.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode_component(k), decode_component(v))
        })
        .collect()
}

/// One query parameter of a redirect location.
pub fn redirect_param(location: &str, name: &str) -> Option<String> {
    redirect_params(location, '?')
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// One fragment parameter of a redirect location.
pub fn fragment_param(location: &str, name: &str) -> Option<String> {
    redirect_params(location, '#')
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
pub fn basic_header(id: &str, secret: &str) -> String {
    use base64::engine::general_purpose::STANDARD;
    format!(
        "Basic {}",
        STANDARD.encode(format!(
            "{}:{}",
            encode_component(id),
            encode_component(secret)
        ))
    )
}

/// The parameters of the public fixture app's PKCE code exchange.
pub fn pkce_exchange<'a>(code: &'a str, verifier: &'a str) -> [(&'static str, &'a str); 5] {
    [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("client_id", PKCE_APP),
        ("code_verifier", verifier),
        ("redirect_uri", PKCE_REDIRECT),
    ]
}

/// The parameters of the confidential fixture app's code exchange (secret in the body).
pub fn conf_exchange(code: &str) -> [(&'static str, &str); 5] {
    [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("client_id", CONF_APP),
        ("client_secret", CONF_SECRET),
        ("redirect_uri", CONF_REDIRECT),
    ]
}

/// A form-encoded POST to the token endpoint, as clients send it.
pub fn form_request(form: &[(&str, &str)]) -> HttpRequest {
    let mut request = HttpRequest::new("POST", "/oauth2/token", "");
    request.headers = vec![(
        "Content-Type".into(),
        "application/x-www-form-urlencoded".into(),
    )];
    request.body = form_body(form).into_bytes();
    request
}

/// A POST to `path` with `Authorization: Bearer <token>`.
pub fn bearer_request(path: &str, token: &str) -> HttpRequest {
    let mut request = HttpRequest::new("POST", path, "");
    request.headers = vec![("Authorization".into(), format!("Bearer {token}"))];
    request
}

/// The S256 challenge of a verifier.
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

// ---- fixtures -------------------------------------------------------------------------------

/// A confidential, scoped app.
pub const CONF_APP: &str = "conf-app";
/// Its secret.
pub const CONF_SECRET: &str = "conf-secret-0123456789";
/// Its registered redirect URI.
pub const CONF_REDIRECT: &str = "https://conf.example/cb";
/// A public (secretless) scoped app, PKCE only.
pub const PKCE_APP: &str = "pkce-app";
/// Its registered redirect URI.
pub const PKCE_REDIRECT: &str = "http://127.0.0.1:8765/cb";
/// A legacy full-Dropbox app defaulting to long-lived tokens, implicit allowed.
pub const LEGACY_APP: &str = "legacy-app";
/// Its secret.
pub const LEGACY_SECRET: &str = "legacy-secret-0123456789";
/// Its registered redirect URI.
pub const LEGACY_REDIRECT: &str = "https://legacy.example/cb";
/// A legacy business-API app with team auditing.
pub const TEAM_APP: &str = "team-app";
/// Its secret.
pub const TEAM_SECRET: &str = "team-secret-0123456789";
/// Its registered redirect URI.
pub const TEAM_REDIRECT: &str = "https://team.example/cb";
/// The RFC 7636 Appendix B verifier.
pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
/// Its S256 challenge (RFC 7636 Appendix B).
pub const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
/// `/2/users/get_current_account`, requiring `account_info.read`.
pub const GET_ACCOUNT: &str = "/2/users/get_current_account";
/// `/2/files/list_folder`, requiring `files.metadata.read`.
pub const LIST_FOLDER: &str = "/2/files/list_folder";
/// `/2/files/upload`, requiring `files.content.write`.
pub const UPLOAD: &str = "/2/files/upload";
/// `/2/auth/token/revoke`.
pub const REVOKE: &str = "/2/auth/token/revoke";
/// `/2/team/get_info`, requiring `team_info.read`.
pub const TEAM_INFO: &str = "/2/team/get_info";

fn app(key: &str, secret: Option<&str>, redirect: &[&str], permissions: Permissions) -> App {
    App {
        key: AppKey::new(key).expect("fixture key"),
        name: format!("The {key}"),
        secret_digest: secret.map(|s| ClientSecret::presented(s).digest()),
        redirect_uris: redirect
            .iter()
            .map(|r| RedirectUri::new(*r).expect("fixture uri"))
            .collect(),
        permissions,
        default_token_type: DefaultTokenType::ShortLived,
        implicit_allowed: false,
    }
}

fn scoped(scopes: &str) -> Permissions {
    Permissions::Scoped {
        scopes: ScopeSet::parse(scopes).expect("fixture scopes"),
    }
}

/// The fixture's server key (32 bytes, base64url): public, for tests only.
pub const FIXTURE_SERVER_KEY: &str = "dGVzdHMtZml4dHVyZS1zZXJ2ZXIta2V5LTMyYnl0ZXM";

/// The fixture's server key, parsed.
pub fn fixture_key() -> ServerKey {
    ServerKey::from_base64(FIXTURE_SERVER_KEY).expect("32 bytes")
}

/// The shared configuration: the four fixture apps and four API endpoints, default policy.
pub fn fixture_document() -> ConfigDocument {
    let legacy = App {
        default_token_type: DefaultTokenType::LongLived,
        implicit_allowed: true,
        ..app(
            LEGACY_APP,
            Some(LEGACY_SECRET),
            &[LEGACY_REDIRECT],
            Permissions::Legacy {
                access: LegacyAccess::FullDropbox,
            },
        )
    };
    ConfigDocument {
        apps: vec![
            app(
                CONF_APP,
                Some(CONF_SECRET),
                &[CONF_REDIRECT, "https://conf.example/other?tenant=1"],
                scoped("account_info.read files.content.read files.content.write"),
            ),
            app(
                PKCE_APP,
                None,
                &[PKCE_REDIRECT],
                scoped("account_info.read files.metadata.read"),
            ),
            legacy,
            app(
                TEAM_APP,
                Some(TEAM_SECRET),
                &[TEAM_REDIRECT],
                Permissions::Legacy {
                    access: LegacyAccess::TeamAuditing,
                },
            ),
        ],
        policy: Policy::default(),
        pages: PageTemplates::default(),
        profile: Profile::Reference,
        server_key: Some(fixture_key()),
        api_endpoints: [
            (GET_ACCOUNT, "account_info.read"),
            (LIST_FOLDER, "files.metadata.read"),
            (UPLOAD, "files.content.write"),
            (TEAM_INFO, "team_info.read"),
        ]
        .into_iter()
        .map(|(path, scope)| {
            (
                path.to_owned(),
                Scope::new(scope).expect("fixture scope").into(),
            )
        })
        .collect(),
        scope_descriptions: Default::default(),
    }
}

/// [`fixture_document`], validated.
pub fn fixture_config() -> Config {
    Config::new(fixture_document()).expect("fixture config")
}

/// The fixture in the standards profile (issuer `https://auth.example`), with `apps` allowed
/// the client credentials grant.
pub fn client_credentials_document(apps: &[&str]) -> ConfigDocument {
    let mut doc = fixture_document();
    let mut standards = Standards::new(Issuer::new("https://auth.example").expect("issuer"));
    standards.client_credentials = Some(ClientCredentials::new(
        apps.iter()
            .map(|app| AppKey::new(*app).expect("app key"))
            .collect(),
    ));
    doc.profile = Profile::Standards(standards);
    doc
}

/// The fixture in the standards profile (issuer `https://auth.example`), rotating refresh
/// tokens as `rotation` says.
pub fn standards_config(rotation: Rotation) -> Config {
    let mut doc = fixture_document();
    doc.profile = Profile::Standards(Standards {
        issuer: Issuer::new("https://auth.example").expect("a valid issuer"),
        resources: Vec::new(),
        rotation,
        resource_servers: Vec::new(),
        clients: None,
        client_credentials: None,
        token_exchange: None,
        identity_assertions: None,
        dpop: None,
    });
    Config::new(doc).expect("the fixture is valid")
}

/// A user.
pub fn user(account: &str, uid: &str) -> User {
    User {
        account_id: AccountId::new(account).expect("fixture account"),
        uid: Uid::new(uid).expect("fixture uid"),
        name: None,
        props: None,
    }
}

/// Alice.
pub fn alice() -> User {
    user("dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", "12345")
}

/// Bob.
pub fn bob() -> User {
    user("dbid:AACbobbobbobbobbobbobbobbobbobbobbo", "67890")
}

/// Builds a query string from pairs.
pub fn query(pairs: &[(&str, &str)]) -> String {
    form_body(pairs)
}

/// The public app's PKCE (S256) offline authorization query with `state`.
pub fn pkce_offline_query(state: &str) -> String {
    query(&[
        ("client_id", PKCE_APP),
        ("response_type", "code"),
        ("redirect_uri", PKCE_REDIRECT),
        ("token_access_type", "offline"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("state", state),
    ])
}

/// The confidential app's offline code-flow query with a PKCE challenge: a grant it may later
/// refresh by `client_id` alone.
pub fn conf_pkce_offline_query() -> String {
    query(&[
        ("client_id", CONF_APP),
        ("response_type", "code"),
        ("redirect_uri", CONF_REDIRECT),
        ("token_access_type", "offline"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
    ])
}

/// The confidential app's code-flow query with `token_access_type`.
pub fn conf_query(access: &str, state: &str) -> String {
    query(&[
        ("client_id", CONF_APP),
        ("response_type", "code"),
        ("redirect_uri", CONF_REDIRECT),
        ("token_access_type", access),
        ("state", state),
    ])
}

// ---- Clients that prove themselves by their keys (RFC 7523 §2.2) --------------------------------

/// `client_assertion_type` of a client assertion (RFC 7523 §2.2).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A client's signing key (P-256), fixed: `seed` picks which.
pub fn signing_key(seed: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap()
}

/// Its public key as a JWK with `kid`.
pub fn public_jwk(key: &p256::ecdsa::SigningKey, kid: &str) -> Value {
    let point = key.verifying_key().to_encoded_point(false);
    let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
    serde_json::json!({ "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
            "x": b64(point.x().unwrap()), "y": b64(point.y().unwrap()) })
}

/// A client assertion (ES256, `kid` k1) of `client` for `aud`, expiring at `exp`, with `jti`.
pub fn assertion(
    key: &p256::ecdsa::SigningKey,
    client: &str,
    aud: &str,
    exp: u64,
    jti: &str,
) -> String {
    signed_jwt(
        key,
        &serde_json::json!({ "alg": "ES256", "kid": "k1", "typ": "JWT" }),
        &serde_json::json!({ "iss": client, "sub": client, "aud": aud, "exp": exp, "jti": jti }),
    )
}

/// A compact JWS of `claims` under `header`, signed ES256 by `key`.
pub fn signed_jwt(key: &p256::ecdsa::SigningKey, header: &Value, claims: &Value) -> String {
    use p256::ecdsa::signature::Signer as _;
    let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", b64(&signature.to_bytes()))
}

/// The JWT-bearer grant's `grant_type` (RFC 7523 §2.1).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// An identity assertion (ID-JAG, `typ` oauth-id-jag+jwt, ES256, `kid` idp-1) with `claims`,
/// signed by `key`: what an enterprise identity provider hands a client.
pub fn id_jag(key: &p256::ecdsa::SigningKey, claims: &Value) -> String {
    signed_jwt(
        key,
        &serde_json::json!({ "alg": "ES256", "kid": "idp-1", "typ": "oauth-id-jag+jwt" }),
        claims,
    )
}

/// A registration request (RFC 7591) for `metadata`, from `source`.
pub fn register_request(metadata: &Value, source: &str) -> HttpRequest {
    let mut request = HttpRequest::new("POST", "/oauth2/register", "");
    request
        .headers
        .push(("Content-Type".into(), "application/json".into()));
    request.source = Some(source.into());
    request.body = metadata.to_string().into_bytes();
    request
}
