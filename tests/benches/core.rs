//! Native benchmarks of the core (issue 14): each operation runs the whole host loop of one
//! [`edgegrant::Request`] — `Request::start` (parsing, client authentication, hashing), `advance`,
//! the batched read from an in-memory store handed over with `supply`, the conditional commit
//! and `committed` — exactly as a lean host does. The host clones nothing the core hands it: it
//! reads the final step in place.
//!
//! Floors, measured in the same run: one SHA-256 of a token-sized input (every operation hashes
//! at least once; the reference column), and the bearer check's own floor, `bearer_floor`: one
//! SHA-256 of the real access token plus the reads a bearer check makes (its access-token record
//! and its account's ledger, which vouches for it: nothing of the account ended since), looked up by their real keys in the same [`Store`] the bench host
//! runs on, which also holds about 10 000 other records (real ones, from the flows of other
//! users).
//!
//! `cargo bench -p edgegrant-tests --bench core`; `node tests/bench/run.mjs` reads the results
//! (target/criterion/*/new/estimates.json) and prints the ratios.
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use edgegrant::{
    Config, Dpop, DpopNonces, HttpRequest, Input, Outcome, Profile, RecordKey, SigningAlg, Step,
    TokenExchange, Verify,
};
use edgegrant_tests::bench_host::{
    exchange_request, field, AppKinds, Host, Populated, RESTORE_EVERY,
};
use edgegrant_tests::{
    alice, basic_header, bearer_request, client_credentials_document, fixture_config, form_request,
    pkce_offline_query, public_jwk, s256, signed_jwt, signing_key, user, verify_signature, Store,
    CONF_APP, CONF_SECRET, GET_ACCOUNT, PKCE_APP, REVOKE, T0,
};
use sha2::{Digest, Sha256};

