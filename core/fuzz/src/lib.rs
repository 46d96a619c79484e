//! What the fuzz targets share: the textual request format of their corpora (seeded from the
//! conformance vectors by `seeds.mjs`), a store seeded by a real flow so that fuzzed requests can
//! reach valid codes and tokens, and the host loop with the properties every answer must have.
//!
//! Request format, one request per file:
//!
//! ```text
//! token                         first line: authorize [user] | consent allow|deny [user] |
//! <query string>                            token | revoke | api <path> | unlink <app> <user>
//! Name: value                   header lines, up to an empty line
//!
//! <body bytes>
//! ```
//!
//! `${code}`, `${access}` and `${refresh}` are replaced by a live code (conf-app, offline) and
//! the public app's live tokens before the request is parsed.

use std::sync::OnceLock;

use edgegrant::*;
use edgegrant_tests::explorer::check_store;
use edgegrant_tests::*;

/// The store after a real flow, and the secrets it holds.
pub struct Seeded {
    /// The configuration (the tests' fixture).
    pub config: Config,
    /// Codes, tokens, grants and links of alice and bob.
    pub store: Store,
    /// The time the flow ran at.
    pub now: UnixTime,
    /// An unredeemed code of conf-app (offline, redirect `CONF_REDIRECT`).
    pub code: String,
    /// Alice's access token of the public app.
    pub access: String,
    /// Alice's refresh token of the public app.
    pub refresh: String,
}

/// Built once per process.
pub fn seeded() -> &'static Seeded {
    static SEEDED: OnceLock<Seeded> = OnceLock::new();
    SEEDED.get_or_init(|| {
        let mut sim = Sim::new(fixture_config());
        let tokens = sim.pkce_offline_tokens(&alice());
        let _ = sim.pkce_offline_tokens(&bob());
        let code = sim.code_for(&conf_query("offline", "s"), &alice());
        let text = |name: &str| tokens[name].as_str().unwrap_or_default().to_owned();
        Seeded {
            config: sim.config.clone(),
            store: sim.store.clone(),
            now: sim.now,
            code,
            access: text("access_token"),
            refresh: text("refresh_token"),
        }
    })
}

fn user(name: Option<&str>) -> Option<User> {
    match name {
        Some("alice") => Some(alice()),
        Some("bob") => Some(bob()),
        _ => None,
    }
}

/// The input `data` describes, or `None` for a first line that names nothing.
pub fn parse_request(data: &[u8], seeded: &Seeded) -> Option<Input> {
    let text = String::from_utf8_lossy(data)
        .replace("${code}", &seeded.code)
        .replace("${access}", &seeded.access)
        .replace("${refresh}", &seeded.refresh);
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.split('\n');
    let first: Vec<&str> = lines.next()?.split(' ').collect();
    let query = lines.next().unwrap_or_default().to_owned();
    let headers = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    let request = |method: &str| HttpRequest {
        method: method.to_owned(),
        headers,
        body: body.as_bytes().to_vec(),
        query: query.clone(),
    };
    Some(match first.as_slice() {
        ["authorize", rest @ ..] => Input::Authorize {
            query,
            user: user(rest.first().copied()),
        },
        ["consent", decision, rest @ ..] => Input::Consent {
            query,
            user: user(rest.first().copied()).unwrap_or_else(alice),
            decision: if *decision == "deny" {
                Decision::Deny
            } else {
                Decision::Allow
            },
        },
        ["token"] => Input::Token {
            request: request("POST"),
        },
        ["revoke"] => Input::Revoke {
            request: request("POST"),
        },
        // The host only routes declared endpoints to the core; others are its own 404.
        ["api", path] => {
            seeded.config.required_scope(path)?;
            Input::ApiCall {
                endpoint: (*path).to_owned(),
                request: request("POST"),
            }
        }
        ["unlink", app, name] => Input::Unlink {
            app: AppKey::new(*app).ok()?,
            account_id: user(Some(name))?.account_id,
            by: Unlinker::User,
        },
        _ => return None,
    })
}

/// Runs `input` through the host loop on `store`. Every answer must be a 2xx, 3xx or 4xx (never a
/// 5xx), the loop must end, and a consistent store must stay consistent. `Err` only for a
/// record of the wrong type under its key (a corrupt store, which the host is told about).
pub fn serve(
    config: &Config,
    store: &mut Store,
    now: UnixTime,
    input: Input,
    consistent: bool,
) -> Result<Outcome, Misuse> {
    let mut request = Request::new(input, now, entropy(7));
    let outcome = match request.run(config, store, 32)? {
        Progress::Done { outcome, .. } => outcome,
        other => panic!("the request did not finish: {other:?}"),
    };
    if let Outcome::Http(response) = &outcome {
        assert!(
            (200..500).contains(&response.status),
            "status {}: {}",
            response.status,
            response.body
        );
    }
    if consistent {
        check_store(store);
    }
    Ok(outcome)
}
