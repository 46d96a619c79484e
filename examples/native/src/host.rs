//! The host's state and the calling contract of the core: one [`edgegrant::Request`] per
//! request, driven against the SQLite store until it answers.

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use edgegrant::{
    AuditEvent, Authorized, Config, Entropy, Event, Fetch, FetchFailure, Misuse, Reply, Step,
    UnixTime, ENTROPY_LEN,
};

use crate::config::Accounts;
use crate::session::Sessions;
use crate::store::{Pool, Store, StoreError};

/// What the host serves with: one configuration, its users and its table. Replaced whole
/// (test mode's reset and migration), never changed in place, so a request keeps the one it
/// started with.
#[derive(Clone, Debug)]
pub struct Site {
    /// The core's configuration.
    pub config: Arc<Config>,
    /// Who can sign in.
    pub accounts: Arc<Accounts>,
    /// The session cookies.
    pub sessions: Sessions,
    /// Where the records are.
    pub store: Store,
}

/// Test mode's state: the clock and entropy it set, the audit events since the last
/// `/__test__/audit`, and the table of the last reset.
#[derive(Default)]
pub struct TestState {
    /// Every core call runs at this time with these bytes, once `/__test__/clock` set them.
    pub clock: Option<(UnixTime, Entropy)>,
    /// Audit events not yet handed over, serialized.
    pub audit: Vec<serde_json::Value>,
    /// The table of the last reset, dropped at the next.
    pub table: Option<Store>,
    /// The web its fetches of client metadata documents see, once `/__test__/clock` set it: by
    /// URL, what a fetch gets.
    pub web: crate::web::Web,
    /// The URLs fetched since the last `/__test__/audit`.
    pub fetched: Vec<String>,
}

/// The whole host.
pub struct App {
    site: RwLock<Arc<Site>>,
    /// `Some` in test mode only.
    pub test: Option<Mutex<TestState>>,
    /// The database, for the tables test mode creates.
    pub pool: Arc<Pool>,
    /// The home page's title.
    pub title: &'static str,
    /// Fetches client metadata documents (outside test mode), every address vetted.
    fetcher: crate::fetch::Fetcher,
}

/// How a request of the core ended.
pub enum Finish {
    /// Send this.
    Reply(Reply),
    /// An authorized API call: the host's handler answers, with these headers set.
    Serve(Authorized),
}

/// A fault of the host, never of the client.
#[derive(Debug)]
pub enum Fault {
    /// The database failed.
    Store(StoreError),
    /// This host broke the calling contract (a bug).
    Misuse(Misuse),
    /// The request asked for more reads and writes than the core's published bound
    /// ([`edgegrant::Request::max_steps`]; a bug).
    Unfinished(u32),
    /// Something that cannot happen did (a bug): a blocking task that died, an unlink served.
    Bug(&'static str),
    /// No random bytes to be had.
    Entropy(String),
}

impl From<StoreError> for Fault {
    fn from(error: StoreError) -> Self {
        Fault::Store(error)
    }
}

impl From<Misuse> for Fault {
    fn from(error: Misuse) -> Self {
        Fault::Misuse(error)
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Store(e) => write!(f, "storage: {e}"),
            Fault::Misuse(e) => write!(f, "contract broken: {e}"),
            Fault::Unfinished(bound) => write!(f, "the request did not finish in {bound} steps"),
            Fault::Bug(what) => write!(f, "a bug: {what}"),
            Fault::Entropy(e) => write!(f, "no entropy: {e}"),
        }
    }
}

impl App {
    /// The host, serving `site`; `test_mode` adds the state of the `/__test__/` endpoints.
    pub fn new(
        site: Site,
        pool: Arc<Pool>,
        test_mode: bool,
        title: &'static str,
        fetcher: crate::fetch::Fetcher,
    ) -> App {
        App {
            site: RwLock::new(Arc::new(site)),
            test: test_mode.then(|| Mutex::new(TestState::default())),
            pool,
            title,
            fetcher,
        }
    }

