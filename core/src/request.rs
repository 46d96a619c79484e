//! One request, one value: built once from the input, the time and the entropy, it parses the
//! request and hashes its credential once, asks for records, takes them as they come, and ends
//! in a reply (after a write, when there is one).

use std::sync::Arc;

use crate::config::Config;
use crate::cors;
use crate::credentials::Entropy;
use crate::ctx::{Ctx, Decision, Ending, Loads, Need};
use crate::endpoints::Route;
use crate::partition::Partition;
use crate::records::{Record, RecordKey, Stored};
use crate::refusal::Refusal;
use crate::render::{render, Finished};
use crate::step::{Authorized, Input, Misuse, Reply, Step, Transaction};
use crate::time::UnixTime;

#[derive(Clone, Debug)]
enum State {
    Reading(Vec<RecordKey>),
    // Boxed: the request is moved around by its host; keep it small.
    Writing(Box<Writes>),
    Replying(Box<Reply>),
    Serving(Box<Authorized>),
}

/// The transactions a decision still has to apply, in turn, and how it then ends.
#[derive(Clone, Debug)]
struct Writes {
    /// The one the host is applying ([`Step::Write`]).
    current: Transaction,
    /// The ones after it.
    rest: std::vec::IntoIter<Transaction>,
    /// `None`: decide again once they are applied ([`Decision::Continue`]).
    ending: Option<Ending>,
}

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
    loads: Loads,
    /// The keys of the transactions committed so far.
    written: Vec<RecordKey>,
    state: State,
    conflicts: u32,
}

impl Request {
    /// Starts a request: `input` as it arrived, `now` read once from the host's clock,
    /// [`ENTROPY_LEN`](crate::ENTROPY_LEN) fresh random bytes. Parses and routes the input.
    pub fn new(config: Arc<Config>, input: Input, now: UnixTime, entropy: Entropy) -> Request {
        let origin = match &input {
            Input::Http { request, .. } => cors::request_origin(&config, request),
            Input::Unlink { .. } | Input::Attempts { .. } => None,
        };
        let route = Route::parse(&config, input);
        let mut request = Request {
            config,
            now,
            entropy,
            route,
            origin,
            loads: Loads::default(),
            written: Vec::new(),
            state: State::Reading(Vec::new()),
            conflicts: 0,
        };
        request.decide();
        request
    }

