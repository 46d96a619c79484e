//! A walk through the whole service in one process, printing every step the core asks of its
//! host: authorize → consent → PKCE code exchange → API call → refresh → revoke → 401.
//!
//! Run: `cargo run -p edgegrant-tests --example walkthrough`

use std::time::{SystemTime, UNIX_EPOCH};

use edgegrant::*;
use edgegrant_tests::*;

/// The host side of the contract: a clock, an RNG, a store, and the step loop.
struct Host {
    config: Config,
    store: Store,
}

impl Host {
    fn serve(&mut self, title: &str, input: Input) -> Outcome {
        println!("\n=== {title}");
        // Time and entropy are read once per request, at the edge, and passed in.
        let now = UnixTime(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        let mut bytes = [0u8; ENTROPY_LEN];
        getrandom::fill(&mut bytes).expect("the OS random source");
        let entropy = Entropy::new(bytes);
        let mut records = Records::new();
        for _ in 0..8 {
            match handle(&self.config, &input, now, &entropy, &records)
                .expect("host follows the contract")
            {
                Step::NeedRecords { keys } => {
                    println!(
                        "  core: NeedRecords {:?}",
                        keys.iter().map(ToString::to_string).collect::<Vec<_>>()
                    );
                    for key in keys {
                        records.insert(key.clone(), self.store.get(&key).cloned());
                    }
                }
                Step::Commit {
                    transaction,
                    outcome,
                } => {
                    for put in &transaction.puts {
                        println!("  core: Commit put {} (expect {:?})", put.key, put.expect);
                    }
                    match self.store.apply(&transaction) {
                        Ok(()) => {
                            for event in &transaction.audit {
                                println!(
                                    "  audit: {}",
                                    serde_json::to_string(event).unwrap_or_default()
                                );
                            }
                            return show(outcome);
                        }
                        Err(conflict) => {
                            println!("  host: conflict on {}, starting over", conflict.0);
                            records = Records::new();
                        }
                    }
                }
                Step::Respond { outcome } => return show(outcome),
            }
        }
        panic!("no answer")
    }
}

fn show(outcome: Outcome) -> Outcome {
    match &outcome {
        Outcome::Http(r) => println!("  → HTTP {} {}", r.status, r.body),
        Outcome::Redirect(location) => println!("  → 302 Location: {location}"),
        Outcome::Consent(p) => println!(
            "  → consent page: {} asks for [{}] ({:?}), already granted: {}",
            p.app_name, p.scopes, p.access_type, p.already_granted
        ),
        other => println!("  → {other:?}"),
    }
    outcome
}

fn token_request(form: &[(&str, &str)]) -> Input {
    Input::Token {
        request: form_request(form),
    }
}

fn main() {
    let mut host = Host {
        config: fixture_config(),
        store: Store::default(),
    };
    let user = alice();
    let query = pkce_offline_query("demo-state");
    println!(
        "A public app ({PKCE_APP}) runs the PKCE flow with offline access for {}.",
        user.account_id
    );
    println!("code_verifier = {VERIFIER}\ncode_challenge (S256) = {CHALLENGE}");

    host.serve(
        "GET /oauth2/authorize?…",
        Input::Authorize {
            query: query.clone(),
            user: Some(user.clone()),
        },
    );
    let Outcome::Redirect(location) = host.serve(
        "user clicks Allow",
        Input::Consent {
            query,
            user: user.clone(),
            decision: Decision::Allow,
        },
    ) else {
        panic!("expected a redirect")
    };
    let code = redirect_param(&location, "code").expect("code");
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("client_id", PKCE_APP),
        ("code_verifier", VERIFIER),
        ("redirect_uri", PKCE_REDIRECT),
    ];
    let tokens = json(&http(host.serve(
        "POST /oauth2/token (authorization_code)",
        token_request(&exchange),
    )));
    let access = tokens["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let refresh = tokens["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    host.serve(
        "POST /2/users/get_current_account",
        Input::ApiCall {
            endpoint: GET_ACCOUNT.into(),
            request: bearer_request(&access),
        },
    );
    let refreshed = json(&http(host.serve(
        "POST /oauth2/token (refresh_token)",
        token_request(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", PKCE_APP),
        ]),
    )));
    let access2 = refreshed["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    host.serve(
        "POST /2/auth/token/revoke",
        Input::Revoke {
            request: bearer_request(&access2),
        },
    );
    host.serve(
        "POST /2/users/get_current_account (after revoke)",
        Input::ApiCall {
            endpoint: GET_ACCOUNT.into(),
            request: bearer_request(&access),
        },
    );
    host.serve(
        "POST /oauth2/token (the same code again)",
        token_request(&exchange),
    );
    println!(
        "\nThe store holds {} records, every secret only as a SHA-256 digest.",
        host.store.len()
    );
}
