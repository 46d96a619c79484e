//! Native benchmarks of the core (issue 14): each operation runs the whole host loop of one
//! [`edgegrant::Request`] — `Request::new` (parsing, client authentication, hashing), `poll`,
//! the batched read from an in-memory store handed over with `supply`, the conditional commit
//! and `committed` — exactly as a lean host does. The host clones nothing the core hands it: it
//! reads the final step in place.
//!
//! Floors, measured in the same run: one SHA-256 of a token-sized input (every operation hashes
//! at least once; the reference column), and the bearer check's own floor, `bearer_floor`: one
//! SHA-256 of the real access token plus the three reads a bearer check makes (its access-token
//! record, grant and link), looked up by their real keys in the same [`Store`] the bench host
//! runs on, which also holds about 10 000 other records (real ones, from the flows of other
//! users).
//!
//! `cargo bench -p edgegrant-tests --bench core`; `node tests/bench/run.mjs` reads the results
//! (target/criterion/*/new/estimates.json) and prints the ratios.
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use edgegrant::{
    Config, Entropy, HttpRequest, Input, Outcome, RecordKey, Request, Step, User, ENTROPY_LEN,
};
use edgegrant_tests::{
    alice, bearer_request, consent_form, fixture_config, form_request, pkce_exchange,
    pkce_offline_query, user, Decision, Store, GET_ACCOUNT, PKCE_APP, REVOKE, T0, VERIFIER,
};
use sha2::{Digest, Sha256};

/// How many refreshes run between two restorations of the bench store.
const RESTORE_EVERY: u64 = 1_000;

/// A host with its store: the least a real one does around a request.
struct Host {
    config: Arc<Config>,
    store: Store,
    counter: u64,
}

impl Host {
    fn new(config: &Arc<Config>) -> Self {
        Host {
            config: Arc::clone(config),
            store: Store::default(),
            counter: 0,
        }
    }

    /// Fresh entropy without hashing (a counter in every 8th byte), so that the harness does
    /// not bill its own work to the core.
    fn entropy(&mut self) -> Entropy {
        self.counter += 1;
        let mut bytes = [0u8; ENTROPY_LEN];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&self.counter.to_le_bytes());
        }
        Entropy::new(bytes)
    }

    /// Runs `input` through the host loop until the core answers; the finished request holds
    /// its answer (`poll` it once more to read it).
    fn serve(&mut self, input: Input) -> Request {
        self.serve_seeing(input, |_| {})
    }

    /// [`Host::serve`], showing `seen` the keys of every read the core asks for.
    fn serve_seeing(&mut self, input: Input, mut seen: impl FnMut(&[RecordKey])) -> Request {
        let entropy = self.entropy();
        let mut request = Request::new(Arc::clone(&self.config), input, T0, entropy);
        loop {
            match request.poll() {
                Step::Read(keys) => {
                    seen(keys);
                    // The keys borrow the request, which `supply` changes: a host copies them
                    // out, as it does when it sends them to its store.
                    let keys = keys.to_vec();
                    for key in &keys {
                        request
                            .supply(key, self.store.get(key))
                            .expect("the host supplies what was asked");
                    }
                }
                Step::Write(transaction) => {
                    let applied = self.store.apply(transaction).is_ok();
                    if applied {
                        request.committed()
                    } else {
                        request.conflicted()
                    }
                    .expect("a transaction was pending");
                }
                Step::Respond(_) | Step::Serve(_) => return request,
            }
        }
    }

    /// Runs `input` and checks that it ends in a 200 reply of this kind.
    fn expect(&mut self, input: Input, outcome: &Outcome) -> Request {
        let mut request = self.serve(input);
        match request.poll() {
            Step::Respond(reply) if reply.response.status == 200 && reply.outcome == *outcome => {}
            other => panic!("expected a 200 {outcome:?}, got {other:?}"),
        }
        request
    }

    /// Authorize, consent, exchange: the code flow with PKCE and offline access, for a user who
    /// has not consented yet. Returns the finished token request (its reply holds the tokens).
    fn code_exchange(&mut self, query: &str, user: User) -> Request {
        let code = self.consented_code(query, user);
        self.exchange(&code)
    }

    /// The token request that redeems `code` with the PKCE verifier.
    fn exchange(&mut self, code: &str) -> Request {
        self.redeem(exchange_request(code))
    }

    /// Runs a token request that redeems a code (never inlined: profiles can tell it apart).
    #[inline(never)]
    fn redeem(&mut self, request: HttpRequest) -> Request {
        self.expect(
            Input::Http {
                request,
                user: None,
            },
            &Outcome::Tokens,
        )
    }

    /// Authorize and consent: the code a first-time consent yields.
    fn consented_code(&mut self, query: &str, user: User) -> String {
        let authorize = edgegrant::HttpRequest::new("GET", "/oauth2/authorize", query);
        let mut page = self.serve(Input::Http {
            request: authorize,
            user: Some(user.clone()),
        });
        let Step::Respond(reply) = page.poll() else {
            panic!("no reply")
        };
        let Outcome::Consent(_) = reply.outcome else {
            panic!("no consent prompt: {reply:?}")
        };
        let mut consent = self.serve(Input::Http {
            request: consent_form(query, Decision::Allow),
            user: Some(user),
        });
        let Step::Respond(reply) = consent.poll() else {
            panic!("no reply")
        };
        let Outcome::Redirect(location) = &reply.outcome else {
            panic!("no redirect: {reply:?}")
        };
        edgegrant_tests::redirect_param(location, "code").expect("a code")
    }
}

/// The token request redeeming `code` with the PKCE verifier, as a host receives it.
fn exchange_request(code: &str) -> HttpRequest {
    form_request(&pkce_exchange(code, VERIFIER))
}

