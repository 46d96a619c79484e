//! The race explorer: every interleaving of the steps of a few concurrent requests over one
//! store, optionally with a host crash at any point of any request followed by a retry.
//!
//! A step is what a host does atomically: one poll of the request and the batched read or the
//! conditional commit it asks for. With crashes enabled, delivering the answer is a step too, so
//! that "committed but not answered" is a state a crash can hit; a crash throws away the
//! request's loaded records and its answer, and the same input starts again with fresh entropy
//! (a client retrying). The explorer calls `check` on every complete schedule and returns how
//! many there were; the invariants every schedule must keep are [`check_store`] and the
//! scenario's own.
//!
//! ```
//! use edgegrant_tests::{explorer::*, *};
//! let mut sim = Sim::new(fixture_config());
//! let code = sim.code_for(&pkce_offline_query("s"), &alice());
//! let exchange = exchange_input(&code);
//! let schedules = explore(&sim.config, &sim.store, sim.now, &[exchange.clone(), exchange], 0, &mut |s| {
//!     let redeemed = s.answers.iter().flatten().filter(|o| token_response(o).is_some()).count();
//!     assert!(redeemed <= 1);
//! });
//! assert!(schedules > 1);
//! ```

use std::sync::Arc;

use edgegrant::*;

use crate::{bearer_request, entropy, form_request, Answer, Progress, Request, Store};
use crate::{GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, REVOKE, VERIFIER};

/// What happened at one point of a schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum Moment {
    /// Request `actor` read these keys in one batch.
    Read {
        /// The request.
        actor: usize,
    },
    /// Request `actor`'s transaction committed, with its audit events.
    Commit {
        /// The request.
        actor: usize,
        /// What the transaction recorded.
        audit: Vec<AuditEvent>,
    },
    /// Request `actor`'s transaction lost a race: nothing applied; it starts over.
    Conflict {
        /// The request.
        actor: usize,
    },
    /// Request `actor`'s answer reached its client.
    Answer {
        /// The request.
        actor: usize,
    },
    /// The host serving `actor` stopped; the client sends the same request again.
    Crash {
        /// The request.
        actor: usize,
    },
}

/// One complete schedule.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The store at the end.
    pub store: Store,
    /// Per request, the answers its client received (one, unless a crash lost one).
    pub answers: Vec<Vec<Answer>>,
    /// Every step, in order.
    pub trace: Vec<Moment>,
}

impl Schedule {
    /// Where in the trace the first commit recording an event that `matches` happened.
    pub fn commit_of(&self, matches: impl Fn(&AuditEvent) -> bool) -> Option<usize> {
        self.trace.iter().position(|event| match event {
            Moment::Commit { audit, .. } => audit.iter().any(&matches),
            _ => false,
        })
    }

    /// Where in the trace `actor` last read records.
    pub fn last_read_of(&self, actor: usize) -> Option<usize> {
        self.trace
            .iter()
            .rposition(|event| matches!(event, Moment::Read { actor: a } if *a == actor))
    }
}

#[derive(Clone)]
enum Slot {
    Running(Box<Request>),
    Answering(Answer),
    Answered,
}

#[derive(Clone)]
struct State {
    store: Store,
    slots: Vec<Slot>,
    attempts: Vec<u64>,
    answers: Vec<Vec<Answer>>,
    trace: Vec<Moment>,
    crashes_left: usize,
}

/// Explores every schedule of `inputs` run concurrently at `now` over `store`, with up to
/// `crashes` host crashes per schedule; calls `check` on each and returns how many there were.
pub fn explore(
    config: &Arc<Config>,
    store: &Store,
    now: UnixTime,
    inputs: &[Input],
    crashes: usize,
    check: &mut dyn FnMut(&Schedule),
) -> usize {
    let state = State {
        store: store.clone(),
        slots: (0..inputs.len())
            .map(|actor| Slot::Running(Box::new(start(config, inputs, actor, 0, now))))
            .collect(),
        attempts: vec![0; inputs.len()],
        answers: vec![Vec::new(); inputs.len()],
        trace: Vec::new(),
        crashes_left: crashes,
    };
    let mut schedules = 0;
    walk(config, inputs, now, crashes > 0, state, &mut |schedule| {
        schedules += 1;
        // An inconsistent store is shown with the schedule that left it.
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_store(config.server_key(), &schedule.store)
        }));
        if let Err(panic) = checked {
            eprintln!("schedule: {:?}", schedule.trace);
            for (key, stored) in schedule.store.iter() {
                eprintln!("{key} v{}: {:?}", stored.version, stored.record());
            }
            std::panic::resume_unwind(panic);
        }
        check(schedule);
    });
    schedules
}

