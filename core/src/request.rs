//! One request, one value: started once from the input, the time and the entropy, it parses
//! the request and hashes its credential once, then takes one [`Event`] per [`Step`] it gave —
//! records read, a write applied or not, the store failing — until it answers.

use crate::prelude::*;
use alloc::sync::Arc;
use core::cell::Cell;

use crate::config::Config;
use crate::cors;
use crate::credentials::Entropy;
use crate::ctx::{replace, Ctx, Decision, KeysFetched, Loads, Need};
use crate::documents;
use crate::dpop;
use crate::ending::{Ending, Revocation};
use crate::endpoints::attempts::{self, Guard};
use crate::endpoints::Route;
use crate::ids::AppKey;
use crate::machines::attempts::MAX_ATTEMPTERS;
use crate::partition::Partition;
use crate::records::{AppRecord, ClientKeys, Record, RecordKey};
use crate::refusal::{Defect, DocumentFault, Refusal, UnusableDocument};
use crate::render::render;
use crate::step::{
    AuditEvent, Authorized, Event, Fetch, FetchFailure, Fetched, Input, Misuse, Reply, Step,
    Transaction,
};
use crate::time::UnixTime;
use crate::wire::http::HttpResponse;

#[derive(Clone, Debug)]
enum State {
    /// Waiting for these keys ([`Step::Read`]).
    Reading(Vec<RecordKey>),
    /// Waiting for the outcome of a [`Step::Write`]. Boxed: keep the request small.
    Writing(Box<Writes>),
    /// Waiting for a client's metadata document ([`Step::Fetch`]).
    Fetching(Box<Fetching>),
    /// Waiting for a signature's verification ([`Step::Verify`]).
    Verifying,
    /// Answered ([`Step::Respond`] or [`Step::Serve`]).
    Over,
}

/// The transactions a decision still has to apply, in turn, and how it then ends.
#[derive(Clone, Debug)]
struct Writes {
    /// The keys of the one the host is applying.
    current: Vec<RecordKey>,
    /// The ones after it.
    rest: alloc::vec::IntoIter<Transaction>,
    /// `None`: decide again once they are applied ([`Decision::Continue`]).
    ending: Option<Ending>,
}

/// What is being fetched, and the app record it is kept in (read at `version`); `counted`: a
/// fetch that counts against the source even when it succeeds.
#[derive(Clone, Debug)]
struct Fetching {
    sought: Sought,
    record: RecordKey,
    version: Option<u64>,
    counted: bool,
}

/// What a fetch is for.
#[derive(Clone, Debug)]
enum Sought {
    /// The metadata document of this client.
    Document(AppKey),
    /// The JWK set of the client whose record it is kept in, at this URL.
    Keys(String),
    /// The JWK set of an identity provider, at `url`, for an assertion `client` presented.
    ProviderKeys { url: String, client: AppKey },
}

impl Sought {
    /// The URL fetched.
    fn url(&self) -> &str {
        match self {
            Sought::Document(app) => app.document_url().unwrap_or_default(),
            Sought::Keys(url) | Sought::ProviderKeys { url, .. } => url,
        }
    }

    /// Why the client was refused, `fault` being what came of the fetch.
    fn refusal(&self, fault: DocumentFault) -> Refusal {
        let unusable = Box::new(UnusableDocument {
            url: self.url().to_owned(),
            fault,
        });
        match self {
            Sought::Document(_) => Refusal::ClientDocument(unusable),
            Sought::Keys(_) => Refusal::ClientKeys(unusable),
            Sought::ProviderKeys { .. } => Refusal::ProviderKeys(unusable),
        }
    }
}

/// How many pages of an unlink's sweep one request writes; the rest is left for the pair's next
/// unlink, so that every request ends within [`Request::max_steps`].
pub const SWEEP_PAGES_PER_REQUEST: u32 = 64;