/// A field of the JSON token response a finished token request holds.
fn field(request: &mut Request, name: &str) -> String {
    let Step::Respond(reply) = request.poll() else {
        panic!("no reply")
    };
    let value: serde_json::Value = serde_json::from_str(&reply.response.body).expect("JSON");
    value[name].as_str().expect("a string field").to_owned()
}

fn benches(c: &mut Criterion) {
    let config = Arc::new(fixture_config());
    let query = pkce_offline_query("bench");

    // The reference: one SHA-256 of a token-sized input (45 bytes; the core's access tokens have
    // 46, one SHA-256 block either way).
    let token = "sl.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd";
    c.bench_function("sha256_token", |b| {
        b.iter(|| Sha256::digest(black_box(token.as_bytes())))
    });

    // The bench host: alice's tokens among about 10 000 real records of other users (five per
    // first-time code exchange: consent link, code, grant, access and refresh token).
    let mut host = Host::new(&config);
    let mut tokens = host.code_exchange(&query, alice());
    let access = field(&mut tokens, "access_token");
    let refresh = field(&mut tokens, "refresh_token");
    let mut others = 0u32;
    while host.store.len() < 10_000 {
        others += 1;
        let other = user(
            &format!("dbid:AABenchOther{others:024}"),
            &others.to_string(),
        );
        host.code_exchange(&query, other);
    }

    // The keys a bearer check reads, as the core asks for them: the access-token record, then
    // its grant and link.
    let mut reads: Vec<RecordKey> = Vec::new();
    let mut probe = host.serve_seeing(
        Input::Http {
            request: bearer_request(GET_ACCOUNT, &access),
            user: None,
        },
        |keys| reads.extend_from_slice(keys),
    );
    assert!(matches!(probe.poll(), Step::Serve(_)));
    assert!(
        matches!(
            reads.as_slice(),
            [
                RecordKey::AccessToken(_),
                RecordKey::Grant(_),
                RecordKey::Link(..)
            ]
        ),
        "a bearer check reads its token, grant and link: {reads:?}"
    );
    assert!(reads.iter().all(|key| host.store.get(key).is_some()));

    // The bearer check's floor: one SHA-256 of the token, then those three reads, in the same
    // store with the same lookup the host loop makes.
    c.bench_function("bearer_floor", |b| {
        b.iter(|| {
            let digest = Sha256::digest(black_box(access.as_bytes()));
            for key in &reads {
                black_box(host.store.get(black_box(key)));
            }
            digest
        })
    });

    // Bearer validation: token record, then grant and link, then the Required Scope. The
    // request arrives as a host receives it (its bytes already read): the client's work of
    // building it is not timed, copying it in is.
    let bearer = bearer_request(GET_ACCOUNT, &access);
    c.bench_function("bearer_validation", |b| {
        b.iter(|| {
            let mut request = host.serve(Input::Http {
                request: bearer.clone(),
                user: None,
            });
            assert!(matches!(request.poll(), Step::Serve(_)));
            request
        })
    });

    // A refresh with the reusable refresh token: one new access token per call. Each writes a
    // new access-token record; the store is put back as it was every `RESTORE_EVERY` calls
    // (untimed), so that the store every call sees stays the 10 000-record one.
    let refresh_request = form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", &refresh),
        ("client_id", PKCE_APP),
    ]);
    let snapshot = host.store.clone();
    c.bench_function("refresh", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            let mut done = 0;
            while done < iterations {
                let batch = (iterations - done).min(RESTORE_EVERY);
                let start = Instant::now();
                for _ in 0..batch {
                    black_box(host.expect(
                        Input::Http {
                            request: refresh_request.clone(),
                            user: None,
                        },
                        &Outcome::Tokens,
                    ));
                }
                timed += start.elapsed();
                done += batch;
                host.store = snapshot.clone();
            }
            timed
        })
    });

    // The code exchange: the token request that redeems a fresh code (PKCE, offline access),
    // in the bench host's store. Each redemption writes its grant and tokens; the store is put
    // back as it was every `RESTORE_EVERY` exchanges (untimed). The codes are made beforehand,
    // each batch's in a store of its own (authorize and consent are not timed here; the whole
    // flow is, below).
    c.bench_function("code_exchange", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            let mut done = 0;
            while done < iterations {
                let batch = (iterations - done).min(RESTORE_EVERY);
                let requests: Vec<HttpRequest> = (0..batch)
                    .map(|i| {
                        let who = user(&format!("dbid:AABenchCode{i:027}"), &format!("c{i}"));
                        exchange_request(&host.consented_code(&query, who))
                    })
                    .collect();
                let start = Instant::now();
                for request in requests {
                    black_box(host.redeem(request));
                }
                timed += start.elapsed();
                done += batch;
                host.store = snapshot.clone();
            }
            timed
        })
    });

    // The whole code flow on a fresh store each time (so every consent is a first one). The
    // host is handed back, so that dropping its store is not timed.
    c.bench_function("code_flow", |b| {
        b.iter_batched(
            || Host::new(&config),
            |mut host| {
                let request = host.code_exchange(&query, alice());
                (host, request)
            },
            BatchSize::SmallInput,
        )
    });

    // Revoking a fresh access token (its grant with it).
    c.bench_function("revocation", |b| {
        b.iter_batched(
            || {
                let mut host = Host::new(&config);
                let access = field(&mut host.code_exchange(&query, alice()), "access_token");
                (host, access)
            },
            |(mut host, access)| {
                let request = host.expect(
                    Input::Http {
                        request: bearer_request(REVOKE, &access),
                        user: None,
                    },
                    &Outcome::Revoked,
                );
                (host, request)
            },
            BatchSize::SmallInput,
        )
    });
}

criterion_group!(core, benches);
criterion_main!(core);