fn start(
    config: &Arc<Config>,
    inputs: &[Input],
    actor: usize,
    attempt: u64,
    now: UnixTime,
) -> Request {
    // Distinct entropy per request and per attempt, as fresh randomness would be.
    let seed = 1_000 + 100 * actor as u64 + attempt;
    Request::new(config, inputs[actor].clone(), now, entropy(seed))
}

fn walk(
    config: &Arc<Config>,
    inputs: &[Input],
    now: UnixTime,
    answers_are_steps: bool,
    state: State,
    visit: &mut dyn FnMut(&Schedule),
) {
    if state
        .slots
        .iter()
        .all(|slot| matches!(slot, Slot::Answered))
    {
        visit(&Schedule {
            store: state.store,
            answers: state.answers,
            trace: state.trace,
        });
        return;
    }
    for actor in 0..state.slots.len() {
        // Its next step.
        let mut next = state.clone();
        match &mut next.slots[actor] {
            Slot::Answered => continue,
            Slot::Answering(answer) => {
                let answer = answer.clone();
                next.answers[actor].push(answer);
                next.trace.push(Moment::Answer { actor });
                next.slots[actor] = Slot::Answered;
            }
            Slot::Running(request) => {
                let progress = request
                    .step(&mut next.store)
                    .expect("the host follows the contract");
                assert!(request.steps < 24, "a request must finish");
                match progress {
                    // A fetch reads the web, which no other request changes: like a read.
                    Progress::Loaded(_) | Progress::Fetched(_) => {
                        next.trace.push(Moment::Read { actor })
                    }
                    Progress::Conflicted(_) => next.trace.push(Moment::Conflict { actor }),
                    Progress::Committed { audit } => {
                        next.trace.push(Moment::Commit { actor, audit })
                    }
                    Progress::Done {
                        answer,
                        committed,
                        audit,
                    } => {
                        if committed {
                            next.trace.push(Moment::Commit { actor, audit });
                        }
                        if answers_are_steps {
                            next.slots[actor] = Slot::Answering(answer);
                        } else {
                            next.answers[actor].push(answer);
                            next.trace.push(Moment::Answer { actor });
                            next.slots[actor] = Slot::Answered;
                        }
                    }
                }
            }
        }
        walk(config, inputs, now, answers_are_steps, next, visit);

        // Or the host serving it stops here (once it has done something), and the client retries.
        let started = match &state.slots[actor] {
            Slot::Running(request) => request.steps > 0,
            Slot::Answering(_) => true,
            Slot::Answered => false,
        };
        if state.crashes_left > 0 && started {
            let mut crashed = state.clone();
            crashed.crashes_left -= 1;
            crashed.attempts[actor] += 1;
            crashed.trace.push(Moment::Crash { actor });
            crashed.slots[actor] = Slot::Running(Box::new(start(
                config,
                inputs,
                actor,
                crashed.attempts[actor],
                now,
            )));
            walk(config, inputs, now, answers_are_steps, crashed, visit);
        }
    }
}

