//! What the fuzz targets share: the textual request format of their corpora (seeded from the
//! conformance vectors by `seeds.mjs`), a store seeded by a real flow so that fuzzed requests can
//! reach valid codes and tokens, and the host loop with the properties every answer must have.
//!
//! Request format, one request per file:
//!
//! ```text
//! token                         first line: authorize [user] | consent allow|deny [user] |
//! <query string>                            token | revoke | api <path> | unlink <app> <user> |
//! Name: value                               http <method> <path> [user]
//! Name: value                   header lines, up to an empty line
//!
//! <body bytes>
//! ```
//!
//! `authorize` is `GET /oauth2/authorize?<query>`; `consent` is the consent page's form for the
//! query, posted from this origin (header lines, if any, replace the form's own headers, so
//! that the origin check is fuzzed too); `token`, `revoke` and `api` are POSTs to
//! `/oauth2/token`, `/2/auth/token/revoke` and the path (declared or not: the core routes);
//! `http` is any method to any path, with the body as it is. `${code}`, `${access}` and
//! `${refresh}` are replaced by a live code (conf-app, offline) and the public app's live
//! tokens before the request is parsed.

use std::sync::{Arc, OnceLock};

use edgegrant::*;
use edgegrant_tests::explorer::check_store;
use edgegrant_tests::*;

/// The store after a real flow, and the secrets it holds.
pub struct Seeded {
    /// The configuration (the tests' fixture).
    pub config: Arc<Config>,
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
    // The first two lines, then the header lines up to an empty line. (The query line may be
    // empty: the headers must not end there.)
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let first: Vec<&str> = first.split(' ').collect();
    let (query, rest) = rest.split_once('\n').unwrap_or((rest, ""));
    let query = query.to_owned();
    let (head, body) = rest.split_once("\n\n").unwrap_or((rest, ""));
    let headers: Vec<(String, String)> = head
        .split('\n')
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    let request = |method: &str, path: &str| {
        let mut request = HttpRequest::new(method, path, &query);
        request.headers = headers.clone();
        request.body = body.as_bytes().to_vec();
        request
    };
    let http = |request, user| Input::Http { request, user };
    Some(match first.as_slice() {
        ["authorize", rest @ ..] => http(
            request("GET", "/oauth2/authorize"),
            user(rest.first().copied()),
        ),
        ["consent", decision, rest @ ..] => {
            let decision = if *decision == "deny" {
                Decision::Deny
            } else {
                Decision::Allow
            };
            let mut form = consent_form(&query, decision);
            if !headers.is_empty() {
                form.headers = headers.clone();
            }
            http(
                form,
                Some(user(rest.first().copied()).unwrap_or_else(alice)),
            )
        }
        ["token"] => http(request("POST", "/oauth2/token"), None),
        ["revoke"] => http(request("POST", REVOKE), None),
        ["api", path] => http(request("POST", path), None),
        ["http", method, path, rest @ ..] => {
            http(request(method, path), user(rest.first().copied()))
        }
        ["unlink", app, name] => Input::Unlink {
            app: AppKey::new(*app).ok()?,
            account_id: user(Some(name))?.account_id,
            by: Unlinker::User,
        },
        _ => return None,
    })
}

/// Runs `input` through the host loop on `store`. Every reply must be a 2xx, 3xx or 4xx — but
/// for a storage fault (stored bytes that are not a record of the key's type) when the store is
/// not `consistent`: 503 — the loop must end within the published bound, and a consistent store
/// must stay consistent. `Err` only if this host broke the contract.
pub fn serve(
    config: &Arc<Config>,
    store: &mut Store,
    now: UnixTime,
    input: Input,
    consistent: bool,
) -> Result<Answer, Misuse> {
    let mut request = edgegrant_tests::Request::new(config, input, now, entropy(7));
    // The harness holds the request to the core's published bound (`Request::max_steps`).
    let answer = loop {
        if let Progress::Done { answer, .. } = request.step(store)? {
            break answer;
        }
    };
    if let Answer::Reply(reply) = &answer {
        let response = &reply.response;
        // A corrupt store is a storage fault: 503, never for a consistent one.
        let fault = matches!(reply.refusal(), Some(Refusal::StorageFault(_)));
        assert!(
            (200..500).contains(&response.status)
                || (fault && !consistent && response.status == 503),
            "status {} ({:?}): {}",
            response.status,
            reply.outcome,
            response.body
        );
    }
    if consistent {
        check_store(config.server_key(), store);
    }
    Ok(answer)
}