/// The most batched reads one decision makes before it writes or answers (the token endpoint's
/// refresh: the count of a failed client, then token, grant, link and member).
const READS_PER_DECISION: u32 = 5;

/// The most signatures one request has the host verify: a client assertion's, an identity
/// assertion's and a DPoP proof's.
const MAX_SIGNATURES: usize = 3;

/// A request in progress. See the [crate documentation](crate) for the calling contract.
///
/// It is `Clone`, so a test can fork it at any step and play both continuations.
#[derive(Clone, Debug)]
pub struct Request {
    config: Arc<Config>,
    now: UnixTime,
    entropy: Entropy,
    route: Route,
    /// The `Origin` of a request to an endpoint that answers cross-origin (see `cors`).
    origin: Option<Box<str>>,
    /// The network source the host reported: what a failed fetch of a client's document is
    /// counted against.
    source: Option<Box<str>>,
    loads: Loads,
    /// The keys of the transactions committed so far.
    written: Vec<RecordKey>,
    state: State,
    conflicts: u32,
    /// The reads and writes handed to the host so far.
    steps: u32,
    /// The sweep pages written so far (an unlink's).
    pages: u32,
    /// Whether each signature asked for holds, in the order the decision asked, once the host
    /// said (a client assertion's, then an identity assertion's: at most two per request).
    verified: Vec<bool>,
    /// The key sets fetched so far (each once per request).
    keys_fetched: KeysFetched,
    /// Whether the answer carries the current DPoP nonce (`DPoP-Nonce`): to a request with a
    /// proof where nonces are asked for.
    hands_nonce: bool,
}

impl Request {
    /// Starts a request — `input` as it arrived, `now` read once from the host's clock,
    /// [`ENTROPY_LEN`](crate::ENTROPY_LEN) fresh random bytes — and gives its first step. Parses
    /// and routes the input.
    pub fn start(
        config: Arc<Config>,
        input: Input,
        now: UnixTime,
        entropy: Entropy,
    ) -> (Request, Step) {
        let (origin, source, hands_nonce) = match &input {
            Input::Http { request, .. } => (
                cors::request_origin(&config, request),
                request.source.as_deref().map(Box::from),
                dpop::hands_nonce(&config, request),
            ),
            Input::Unlink { .. } | Input::Attempts { .. } => (None, None, false),
        };
        let route = Route::parse(&config, input);
        let mut request = Request {
            config,
            now,
            entropy,
            route,
            origin,
            source,
            loads: Loads::default(),
            written: Vec::new(),
            state: State::Over,
            conflicts: 0,
            steps: 0,
            pages: 0,
            verified: Vec::new(),
            keys_fetched: KeysFetched::default(),
            hands_nonce,
        };
        let step = request.decide();
        (request, step)
    }

    /// The most reads and writes a request of `config` asks for before it answers, whatever
    /// the store holds and however the races go: a host may stop a request that asks for more
    /// (it never happens) instead of guessing a bound of its own. It grows with
    /// [`Policy::max_attempts`](crate::Policy): each lost race decides again.
    ///
    /// ```
    /// # use edgegrant::*;
    /// # let config = Config::new(ConfigDocument { server_key: Some(ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap()), ..ConfigDocument::default() }).unwrap();
    /// assert_eq!(Request::max_steps(&config), 621); // max_attempts 5
    /// ```
    pub fn max_steps(config: &Config) -> u32 {
        let per_decision = READS_PER_DECISION + MAX_ATTEMPTERS as u32;
        config
            .policy()
            .max_attempts
            .saturating_add(SWEEP_PAGES_PER_REQUEST)
            .saturating_mul(per_decision)
    }