    /// What the host does next. Call again after every [`supply`](Self::supply) batch,
    /// [`committed`](Self::committed) or [`conflicted`](Self::conflicted).
    pub fn poll(&mut self) -> Step<'_> {
        if let State::Reading(keys) = &self.state {
            if keys.iter().all(|key| self.loads.contains(key)) {
                self.decide();
            }
        }
        match &self.state {
            State::Reading(keys) => Step::Read(keys),
            State::Writing(writes) => Step::Write(&writes.current),
            State::Replying(reply) => Step::Respond(reply),
            State::Serving(authorized) => Step::Serve(authorized),
        }
    }

    /// Hands over what the store holds under `key`, one of those the last [`Step::Read`]
    /// named: the record at its version, or `None` if the key is absent.
    pub fn supply(&mut self, key: &RecordKey, found: Option<&Stored>) -> Result<(), Misuse> {
        let State::Reading(keys) = &self.state else {
            return Err(Misuse::UnrequestedRecord(key.to_string()));
        };
        if !keys.contains(key) {
            return Err(Misuse::UnrequestedRecord(key.to_string()));
        }
        let value = match found {
            None => None,
            Some(stored) => match Record::decode(&stored.bytes) {
                Ok(record) if record.fits(key) => Some((stored.version, record)),
                _ => return Err(Misuse::BadRecord(key.to_string())),
            },
        };
        self.loads.insert(key.clone(), value);
        Ok(())
    }

    /// The transaction of the last [`Step::Write`] applied. Emit its audit events.
    pub fn committed(&mut self) -> Result<(), Misuse> {
        match std::mem::replace(&mut self.state, State::Reading(Vec::new())) {
            State::Writing(mut writes) => {
                match writes.rest.next() {
                    Some(next) => {
                        let done = std::mem::replace(&mut writes.current, next);
                        self.written
                            .extend(done.puts.into_iter().map(|put| put.key));
                        self.state = State::Writing(writes);
                    }
                    None => match writes.ending {
                        Some(ending) => self.finish(ending),
                        None => {
                            let done = writes.current;
                            self.written
                                .extend(done.puts.into_iter().map(|put| put.key));
                            self.loads.clear();
                            self.decide();
                        }
                    },
                }
                Ok(())
            }
            other => {
                self.state = other;
                Err(Misuse::NoTransaction)
            }
        }
    }

    /// The transaction of the last [`Step::Write`] did not apply: a condition failed because a
    /// racing request changed the same records. The request starts over from fresh records
    /// and decides from what the other request wrote — or, after
    /// [`Policy::max_attempts`](crate::Policy) losses, answers `503`.
    pub fn conflicted(&mut self) -> Result<(), Misuse> {
        if !matches!(self.state, State::Writing(..)) {
            return Err(Misuse::NoTransaction);
        }
        self.conflicts += 1;
        if self.conflicts >= self.config.policy().max_attempts {
            self.finish(Ending::Refused(
                Refusal::Contention,
                self.route.failure_channel(),
            ));
        } else {
            self.loads.clear();
            self.decide();
        }
        Ok(())
    }

    /// The store failed while a read or a write of this request was pending (an error, a
    /// timeout — not a failed condition, which is [`conflicted`](Self::conflicted)). The
    /// request ends in `503` with `Retry-After`, on its endpoint's channel; nothing it decided
    /// is sent. Whether a failed write applied is unknown, so the client's retry is decided
    /// from whatever the store then holds.
    pub fn unavailable(&mut self) -> Result<(), Misuse> {
        if !matches!(self.state, State::Reading(_) | State::Writing(..)) {
            return Err(Misuse::NoTransaction);
        }
        self.finish(Ending::Refused(
            Refusal::StorageUnavailable,
            self.route.failure_channel(),
        ));
        Ok(())
    }

    /// The partition every record this request reads or writes lies in, but for a count of
    /// failed attempts read beside a token request's credential (see [`Partition`]); `None`
    /// when it needs none. Equal to [`partition_of`](crate::partition_of) of its input
    /// whenever it is `Some`.
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

    fn decide(&mut self) {
        let ctx = Ctx {
            config: &self.config,
            now: self.now,
            entropy: &self.entropy,
            loads: &self.loads,
            written: &self.written,
        };
        match self.route.decide(&ctx) {
            Err(Need(keys)) => self.state = State::Reading(keys),
            Ok(Decision::Commit(current, ending)) => {
                self.state = State::Writing(Box::new(Writes {
                    current,
                    rest: Vec::new().into_iter(),
                    ending: Some(ending),
                }))
            }
            Ok(Decision::Continue(current)) => {
                self.state = State::Writing(Box::new(Writes {
                    current,
                    rest: Vec::new().into_iter(),
                    ending: None,
                }))
            }
            Ok(Decision::Each(transactions, ending)) => {
                let mut all = transactions.into_iter();
                self.state = match all.next() {
                    Some(current) => State::Writing(Box::new(Writes {
                        current,
                        rest: all,
                        ending: Some(ending),
                    })),
                    None => return self.finish(ending),
                };
            }
            Ok(Decision::End(ending)) => self.finish(ending),
        }
    }

    fn finish(&mut self, ending: Ending) {
        let shared = self
            .origin
            .as_deref()
            .filter(|origin| self.shares(&ending, origin));
        let mut finished = render(ending, &self.config);
        if let Some(origin) = shared {
            let headers = match &mut finished {
                Finished::Reply(reply) => &mut reply.response.headers,
                Finished::Serve(authorized) => &mut authorized.headers,
            };
            for (name, value) in cors::response_headers(origin) {
                headers.push((name.to_owned(), value.to_owned()));
            }
        }
        self.state = match finished {
            Finished::Reply(reply) => State::Replying(Box::new(reply)),
            Finished::Serve(authorized) => State::Serving(Box::new(authorized)),
        };
    }

    /// Whether the answer may be shared with the page at `origin`: tokens, a revocation and an
    /// API answer with the origins of the app they are for (an RFC 7009 revocation: the app
    /// that asked); a refusal with those of any app.
    fn shares(&self, ending: &Ending, origin: &str) -> bool {
        let app = match ending {
            Ending::Tokens(_) | Ending::Revocation => self.route.client(),
            Ending::Revoked(app) => Some(app),
            Ending::Serve(principal) => Some(&principal.app),
            Ending::Refused(..) => return cors::any_app_allows(&self.config, origin),
            _ => None,
        };
        app.and_then(|key| self.config.app(key.as_str()))
            .is_some_and(|app| cors::app_allows(app, origin))
    }
}
