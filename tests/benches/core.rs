//! Native benchmarks of the core (issue 6): each operation runs the whole host loop — `handle`,
//! the batched read from an in-memory store, `handle` again, the conditional commit — exactly as
//! a host does, and is reported beside its floor: one SHA-256 of a token of the same length
//! (every operation hashes at least once), measured in the same run.
//!
//! `cargo bench -p edgegrant-tests --bench core`; `node tests/bench/run.mjs` reads the results
//! (target/criterion/*/new/estimates.json) and prints the ratios.
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use edgegrant::{Config, Decision, Entropy, HttpResponse, Input, Outcome, ENTROPY_LEN};
use edgegrant_tests::{
    alice, bearer_request, fixture_config, form_request, pkce_exchange, pkce_offline_query,
    Progress, Request, Store, GET_ACCOUNT, PKCE_APP, T0, VERIFIER,
};
use sha2::{Digest, Sha256};

/// A host with its store: the least a real one does around `handle`.
struct Host {
    config: Config,
    store: Store,
    counter: u64,
}

impl Host {
    fn new() -> Self {
        Host {
            config: fixture_config(),
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

    fn serve(&mut self, input: Input) -> Outcome {
        let entropy = self.entropy();
        let mut request = Request::new(input, T0, entropy);
        match request.run(&self.config, &mut self.store, 8) {
            Ok(Progress::Done { outcome, .. }) => outcome,
            other => panic!("the request did not finish: {other:?}"),
        }
    }

    fn http(&mut self, input: Input) -> HttpResponse {
        match self.serve(input) {
            Outcome::Http(response) if response.status == 200 => response,
            other => panic!("expected 200, got {other:?}"),
        }
    }

    /// Authorize, consent, exchange: the code flow with PKCE and offline access.
    /// Returns the token response body.
    fn code_exchange(&mut self, query: &str) -> String {
        let user = alice();
        let Outcome::Consent(_) = self.serve(Input::Authorize {
            query: query.to_owned(),
            user: Some(user.clone()),
        }) else {
            panic!("no consent prompt")
        };
        let Outcome::Redirect(location) = self.serve(Input::Consent {
            query: query.to_owned(),
            user,
            decision: Decision::Allow,
        }) else {
            panic!("no redirect")
        };
        let code = edgegrant_tests::redirect_param(&location, "code").expect("a code");
        let request = form_request(&pkce_exchange(&code, VERIFIER));
        self.http(Input::Token { request }).body
    }
}

/// A field of a JSON token response.
fn field(body: &str, name: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(body).expect("JSON");
    value[name].as_str().expect("a string field").to_owned()
}

fn benches(c: &mut Criterion) {
    let query = pkce_offline_query("bench");

    // The floor: one SHA-256 of a token-sized input (43 URL-safe characters, as the core's).
    let token = "sl.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd";
    c.bench_function("sha256_token", |b| {
        b.iter(|| Sha256::digest(black_box(token.as_bytes())))
    });

    // The bearer check's floor: that hash, then one lookup of the digest among 10 000.
    let digests: std::collections::HashMap<[u8; 32], u64> = (0..10_000u64)
        .map(|n| (Sha256::digest(n.to_le_bytes()).into(), n))
        .collect();
    c.bench_function("sha256_and_lookup", |b| {
        b.iter(|| {
            let digest: [u8; 32] = Sha256::digest(black_box(token.as_bytes())).into();
            digests.get(&digest).copied()
        })
    });

    // Bearer validation: token record, then grant and link, then the Required Scope.
    let mut host = Host::new();
    let tokens = host.code_exchange(&query);
    let access = field(&tokens, "access_token");
    let refresh = field(&tokens, "refresh_token");
    c.bench_function("bearer_validation", |b| {
        b.iter(|| {
            let outcome = host.serve(Input::ApiCall {
                endpoint: GET_ACCOUNT.to_owned(),
                request: bearer_request(&access),
            });
            assert!(matches!(outcome, Outcome::Authorized(_)));
        })
    });

    // A refresh with the reusable refresh token: one new access token per call.
    c.bench_function("refresh", |b| {
        b.iter(|| {
            let request = form_request(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh),
                ("client_id", PKCE_APP),
            ]);
            host.http(Input::Token { request })
        })
    });

    // The whole code flow on a fresh store each time (so every consent is a first one).
    c.bench_function("code_exchange", |b| {
        b.iter_batched(
            Host::new,
            |mut host| host.code_exchange(&query),
            BatchSize::SmallInput,
        )
    });

    // Revoking a fresh access token (its grant with it).
    c.bench_function("revocation", |b| {
        b.iter_batched(
            || {
                let mut host = Host::new();
                let access = field(&host.code_exchange(&query), "access_token");
                (host, access)
            },
            |(mut host, access)| {
                host.http(Input::Revoke {
                    request: bearer_request(&access),
                })
            },
            BatchSize::SmallInput,
        )
    });
}

criterion_group!(core, benches);
criterion_main!(core);