    /// Takes what came of the last step and gives the next one.
    ///
    /// A record the store holds but the core cannot read ends the request in a storage fault
    /// (`503`, [`Refusal::StorageFault`]), now or when the request reads its damaged part.
    /// `Err` only when the host broke the contract (an event that does not answer the last
    /// step, a key it did not name or one missing); the request is then left as it was.
    pub fn advance(&mut self, event: Event) -> Result<Step, Misuse> {
        match (&self.state, event) {
            (State::Reading(keys), Event::Read(found)) => {
                let asked_once = |(i, (key, _)): (usize, &(RecordKey, _))| {
                    keys.contains(key) && !found.iter().take(i).any(|(k, _)| k == key)
                };
                if let Some((_, (extra, _))) =
                    found.iter().enumerate().find(|entry| !asked_once(*entry))
                {
                    return Err(Misuse::UnrequestedRecord(extra.to_string()));
                }
                if let Some(missing) = keys.iter().find(|k| !found.iter().any(|(f, _)| f == *k)) {
                    return Err(Misuse::MissingRecord(missing.to_string()));
                }
                for (key, stored) in found {
                    if let Err(key) = self.loads.insert(key, stored) {
                        let fault = Refusal::StorageFault(key.to_string());
                        return Ok(self.refuse(fault));
                    }
                }
                Ok(self.decide())
            }
            (State::Writing(_), Event::Committed) => Ok(self.committed()),
            (State::Writing(_), Event::Conflicted) => {
                self.conflicts += 1;
                Ok(if self.conflicts >= self.config.policy().max_attempts {
                    self.refuse(Refusal::Contention)
                } else {
                    self.loads.clear();
                    self.decide()
                })
            }
            // Nothing it decided is sent. Whether a failed write applied is unknown, so the
            // client's retry is decided from whatever the store then holds.
            (State::Reading(_) | State::Writing(_), Event::Unavailable) => {
                Ok(self.refuse(Refusal::StorageUnavailable))
            }
            // Only a request that met a client nobody configured verifies or fetches: a build
            // without them treats either answer as out of turn, and links neither path.
            (State::Verifying, Event::Verified(holds)) if cfg!(feature = "unannounced") => {
                // The records loaded stay: the decision goes on where it stopped.
                self.verified.push(holds);
                Ok(self.decide())
            }
            (State::Fetching(_), Event::Fetched(fetched)) if cfg!(feature = "unannounced") => {
                Ok(self.fetched(Ok(fetched)))
            }
            (State::Fetching(_), Event::FetchFailed(failure)) if cfg!(feature = "unannounced") => {
                Ok(self.fetched(Err(failure)))
            }
            (_, event) => Err(Misuse::OutOfTurn(match event {
                Event::Read(_) => "read",
                Event::Committed => "committed",
                Event::Conflicted => "conflicted",
                Event::Unavailable => "unavailable",
                Event::Fetched(_) => "fetched",
                Event::FetchFailed(_) => "fetch failed",
                Event::Verified(_) => "verified",
            })),
        }
    }

    /// The partition every record this request reads or writes lies in, but for a count of
    /// failed attempts read beside a token request's credential, a stored app's record read
    /// beside the request's first records, an assertion's use and an identity provider's key
    /// set, each in a partition of its own (see [`Partition`]); `None` when it needs none. Equal to
    /// [`partition_of`](crate::partition_of) of its input whenever it is `Some`.
    pub fn partition(&self) -> Option<Partition> {
        self.route.partition()
    }

    /// How many of this request's transactions lost a race so far.
    pub fn conflicts(&self) -> u32 {
        self.conflicts
    }

    /// The time the request runs at.
    pub fn now(&self) -> UnixTime {
        self.now
    }

    fn committed(&mut self) -> Step {
        // `advance` calls this only while writing; taking the state by value there instead
        // cost the wasm module 0.1 KiB for this one arm.
        let State::Writing(writes) = core::mem::replace(&mut self.state, State::Over) else {
            return self.refuse(Refusal::Defect(Defect::OutOfState));
        };
        let Writes {
            current,
            mut rest,
            ending,
        } = *writes;
        self.written.extend(current);
        match ending {
            Some(ending) => self.write(rest, ending),
            None => match rest.next() {
                // The rest of what comes before deciding again (a first contact's counts).
                Some(next) => self.hand_over(next, rest, None),
                None => {
                    self.loads.clear();
                    self.decide()
                }
            },
        }
    }