/// Every stored record is reachable and consistent: tokens point at an existing grant of the
/// same app and user (an access token with no more scopes than its grant), every grant at its
/// current refresh token, if it names one, and at the
/// link of its app and user at an epoch not ahead of it, every redeemed code at its grant; a
/// token its account's ledger vouches for belongs to a live grant whose link is at its epoch;
/// and
/// every record of an account lies in that account's partition, every stored app in its own.
pub fn check_store(server_key: &ServerKey, store: &Store) {
    for (key, stored) in store.iter() {
        let record = stored
            .record()
            .unwrap_or_else(|_| panic!("{key}: not a record"));
        assert!(stored.version >= 1, "{key}: version {}", stored.version);
        // A person's records live in their account's partition; a grant to an app itself, and
        // its tokens, in the app's.
        let of_subject = |app: &AppKey, subject: &Subject| match subject {
            Subject::Account(account) => Partition::of_account(server_key, account),
            Subject::Client => Partition::of_app(server_key, app),
        };
        let partition = match &record {
            Record::AccessToken(r) => Some(of_subject(&r.app, &r.subject)),
            Record::RefreshToken(r) => Some(of_subject(&r.app, &r.subject)),
            Record::Grant(r) => Some(of_subject(&r.app, &r.subject)),
            Record::Code(r) => Some(Partition::of_account(server_key, &r.account_id)),
            Record::Link(_)
            | Record::Attempts(_)
            | Record::Member(_)
            | Record::App(_)
            | Record::Assertion(_)
            | Record::Ledger(_)
            | Record::ProviderKeys(_) => None,
        };
        if let Some(partition) = partition {
            assert_eq!(key.partition(), partition, "{key}");
        }
        let grant =
            |id: &GrantId| match store.record(&RecordKey::Grant(key.partition(), id.clone())) {
                Some(Record::Grant(grant)) => grant,
                other => panic!("grant {id} is missing or not a grant: {other:?}"),
            };
        match &record {
            Record::AccessToken(token) => {
                let owner = grant(&token.grant);
                assert_eq!(
                    (&token.app, &token.subject),
                    (&owner.app, &owner.subject),
                    "{key}"
                );
                assert!(token.scopes.is_subset(&owner.scopes), "{key}: scopes");
                // A token its account's ledger vouches for is checked by itself alone: its grant
                // must stand, and its link be at the grant's epoch.
                let ledger = store.record(&RecordKey::Ledger(key.partition()));
                let vouched = matches!(&ledger, Some(Record::Ledger(l))
                    if token.generation == Some(l.generation));
                if vouched {
                    assert!(
                        owner.revoked_at.is_none(),
                        "{key}: vouched for by {ledger:?}, its grant revoked"
                    );
                    if let Subject::Account(account) = &owner.subject {
                        let link_key =
                            RecordKey::link(server_key, owner.app.clone(), account.clone());
                        assert!(
                            matches!(store.record(&link_key), Some(Record::Link(link))
                                if link.epoch == owner.link_epoch),
                            "{key}: vouched for by {ledger:?}, its link unlinked"
                        );
                    }
                }
            }
            Record::RefreshToken(token) => {
                let owner = grant(&token.grant);
                assert_eq!(
                    (&token.app, &token.subject),
                    (&owner.app, &owner.subject),
                    "{key}"
                );
            }
            Record::Grant(owner) => {
                // A rotation never leaves a grant naming a token that is not stored.
                if let Some(current) = owner.refresh_token {
                    let current = RecordKey::RefreshToken(key.partition(), current);
                    assert!(store.get(&current).is_some(), "{key}: no {current}");
                }
                // A grant to an app itself has no link, and no member place.
                let Subject::Account(account) = &owner.subject else {
                    assert!(
                        owner.member.is_none(),
                        "{key}: an app's grant with a member place"
                    );
                    continue;
                };
                let link_key = RecordKey::link(server_key, owner.app.clone(), account.clone());
                let Some(Record::Link(link)) = store.record(&link_key) else {
                    panic!("{key}: no link {link_key}");
                };
                assert!(
                    owner.link_epoch <= link.epoch,
                    "{key}: epoch ahead of its link"
                );
                // A grant that outlives its tokens is at its member place, counted by its
                // link; a live one's member record names it.
                if let Some(place) = owner.member {
                    assert!(place < link.members, "{key}: member {place} not counted");
                    let member =
                        RecordKey::member(server_key, owner.app.clone(), account.clone(), place);
                    if owner.revoked_at.is_none() && owner.link_epoch == link.epoch {
                        match store.record(&member) {
                            Some(Record::Member(m))
                                if RecordKey::Grant(key.partition(), m.grant.clone()) == *key => {}
                            other => panic!("{key}: member {member} is {other:?}"),
                        }
                    }
                }
            }
            Record::Code(code) => {
                if let CodeState::Redeemed { grant: id } = &code.state {
                    grant(id);
                }
            }
            Record::Link(link) => {
                assert!(link.swept <= link.sweep_to, "{key}: swept past its end");
                assert!(
                    link.sweep_to <= link.members,
                    "{key}: sweeps past its members"
                );
            }
            Record::Member(member) => {
                // Its grant is there (a member goes with its grant, never after it).
                grant(&member.grant);
            }
            // A count may be back at zero: a successful check takes its reservation back.
            // A used client assertion holds only its expiry.
            // A ledger is a generation (what it vouches for is checked with each token).
            // A provider's key set is a cache of its jwks_uri.
            Record::Attempts(_)
            | Record::Assertion(_)
            | Record::Ledger(_)
            | Record::ProviderKeys(_) => {}
            // A stored app lies in its own partition, under its own key.
            Record::App(stored) => {
                assert_eq!(
                    *key,
                    RecordKey::app(server_key, stored.app.key.clone()),
                    "{key}"
                );
            }
        }
    }
}

