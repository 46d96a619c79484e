//! A walk through the whole service in one process, printing every step the core asks of its
//! host: authorize → consent → PKCE code exchange → API call → refresh → revoke → 401, then a
//! replayed code and a re-authorization that completes without a consent page.
//!
//! Run: `cargo run -p edgegrant-tests --example walkthrough`

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use edgegrant::*;
use edgegrant_tests::*;

/// How a request ended, as the host sees it.
enum Ended {
    /// Send this reply.
    Reply(Reply),
    /// Serve the API call for this principal.
    Serve(Principal),
}

impl Ended {
    fn reply(self) -> Reply {
        match self {
            Ended::Reply(reply) => reply,
            Ended::Serve(principal) => panic!("expected a reply, got a call for {principal:?}"),
        }
    }
}

/// The host side of the contract: a clock, an RNG, a store, and the step loop.
struct Host {
    config: Arc<Config>,
    store: Store,
}

impl Host {
    fn serve(&mut self, title: &str, input: Input) -> Ended {
        println!("\n=== {title}");
        // Time and entropy are read once per request, at the edge, and passed in.
        let now = UnixTime(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        let mut bytes = [0u8; ENTROPY_LEN];
        getrandom::fill(&mut bytes).expect("the OS random source");
        let (mut request, mut step) =
            edgegrant::Request::start(self.config.clone(), input, now, Entropy::new(bytes));
        loop {
            let event = match step {
                Step::Read(keys) => {
                    println!(
                        "  core: Read {:?}",
                        keys.iter().map(ToString::to_string).collect::<Vec<_>>()
                    );
                    self.store.read(keys)
                }
                Step::Write(transaction) => {
                    for put in &transaction.puts {
                        println!(
                            "  core: Write {} (expect {:?}, purge after {:?})",
                            put.key, put.expect, put.purge_after
                        );
                    }
                    match self.store.apply(&transaction) {
                        Ok(()) => {
                            for event in &transaction.audit {
                                println!(
                                    "  audit: {}",
                                    serde_json::to_string(event).unwrap_or_default()
                                );
                            }
                            Event::Committed
                        }
                        Err(conflict) => {
                            println!("  host: conflict on {}, the core reads again", conflict.0);
                            Event::Conflicted
                        }
                    }
                }
                Step::Fetch(fetch) => {
                    println!("  core: Fetch {} (the store's web answers)", fetch.url);
                    self.store.fetch(&fetch)
                }
                Step::Verify(verify) => {
                    println!("  core: Verify a {} signature", verify.alg.name());
                    Event::Verified(edgegrant_tests::verify_signature(&verify))
                }
                Step::Respond(reply) => {
                    show(&reply);
                    return Ended::Reply(reply);
                }
                Step::Serve(Authorized { principal, headers }) => {
                    println!(
                        "  → serve the call for {:?} ({}), scopes [{}], answer with {headers:?}",
                        principal.subject, principal.app, principal.scopes
                    );
                    return Ended::Serve(principal);
                }
            };
            step = request
                .advance(event)
                .expect("the host answers the step it was given");
        }
    }
}

fn show(reply: &Reply) {
    let response = &reply.response;
    match &reply.outcome {
        Outcome::Redirect(location) => println!("  → 302 Location: {location}"),
        Outcome::Consent(p) => println!(
            "  → {} consent page: {} asks for [{}] ({:?})",
            response.status, p.app_name, p.scopes, p.access_type
        ),
        Outcome::Refused(refusal) => println!(
            "  → {} refused ({refusal:?}): {}",
            response.status, response.body
        ),
        outcome => println!("  → {} {outcome:?}: {}", response.status, response.body),
    }
}

fn token_request(form: &[(&str, &str)]) -> Input {
    Input::Http {
        request: form_request(form),
        user: None,
    }
}

fn bearer(path: &str, token: &str) -> Input {
    Input::Http {
        request: bearer_request(path, token),
        user: None,
    }
}

fn main() {
    let mut host = Host {
        config: Arc::new(fixture_config()),
        store: Store::default(),
    };
    let user = alice();
    let query = pkce_offline_query("demo-state");
    println!(
        "A public app ({PKCE_APP}) runs the PKCE flow with offline access for {}.",
        user.account_id
    );
    println!("code_verifier = {VERIFIER}\ncode_challenge (S256) = {CHALLENGE}");

    let authorize = || Input::Http {
        request: HttpRequest::new("GET", "/oauth2/authorize", &query),
        user: Some(user.clone()),
    };
    host.serve("GET /oauth2/authorize?…", authorize());
    let Outcome::Redirect(location) = host
        .serve(
            "user clicks Allow (POST /oauth2/authorize)",
            Input::Http {
                request: consent_form(&query, Decision::Allow),
                user: Some(user.clone()),
            },
        )
        .reply()
        .outcome
    else {
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
    let tokens = json(
        &host
            .serve(
                "POST /oauth2/token (authorization_code)",
                token_request(&exchange),
            )
            .reply()
            .response,
    );
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
        bearer(GET_ACCOUNT, &access),
    );
    let refreshed = json(
        &host
            .serve(
                "POST /oauth2/token (refresh_token)",
                token_request(&[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &refresh),
                    ("client_id", PKCE_APP),
                ]),
            )
            .reply()
            .response,
    );
    let access2 = refreshed["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    host.serve("POST /2/auth/token/revoke", bearer(REVOKE, &access2));
    host.serve(
        "POST /2/users/get_current_account (after revoke)",
        bearer(GET_ACCOUNT, &access),
    );
    host.serve(
        "POST /oauth2/token (the same code again)",
        token_request(&exchange),
    );
    host.serve(
        "GET /oauth2/authorize?… again (already granted: no consent page)",
        authorize(),
    );
    println!(
        "\nThe store holds {} records, every secret only as a SHA-256 digest.",
        host.store.len()
    );
}