    /// A client's metadata document or key set, or an identity provider's key set, came (or did
    /// not): kept in its record — a transaction of its own, conditional on the version read,
    /// after which the request decides again from what the store then holds — or the request
    /// refused with why not.
    fn fetched(&mut self, answer: Result<Fetched, FetchFailure>) -> Step {
        let State::Fetching(fetching) = core::mem::replace(&mut self.state, State::Over) else {
            return self.refuse(Refusal::Defect(Defect::OutOfState));
        };
        let Fetching {
            sought,
            record,
            version,
            counted,
        } = *fetching;
        let (config, now, earlier) = (&self.config, self.now, self.loads.app_record(&record));
        let fetched = answer.map_err(documents::failed);
        // How long a stored app is kept unused; `None`: no app is stored here.
        let unused_lifetime = config.unannounced().map(|clients| clients.unused_lifetime);
        // What to keep, and until when.
        let kept = match (&sought, config.unannounced()) {
            (Sought::ProviderKeys { url, .. }, _) => {
                self.keys_fetched.provider = true;
                let policy = config.key_fetch_policy();
                fetched
                    .and_then(|fetched| documents::accept_keys(policy, url, &fetched, now))
                    // Kept while fresh: past that it is fetched anew anyway.
                    .map(|keys| (keys.fresh_until, Record::ProviderKeys(keys)))
            }
            (Sought::Document(app), Some(clients)) => fetched
                .and_then(|fetched| documents::accept(config, app, &fetched, earlier, now))
                .map(|kept| {
                    // Kept for its trial lifetime until a user consents to it (its first
                    // completed authorization renews it); fetched anew, it keeps the use
                    // it had.
                    let trial = clients.trial_used_at(now);
                    let used_at = earlier.map_or(trial, |earlier| earlier.used_at.max(trial));
                    let purge = used_at.plus(clients.unused_lifetime);
                    (purge, Record::App(AppRecord { used_at, ..kept }))
                }),
            (Sought::Keys(url), Some(_)) => {
                self.keys_fetched.client = true;
                let policy = config
                    .fetch_policy(url)
                    .ok_or(DocumentFault::HostNotAllowed);
                match (earlier, unused_lifetime) {
                    (Some(earlier), Some(lifetime)) => fetched
                        .and_then(|fetched| documents::accept_keys(policy?, url, &fetched, now))
                        .map(|keys| {
                            let purge = earlier.used_at.plus(lifetime);
                            (
                                purge,
                                Record::App(earlier.with_keys(ClientKeys::Remote(keys))),
                            )
                        }),
                    _ => return self.refuse(Refusal::UnknownClient),
                }
            }
            (Sought::Document(_) | Sought::Keys(_), None) => {
                return self.refuse(Refusal::UnknownClient)
            }
        };
        match kept {
            Ok((purge, kept)) => {
                let put = replace(record, version, &kept, Some(purge));
                // A first contact counts against the source, after the document is kept (its
                // counts were read before the fetch).
                let counts = if counted {
                    let guards = self.fetch_guards(sought.url());
                    attempts::count(&self.ctx(), guards.get(1..).unwrap_or_default())
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                self.keep(put, counts)
            }
            Err(fault) => self.fetch_failed(&sought, &record, fault),
        }
    }

    /// Writes what a fetch brought, in a transaction of its own, then `after`, and decides
    /// again.
    fn keep(&mut self, put: crate::step::Put, after: Vec<Transaction>) -> Step {
        let transaction = Transaction {
            puts: vec![put],
            audit: Vec::new(),
        };
        self.hand_over(transaction, after.into_iter(), None)
    }

    /// The guards a fetch of `url` is made under: the URL's own failures (one bars it for the
    /// backoff), then the request's source's failed attempts.
    fn fetch_guards(&self, url: &str) -> Vec<Guard> {
        let backoff = self.config.key_fetch_policy().failure_backoff;
        let mut guards = vec![attempts::fetch_failures(&self.config, url, backoff)];
        guards.extend(attempts::source_guards(
            &self.config,
            self.source.as_deref(),
        ));
        guards
    }

    /// A fetch that failed, or brought nothing usable: remembered under its URL for the
    /// backoff, counted against the source, with the detail in the audit event; the client is
    /// told a fixed reason.
    fn fetch_failed(&mut self, sought: &Sought, record: &RecordKey, fault: DocumentFault) -> Step {
        let app = match (sought, record) {
            (Sought::ProviderKeys { client, .. }, _) | (_, RecordKey::App(_, client)) => client,
            _ => return self.refuse(sought.refusal(fault)),
        };
        let audit = AuditEvent::FetchFailed {
            app: app.clone(),
            url: sought.url().to_owned(),
            detail: fault.detail(),
        };
        let via = self.route.failure_channel();
        let guards = self.fetch_guards(sought.url());
        let ending = Ending::Refused(sought.refusal(fault), via.clone());
        match attempts::fail(&self.ctx(), &guards, ending, via) {
            Ok(Decision::Each(mut writes, ending)) => {
                if let Some(first) = writes.first_mut() {
                    first.audit.push(audit);
                }
                self.write(writes.into_iter(), ending)
            }
            Ok(Decision::End(ending)) => self.finish(ending),
            // Their counts were read before the fetch; should they not be, refuse uncounted.
            _ => self.refuse(sought.refusal(DocumentFault::Unreachable)),
        }
    }

    /// What a decision sees: this request's configuration, time, entropy and loads.
    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            config: &self.config,
            now: self.now,
            entropy: &self.entropy,
            loads: &self.loads,
            written: &self.written,
            verified: &self.verified,
            signatures_asked: Cell::new(0),
            keys_fetched: self.keys_fetched,
        }
    }

    fn decide(&mut self) -> Step {
        let ctx = self.ctx();
        let need = match self.route.decide(&ctx) {
            Ok(Decision::End(ending)) => return self.finish(ending),
            Ok(Decision::Commit(transaction, ending)) => {
                return self.write(vec![transaction].into_iter(), ending)
            }
            Ok(Decision::Each(transactions, ending)) => {
                return self.write(transactions.into_iter(), ending)
            }
            Ok(Decision::Continue(transaction, ending)) => {
                self.pages += 1;
                if self.pages >= SWEEP_PAGES_PER_REQUEST {
                    // Enough for one request: the rest is the pair's next unlink's.
                    return self.write(vec![transaction].into_iter(), ending);
                }
                return self.hand_over(transaction, Vec::new().into_iter(), None);
            }
            Err(need) => need,
        };
        match *need {
            Need::Records(keys) => self.read(keys),
            Need::Fault(key) => self.refuse(Refusal::StorageFault(key.to_string())),
            // Only a client that arrived unannounced is verified or fetched for: a build
            // without them never asks, and links neither path.
            Need::Signature(_)
            | Need::Document { .. }
            | Need::Keys { .. }
            | Need::ProviderKeys { .. }
                if !cfg!(feature = "unannounced") =>
            {
                self.refuse(Refusal::Defect(Defect::UnexpectedNeed))
            }
            Need::Signature(verify) => {
                if self.verified.len() >= MAX_SIGNATURES {
                    // Two signatures per request at most: more would be a bug, never a loop.
                    return self.refuse(Refusal::Defect(Defect::SecondSignature));
                }
                if !self.take_step() {
                    return self.refuse(Refusal::Defect(Defect::StepBound));
                }
                self.state = State::Verifying;
                Step::Verify(verify)
            }
            Need::Document {
                app,
                record,
                version,
                counted,
            } => {
                let fetch = documents::fetch(&self.config, &app);
                self.fetch(fetch, Sought::Document(app), record, version, counted)
            }
            Need::Keys {
                record,
                version,
                url,
            } => {
                let fetch = documents::fetch_keys(&self.config, &url);
                self.fetch(fetch, Sought::Keys(url), record, Some(version), false)
            }
            Need::ProviderKeys {
                record,
                version,
                url,
                client,
            } => {
                let fetch = Ok(documents::fetch_provider_keys(&self.config, &url));
                self.fetch(
                    fetch,
                    Sought::ProviderKeys { url, client },
                    record,
                    version,
                    false,
                )
            }
        }
    }

    /// Asks the host for these records.
    fn read(&mut self, keys: Vec<RecordKey>) -> Step {
        if !self.take_step() {
            return self.refuse(Refusal::Defect(Defect::StepBound));
        }
        self.state = State::Reading(keys.clone());
        Step::Read(keys)
    }

    /// Asks the host for `fetch` (or refuses why it cannot be made), to keep what it answers
    /// under `record` — unless the URL failed within its backoff or the source is at its limit
    /// of failed attempts (their counts read first, in one batch): a request then costs no one
    /// a fetch.
    fn fetch(
        &mut self,
        fetch: Result<Fetch, DocumentFault>,
        sought: Sought,
        record: RecordKey,
        version: Option<u64>,
        counted: bool,
    ) -> Step {
        let fetch = match fetch {
            Ok(fetch) => fetch,
            Err(fault) => return self.refuse(sought.refusal(fault)),
        };
        let guards = self.fetch_guards(&fetch.url);
        let (url_failures, source) = guards.split_at(1);
        let ctx = self.ctx();
        let barred = attempts::limited(&ctx, &guards, None).and_then(|_| {
            Ok((
                attempts::limited(&ctx, url_failures, None)?,
                attempts::limited(&ctx, source, None)?,
            ))
        });
        match barred {
            Err(need) => {
                return match *need {
                    Need::Records(keys) => self.read(keys),
                    Need::Fault(key) => self.refuse(Refusal::StorageFault(key.to_string())),
                    _ => self.refuse(Refusal::Defect(Defect::UnexpectedNeed)),
                }
            }
            Ok((Some(_), _)) => return self.refuse(sought.refusal(DocumentFault::RecentlyFailed)),
            Ok((None, Some(wait))) => return self.refuse(Refusal::TooManyAttempts(wait)),
            Ok((None, None)) => {}
        }
        if !self.take_step() {
            return self.refuse(Refusal::Defect(Defect::StepBound));
        }
        self.state = State::Fetching(Box::new(Fetching {
            sought,
            record,
            version,
            counted,
        }));
        Step::Fetch(fetch)
    }

    /// Hands over the first of `transactions`, to end as `ending` once all are applied.
    fn write(
        &mut self,
        mut transactions: alloc::vec::IntoIter<Transaction>,
        ending: Ending,
    ) -> Step {
        match transactions.next() {
            Some(first) => self.hand_over(first, transactions, Some(ending)),
            None => self.finish(ending),
        }
    }

    fn hand_over(
        &mut self,
        transaction: Transaction,
        rest: alloc::vec::IntoIter<Transaction>,
        ending: Option<Ending>,
    ) -> Step {
        if !self.take_step() {
            return self.refuse(Refusal::Defect(Defect::StepBound));
        }
        let current = transaction.puts.iter().map(|put| put.key.clone()).collect();
        self.state = State::Writing(Box::new(Writes {
            current,
            rest,
            ending,
        }));
        Step::Write(transaction)
    }

    /// Counts one more read or write, if [`max_steps`](Self::max_steps) allows it (it always
    /// does: the bound is a promise to the host, kept here should a decision ever break it).
    fn take_step(&mut self) -> bool {
        self.steps += 1;
        self.steps <= Request::max_steps(&self.config)
    }

    fn refuse(&mut self, refusal: Refusal) -> Step {
        self.finish(Ending::Refused(refusal, self.route.failure_channel()))
    }

    fn finish(&mut self, ending: Ending) -> Step {
        let shared = self
            .origin
            .as_deref()
            .filter(|origin| self.shares(&ending, origin));
        let mut step = render(ending, &self.config);
        if let Step::Respond(Reply {
            response: HttpResponse { headers, .. },
            ..
        })
        | Step::Serve(Authorized { headers, .. }) = &mut step
        {
            if let Some(origin) = shared {
                for (name, value) in cors::response_headers(origin) {
                    headers.push((name.to_owned(), value.to_owned()));
                }
            }
            // RFC 9449 §8.2: the nonce for the next proof rides on every answer to one.
            if self.hands_nonce && cfg!(feature = "unannounced") {
                let nonce = dpop::nonce(self.config.server_key(), self.now);
                headers.push(("DPoP-Nonce".to_owned(), nonce));
            }
        }
        self.state = State::Over;
        step
    }

    /// Whether the answer may be shared with the page at `origin`: tokens, a revocation and an
    /// API answer with the origins of the app they are for (an RFC 7009 revocation: the app
    /// that asked); a refusal with those of any app.
    fn shares(&self, ending: &Ending, origin: &str) -> bool {
        let app = match ending {
            Ending::Tokens(_) | Ending::Revoked(Revocation::Standard) => self.route.client(),
            Ending::Revoked(Revocation::Grant(app)) => Some(app),
            Ending::Serve(principal) => Some(&principal.app),
            Ending::Refused(..) => return cors::any_app_allows(&self.config, origin),
            // A browser client registered itself: the answer is its own.
            Ending::Registered(_) => return true,
            _ => None,
        };
        app.and_then(|key| {
            // A stored app's record was read on the way (client authentication, the bearer
            // check); a configured app is at hand.
            self.config
                .app(key.as_str())
                .or_else(|| self.loads.app(self.loads.app_key(key)?))
        })
        .is_some_and(|app| cors::app_allows(app, origin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigDocument;
    use crate::credentials::{ServerKey, ENTROPY_LEN};
    use crate::refusal::Defect;
    use crate::wire::http::HttpRequest;

    /// A guard of the core's own invariants answers a defect — 500 `server_error` with its audit
    /// event on the reply — never the contention an operator would read as load.
    #[test]
    fn a_broken_invariant_is_a_defect_with_its_event_not_contention() {
        let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
        let document = ConfigDocument {
            server_key: key.ok(),
            ..ConfigDocument::default()
        };
        let config = Config::new(document);
        assert!(config.is_ok(), "{config:?}");
        let Ok(config) = config.map(Arc::new) else {
            return;
        };
        let input = Input::Http {
            request: HttpRequest::new("POST", "/oauth2/token", ""),
            user: None,
        };
        let entropy = Entropy::new([7; ENTROPY_LEN]);
        let (mut request, _) =
            Request::start(config.clone(), input, UnixTime(1_700_000_000), entropy);
        // A decision that asks for one read more than the bound promises.
        request.steps = Request::max_steps(&config);
        let step = request.read(Vec::new());
        let Step::Respond(reply) = step else {
            return assert!(matches!(step, Step::Respond(_)), "{step:?}");
        };
        assert_eq!(reply.refusal(), Some(&Refusal::Defect(Defect::StepBound)));
        assert_eq!(reply.response.status, 500);
        assert!(reply.response.header("Retry-After").is_none());
        assert_eq!(
            reply.audit,
            vec![AuditEvent::Defect {
                defect: Defect::StepBound
            }]
        );
    }
}