/// The tokens of a successful token response: `(access_token, refresh_token)`.
pub fn token_response(answer: &Answer) -> Option<(String, Option<String>)> {
    match answer {
        Answer::Reply(Reply {
            outcome: Outcome::Tokens,
            response,
            ..
        }) => {
            let body: serde_json::Value = serde_json::from_str(&response.body).ok()?;
            let access = body.get("access_token")?.as_str()?.to_owned();
            let refresh = body
                .get("refresh_token")
                .and_then(|r| r.as_str())
                .map(str::to_owned);
            Some((access, refresh))
        }
        _ => None,
    }
}

/// Whether `access_token` passes a bearer check on `store` at `now` (run on a copy).
pub fn validates(config: &Arc<Config>, store: &Store, now: UnixTime, access_token: &str) -> bool {
    let mut store = store.clone();
    let input = api_input(access_token);
    let mut request = Request::new(config, input, now, entropy(u64::MAX));
    matches!(
        request.run(&mut store, 16),
        Ok(Progress::Done {
            answer: Answer::Serve(_),
            ..
        })
    )
}

/// A deployment where alice went through the public app's offline flow: it, her access token
/// and her refresh token.
pub fn signed_in() -> (crate::Sim, String, String) {
    signed_in_with(crate::fixture_config())
}

/// [`signed_in`] under another configuration.
pub fn signed_in_with(config: Config) -> (crate::Sim, String, String) {
    let mut sim = crate::Sim::new(config);
    let tokens = sim.pkce_offline_tokens(&crate::alice());
    let text = |name: &str| tokens[name].as_str().unwrap_or_default().to_owned();
    (sim, text("access_token"), text("refresh_token"))
}

/// The PKCE app's code exchange.
pub fn exchange_input(code: &str) -> Input {
    http_input(form_request(&[
        ("grant_type", "authorization_code"),
        ("code", code),
        ("client_id", PKCE_APP),
        ("code_verifier", VERIFIER),
        ("redirect_uri", PKCE_REDIRECT),
    ]))
}

/// The PKCE app's refresh (`client_id` alone).
pub fn refresh_input(refresh_token: &str) -> Input {
    http_input(form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", PKCE_APP),
    ]))
}

/// An HTTP request with no signed-in user.
pub fn http_input(request: HttpRequest) -> Input {
    Input::Http {
        request,
        user: None,
    }
}

/// A call to the account endpoint with a bearer token.
pub fn api_input(access_token: &str) -> Input {
    http_input(bearer_request(GET_ACCOUNT, access_token))
}

/// The revoke endpoint with a bearer token.
pub fn revoke_input(access_token: &str) -> Input {
    http_input(bearer_request(REVOKE, access_token))
}

/// The user unlinks the PKCE app.
pub fn unlink_input(user: &User) -> Input {
    Input::Unlink {
        app: AppKey::new(PKCE_APP).expect("fixture app key"),
        account_id: user.account_id.clone(),
        by: Unlinker::User,
    }
}