    /// What the host serves with now.
    pub fn site(&self) -> Arc<Site> {
        self.site
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Serves `site` from now on.
    pub fn replace_site(&self, site: Site) {
        *self.site.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(site);
    }

    /// Test mode's state (`None` outside test mode).
    pub fn test_state(&self) -> Option<std::sync::MutexGuard<'_, TestState>> {
        self.test
            .as_ref()
            .map(|state| state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The time and the entropy of one core call: the system clock and fresh bytes from the
    /// OS, unless test mode set them.
    pub fn moment(&self) -> Result<(UnixTime, Entropy), Fault> {
        if let Some(clock) = self.test_state().and_then(|state| state.clock.clone()) {
            return Ok(clock);
        }
        // A clock before 1970 reads as 0: the core then sees every token as not yet expired,
        // which only a broken machine would show.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut bytes = [0u8; ENTROPY_LEN];
        getrandom::fill(&mut bytes).map_err(|e| Fault::Entropy(e.to_string()))?;
        Ok((UnixTime(now), Entropy::new(bytes)))
    }

    /// Emits the audit events of an applied transaction: one JSON line each on stdout, and in
    /// test mode to `/__test__/audit` too.
    fn audit(&self, events: &[AuditEvent]) {
        for event in events {
            let value = match serde_json::to_value(event) {
                Ok(value) => value,
                Err(e) => {
                    eprintln!("audit event not serializable: {e}");
                    continue;
                }
            };
            println!("{}", serde_json::json!({ "audit": value }));
            if let Some(mut state) = self.test_state() {
                state.audit.push(value);
            }
        }
    }

    /// A client's metadata document (or a JWK set): fetched with the vetting of the npm
    /// package's Node fetch (fetch.rs: every address the name resolves to checked, the
    /// connection made to a checked one); in test mode answered from the web `/__test__/clock`
    /// set, as the conformance runner's other hosts do. Called from `drive`, on a blocking
    /// thread of the runtime: the fetch runs on the runtime, this thread waits for it.
    fn fetch(&self, fetch: &Fetch) -> Event {
        if let Some(mut state) = self.test_state() {
            state.fetched.push(fetch.url.clone());
            return crate::web::answer(&state.web, fetch);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            eprintln!("document fetch outside the runtime (a bug)");
            return Event::FetchFailed(FetchFailure::Unreachable);
        };
        match runtime.block_on(self.fetcher.fetch(fetch)) {
            Ok(fetched) => Event::Fetched(fetched),
            Err(failure) => Event::FetchFailed(failure),
        }
    }

    /// Runs `request` from its first `step` against `store` to its end, on one pooled
    /// connection. Blocking: call it off the async threads.
    pub fn drive(
        &self,
        store: &Store,
        config: &Config,
        (mut request, mut step): (edgegrant::Request, Step),
    ) -> Result<Finish, Fault> {
        let bound = edgegrant::Request::max_steps(config);
        store.with(|connection| {
            for _ in 0..=bound {
                let event = match step {
                    Step::Read(keys) => match store.read(connection, &keys) {
                        Ok(mut found) => Event::Read(
                            keys.into_iter()
                                .map(|key| {
                                    let stored = found.remove(&key.to_string());
                                    (key, stored)
                                })
                                .collect(),
                        ),
                        // The core answers 503 with Retry-After, on the endpoint's channel.
                        Err(error) => {
                            eprintln!("storage read failed: {error}");
                            Event::Unavailable
                        }
                    },
                    Step::Write(transaction) => match store.apply(connection, &transaction.puts) {
                        Ok(true) => {
                            self.audit(&transaction.audit);
                            Event::Committed
                        }
                        // Another request won the race: the core reads again and decides from
                        // what it wrote.
                        Ok(false) => Event::Conflicted,
                        Err(error) => {
                            eprintln!("storage write failed: {error}");
                            Event::Unavailable
                        }
                    },
                    Step::Fetch(fetch) => self.fetch(&fetch),
                    Step::Verify(verify) => Event::Verified(crate::signatures::holds(&verify)),
                    Step::Respond(reply) => {
                        self.audit(&reply.audit);
                        return Ok(Finish::Reply(reply));
                    }
                    Step::Serve(authorized) => return Ok(Finish::Serve(authorized)),
                };
                step = request.advance(event)?;
            }
            Err(Fault::Unfinished(bound))
        })
    }
}