fn benches(c: &mut Criterion) {
    // The reference: one SHA-256 of a token-sized input (45 bytes; the core's access tokens have
    // 46, one SHA-256 block either way).
    let token = "sl.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd";
    c.bench_function("sha256_token", |b| {
        b.iter(|| Sha256::digest(black_box(token.as_bytes())))
    });

    // The bench host: alice's tokens among about 10 000 real records of other users.
    let world = Populated::new();
    let config = world.config();
    let Populated {
        mut host,
        access,
        refresh,
        query,
    } = world;

    // The keys a bearer check reads, as the core asks for them: the access-token record and its
    // account's ledger, in one batch.
    let mut reads: Vec<RecordKey> = Vec::new();
    let probe = host.serve_seeing(
        Input::Http {
            request: bearer_request(GET_ACCOUNT, &access),
            user: None,
        },
        |keys| reads.extend_from_slice(keys),
    );
    assert!(matches!(probe, Step::Serve(_)));
    assert!(
        matches!(
            reads.as_slice(),
            [RecordKey::AccessToken(..), RecordKey::Ledger(..)]
        ),
        "a bearer check reads its token and its account's ledger: {reads:?}"
    );
    assert!(reads.iter().all(|key| host.store.get(key).is_some()));

    // The bearer check's floor: one SHA-256 of the token, then those two reads, in the same
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

    bench_bearer(c, "bearer_validation", &mut host, &access);

    // The refresh, in the 10 000-record store. `Populated` reserved room for what a batch
    // writes, so that no batch grows (rehashes) the map while it is timed: a long-lived store
    // grows rarely, and a restored copy would otherwise grow in every batch.
    let snapshot = host.store.clone();
    bench_refresh(c, "refresh", &mut host, &snapshot, &refresh);

    // The client credentials grant (issue 48): conf-app's token for itself, by its secret in
    // the Basic header, in the same 10 000-record store (the standards profile with the grant).
    // Each call writes a grant and an access token; the store is put back as for the refresh.
    let mut machines = Host::new(&Arc::new(
        Config::new(client_credentials_document(&[CONF_APP])).expect("config"),
    ));
    machines.store = snapshot.clone();
    let mut machine_request = form_request(&[("grant_type", "client_credentials")]);
    machine_request
        .headers
        .push(("Authorization".into(), basic_header(CONF_APP, CONF_SECRET)));
    bench_token_request(
        c,
        "client_credentials",
        &mut machines,
        &snapshot,
        &machine_request,
    );

    // Token exchange (RFC 8693, issue 48): conf-app exchanges its own client credentials token
    // for another (the same scopes; no resource asked), in the same store with token exchange
    // on. Each call reads the subject token and its grant and writes a token; the store is put
    // back as for the refresh.
    let mut exchange_document = client_credentials_document(&[CONF_APP]);
    if let Profile::Standards(standards) = &mut exchange_document.profile {
        standards.token_exchange = Some(TokenExchange::default());
    }
    let mut exchanges = Host::new(&Arc::new(Config::new(exchange_document).expect("config")));
    exchanges.store = snapshot.clone();
    let subject = field(
        &exchanges.expect(
            Input::Http {
                request: machine_request.clone(),
                user: None,
            },
            &Outcome::Tokens,
        ),
        "access_token",
    );
    let exchange_snapshot = exchanges.store.clone();
    let mut token_exchange_request = form_request(&[
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("subject_token", &subject),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
    ]);
    token_exchange_request
        .headers
        .push(("Authorization".into(), basic_header(CONF_APP, CONF_SECRET)));
    bench_token_request(
        c,
        "token_exchange",
        &mut exchanges,
        &exchange_snapshot,
        &token_exchange_request,
    );

    // DPoP (issue 49): a bearer check of a token bound to a key, under the DPoP scheme with its
    // proof (read, checked against the request and the token, and its ES256 signature verified
    // as the host answers Step::Verify: RustCrypto's p256, the native host's), beside the plain
    // one above, in the same store; and that signature's verification alone, its floor.
    let mut dpop_document = client_credentials_document(&[CONF_APP]);
    if let Profile::Standards(standards) = &mut dpop_document.profile {
        standards.dpop = Some(Dpop {
            nonces: DpopNonces::None,
            ..Dpop::default()
        });
    }
    let mut bound = Host::new(&Arc::new(Config::new(dpop_document).expect("config")));
    bound.store = snapshot.clone();
    let key = signing_key(41);
    let proof = |htu: &str, jti: &str, token: Option<&str>| {
        let mut claims = serde_json::json!({ "htm": "POST", "htu": htu, "iat": T0.0, "jti": jti });
        if let Some(token) = token {
            claims["ath"] = s256(token).into();
        }
        let header = serde_json::json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": public_jwk(&key, "dpop") });
        signed_jwt(&key, &header, &claims)
    };
    let mut bound_request = machine_request.clone();
    bound_request.headers.push((
        "DPoP".into(),
        proof("https://auth.example/oauth2/token", "token", None),
    ));
    let bound_token = field(
        &bound.expect(
            Input::Http {
                request: bound_request,
                user: None,
            },
            &Outcome::Tokens,
        ),
        "access_token",
    );
    let call_proof = proof(
        &format!("https://auth.example{GET_ACCOUNT}"),
        "call",
        Some(&bound_token),
    );
    let mut dpop_call = bearer_request(GET_ACCOUNT, &bound_token);
    dpop_call.headers = vec![
        ("Authorization".into(), format!("DPoP {bound_token}")),
        ("DPoP".into(), call_proof.clone()),
    ];
    c.bench_function("bearer_dpop", |b| {
        b.iter(|| {
            let answer = bound.serve(Input::Http {
                request: dpop_call.clone(),
                user: None,
            });
            assert!(matches!(answer, Step::Serve(_)));
            answer
        })
    });
    // The proof's signature as the core hands it to the host (Step::Verify).
    let (message, signature) = call_proof.rsplit_once('.').expect("a compact JWS");
    let verify = Verify {
        alg: SigningAlg::Es256,
        key: public_jwk(&key, "dpop").to_string(),
        message: message.to_owned(),
        signature: URL_SAFE_NO_PAD.decode(signature).expect("base64url"),
    };
    c.bench_function("dpop_signature", |b| {
        b.iter(|| assert!(verify_signature(black_box(&verify))))
    });

    // The code exchange: the token request that redeems a fresh code (PKCE, offline access),
    // in the bench host's store. Each redemption writes its grant and tokens; the store is put
    // back as it was every `RESTORE_EVERY` exchanges (untimed). The codes are made beforehand,
    // each batch's in a store of its own (authorize and consent are not timed here; the whole
    // flow is, below).
    c.bench_function("code_exchange", |b| {
        b.iter_custom(|iterations| {
            in_batches(iterations, &mut host, &snapshot, |host, batch| {
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
                start.elapsed()
            })
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
                let access = field(&host.code_exchange(&query, alice()), "access_token");
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

/// Bearer validation of `access` on `host`: token record and ledger, then the
/// Required Scope. The request arrives as a host receives it (its bytes already read): the
/// client's work of building it is not timed, copying it in is.
fn bench_bearer(c: &mut Criterion, name: &str, host: &mut Host, access: &str) {
    let bearer = bearer_request(GET_ACCOUNT, access);
    c.bench_function(name, |b| {
        b.iter(|| {
            let answer = host.serve(Input::Http {
                request: bearer.clone(),
                user: None,
            });
            assert!(matches!(answer, Step::Serve(_)));
            answer
        })
    });
}

/// A refresh with the reusable refresh token `refresh`: one new access token per call. Each
/// writes a new access-token record; the store is put back to `snapshot` every
/// `RESTORE_EVERY` calls (untimed), so that the store every call sees stays the same.
fn bench_refresh(c: &mut Criterion, name: &str, host: &mut Host, snapshot: &Store, refresh: &str) {
    let refresh_request = form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", PKCE_APP),
    ]);
    bench_token_request(c, name, host, snapshot, &refresh_request);
}

/// A token request that mints (`request`, the same every call), answered with tokens each
/// time; the store is put back to `snapshot` every `RESTORE_EVERY` calls (untimed).
fn bench_token_request(
    c: &mut Criterion,
    name: &str,
    host: &mut Host,
    snapshot: &Store,
    request: &HttpRequest,
) {
    c.bench_function(name, |b| {
        b.iter_custom(|iterations| {
            in_batches(iterations, host, snapshot, |host, batch| {
                let start = Instant::now();
                for _ in 0..batch {
                    black_box(host.expect(
                        Input::Http {
                            request: request.clone(),
                            user: None,
                        },
                        &Outcome::Tokens,
                    ));
                }
                start.elapsed()
            })
        })
    });
}

/// Runs `iterations` operations in batches of at most [`RESTORE_EVERY`], each batch timed by
/// `batch` (given the host and the batch's size), the store put back to `snapshot` after each
/// (untimed): every operation sees the same store. The total of the batches' times.
fn in_batches(
    iterations: u64,
    host: &mut Host,
    snapshot: &Store,
    mut batch: impl FnMut(&mut Host, u64) -> Duration,
) -> Duration {
    let mut timed = Duration::ZERO;
    let mut done = 0;
    while done < iterations {
        let size = (iterations - done).min(RESTORE_EVERY);
        timed += batch(host, size);
        done += size;
        host.store = snapshot.clone();
    }
    timed
}

/// How many records a row's store is filled to: `records` when measuring (`cargo bench` passes
/// --bench); none as a test (`cargo test --bench`, unoptimized: each flow runs once, and filling
/// the stores would take minutes).
fn padded(records: usize) -> usize {
    if std::env::args().any(|a| a == "--bench") {
        records
    } else {
        0
    }
}

/// A code exchange: the token request `next` makes (untimed: its authorization and consent,
/// the `i`th of its batch) redeemed, timed; the store put back to `snapshot` every
/// `RESTORE_EVERY` exchanges (untimed). Each code is redeemed before the next is made, so that
/// a link counts its grants' places in turn.
fn bench_exchange(
    c: &mut Criterion,
    name: &str,
    host: &mut Host,
    snapshot: &Store,
    mut next: impl FnMut(&mut Host, u64) -> HttpRequest,
) {
    c.bench_function(name, |b| {
        b.iter_custom(|iterations| {
            in_batches(iterations, host, snapshot, |host, batch| {
                let mut timed = Duration::ZERO;
                for i in 0..batch {
                    let request = next(host, i);
                    let start = Instant::now();
                    black_box(host.redeem(request));
                    timed += start.elapsed();
                }
                timed
            })
        })
    });
}

/// How many grants a user may hold, in the rows that show a request's cost does not grow with
/// them: one, a hundred, ten thousand (one sign-in after another, as a CLI on many machines or
/// a client that authorizes again and again).
const HELD: [usize; 3] = [1, 100, 10_000];

/// The bearer check, the refresh and the code exchange of a user who holds `held` offline
/// grants of one app (issue 25): each reads the user's link, whose size does not depend on
/// them. Every row's store holds the same number of records (other users' make up the
/// difference), so that only what the user holds differs.
fn grants_held(c: &mut Criterion) {
    let config = std::sync::Arc::new(fixture_config());
    let query = pkce_offline_query("bench");
    for held in HELD {
        let mut host = Host::new(&config);
        let mut tokens = host.code_exchange(&query, alice());
        for _ in 1..held {
            tokens = host.code_exchange(&query, alice());
        }
        let padded_to = padded(55_000);
        let mut others = 0u32;
        while host.store.len() < padded_to {
            others += 1;
            let other = user(
                &format!("dbid:AABenchHeld{others:025}"),
                &others.to_string(),
            );
            host.code_exchange(&query, other);
        }
        let access = field(&tokens, "access_token");
        let refresh = field(&tokens, "refresh_token");
        host.store.reserve(RESTORE_EVERY as usize * 8);
        let snapshot = host.store.clone();
        bench_bearer(c, &format!("bearer_held_{held}"), &mut host, &access);
        bench_refresh(
            c,
            &format!("refresh_held_{held}"),
            &mut host,
            &snapshot,
            &refresh,
        );
        // One more sign-in: the exchange writes the link that counts the new grant.
        bench_exchange(
            c,
            &format!("exchange_held_{held}"),
            &mut host,
            &snapshot,
            |host, _| exchange_request(&host.consented_code(&query, alice())),
        );
    }
}

/// The exchange, the refresh and the bearer check of the three kinds of app a standards-profile
/// server knows (issue 27; [`AppKinds`]): configured, registered by itself (RFC 7591), named by
/// a metadata document. One store of about 10 000 records for all; each a public client, so
/// every refresh rotates (each call presents the token the last one returned).
fn app_kinds(c: &mut Criterion) {
    let mut world = AppKinds::new(padded(10_000));
    for index in 0..world.kinds.len() {
        let (access, first_refresh) = world.tokens(index);
        let AppKinds { host, kinds } = &mut world;
        let kind = &kinds[index];
        let snapshot = host.store.clone();
        bench_bearer(c, &format!("{}_bearer", kind.name), host, &access);
        c.bench_function(&format!("{}_refresh", kind.name), |b| {
            b.iter_custom(|iterations| {
                in_batches(iterations, host, &snapshot, |host, batch| {
                    let mut timed = Duration::ZERO;
                    let mut refresh = first_refresh.clone();
                    for _ in 0..batch {
                        let request = kind.refresh(&refresh);
                        let start = Instant::now();
                        let answer = host.expect(
                            Input::Http {
                                request,
                                user: None,
                            },
                            &Outcome::Tokens,
                        );
                        timed += start.elapsed();
                        refresh = field(&answer, "refresh_token");
                    }
                    timed
                })
            })
        });
        bench_exchange(
            c,
            &format!("{}_exchange", kind.name),
            host,
            &snapshot,
            |host, i| {
                let who = user(&format!("dbid:AABenchKindCode{i:021}"), &format!("k{i}"));
                let code = host.consented_code(&kind.query(), who);
                kind.exchange(&code)
            },
        );
    }
}

criterion_group!(core, benches, grants_held, app_kinds);
criterion_main!(core);
