//! Test mode, for the conformance runner (conformance/runners/http.test.mjs): the control
//! endpoints of examples/host/test-mode.mjs, with the same JSON in and out. Only with
//! `--test-mode`; without it `/__test__/…` goes to the core like any unknown path (404).
//!
//! Every endpoint is POST, JSON in and JSON out:
//! - `/__test__/reset {config, users: [{name, account_id, uid}]}` → `{cookies: {<name>: "session=…"}}`:
//!   this configuration (apps, policy, api_endpoints; the host's pages) and these users (signed
//!   in by the returned cookies only), over a new, empty table; the clock back to the system's.
//! - `/__test__/clock {now, entropy, web}` → `{}`: every core call from then on runs at `now`
//!   with these bytes (hex, exactly `ENTROPY_LEN` of them), and fetches client metadata
//!   documents from `web` (URL → `{status, cache_control, body: hex}` or `{fails}`; none: no
//!   document is reachable).
//! - `/__test__/event {kind: "unlink", app, account_id, by}` → `{outcome}`;
//!   `{kind: "migrate_app", app}` → `{outcome: "migrated"}` (same table).
//! - `/__test__/audit {}` → `{audit: […], fetched: […]}`: the audit events and the URLs
//!   fetched since the last call.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use edgegrant::{
    AccountId, AppKey, Entropy, FetchFailure, Fetched, Input, UnixTime, Unlinker, ENTROPY_LEN,
};
use serde_json::{json, Map, Value};

use crate::config::{accounts, core_config, Account, Accounts};
use crate::host::{App, Finish, Site};
use crate::http::{drain, fault_response, json_response, read_body, run};
use crate::session::{hex, Sessions};
use crate::store::Store;

/// Where the test endpoints live.
pub const PREFIX: &str = "/__test__/";

/// The session secret of every test configuration (test-mode.mjs's): the reset signs the
/// cookies it hands out with it.
const SESSION_SECRET: &str = "edgegrant-test-mode-session-secret-not-for-production";
/// When the sessions test mode hands out end: never, for a test (as the JS hosts' test mode).
const TEST_SESSION_END: u64 = 999_999_999_999;

/// Not a `scrypt$salt$hash`: no password signs a test user in.
const NO_PASSWORD: &str = "!test-mode";

/// The largest control request read (a configuration and its users).
const MAX_BODY: usize = 1 << 20;

/// The largest integer a JS number holds exactly: the JS hosts take no later `now`.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

const NAMES: [&str; 4] = ["reset", "clock", "event", "audit"];

/// A refusal of bad input: 400 (or 404, 405) with `{error}`.
fn refuse(status: StatusCode, why: &str) -> Response {
    json_response(
        status,
        &json!({ "error": why }),
        &[("Cache-Control", "no-store")],
    )
}

fn ok(value: Value) -> Response {
    json_response(StatusCode::OK, &value, &[("Cache-Control", "no-store")])
}

/// `/__test__/<name>`.
pub async fn handle(app: &Arc<App>, method: &Method, name: &str, body: Body) -> Response {
    if !NAMES.contains(&name) {
        drain(body).await;
        return refuse(StatusCode::NOT_FOUND, "no such test endpoint");
    }
    if method != Method::POST {
        drain(body).await;
        return refuse(StatusCode::METHOD_NOT_ALLOWED, "test endpoints take POST");
    }
    let bytes = read_body(body, MAX_BODY + 1).await;
    if bytes.len() > MAX_BODY {
        return refuse(StatusCode::BAD_REQUEST, "the body is too large");
    }
    let body = if bytes.is_empty() {
        Map::new()
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(body)) => body,
            Ok(_) => Map::new(),
            Err(_) => return refuse(StatusCode::BAD_REQUEST, "the body is not JSON"),
        }
    };
    match name {
        "reset" => reset(app, &body).await,
        "clock" => clock(app, &body),
        "event" => event(app, &body).await,
        _ => audit(app),
    }
}

async fn reset(app: &Arc<App>, body: &Map<String, Value>) -> Response {
    let (Some(Value::Object(core)), Some(Value::Array(users))) =
        (body.get("config"), body.get("users"))
    else {
        return refuse(StatusCode::BAD_REQUEST, "reset takes {config, users}");
    };
    let checked = test_users(users).and_then(|accounts| Ok((accounts, core_config(core)?)));
    let (accounts, config) = match checked {
        Ok(checked) => checked,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                &format!("invalid configuration: {e}"),
            )
        }
    };
    let sessions = match Sessions::new(SESSION_SECRET) {
        Ok(sessions) => sessions,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, &e),
    };
    let cookies: Map<String, Value> = accounts
        .iter()
        .map(|a| {
            // Test users' sessions never end: a vector moves the clock by years.
            let cookie = sessions.cookie(a.user.account_id.as_str(), 0, TEST_SESSION_END, false);
            let pair = cookie.split(';').next().unwrap_or_default().to_owned();
            (a.username.clone(), Value::String(pair))
        })
        .collect();
    // A table no earlier reset used, so storage starts empty; the previous one goes.
    let pool = app.pool.clone();
    let table = fresh_table_name();
    let store = match tokio::task::spawn_blocking(move || Store::open(&pool, &table)).await {
        Ok(Ok(store)) => store,
        Ok(Err(e)) => return fault_response(&e.into()),
        Err(_) => return fault_response(&crate::host::Fault::Bug("the store task died")),
    };
    app.replace_site(Site {
        config: Arc::new(config),
        accounts: Arc::new(Accounts::new(accounts)),
        sessions,
        store: store.clone(),
    });
    let previous = app.test_state().and_then(|mut state| {
        state.clock = None;
        state.audit.clear();
        state.web.clear();
        state.fetched.clear();
        state.table.replace(store)
    });
    if let Some(previous) = previous {
        // Best effort: a leftover table in a throwaway database harms nothing.
        let _ = tokio::task::spawn_blocking(move || previous.drop_table()).await;
    }
    ok(json!({ "cookies": cookies }))
}

/// `edgegrant_test_<milliseconds, base 36>_<8 random hex digits>`, like the Node host's.
fn fresh_table_name() -> String {
    let mut millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut base36 = Vec::new();
    loop {
        // A digit below 36 always converts.
        base36.push(char::from_digit((millis % 36) as u32, 36).unwrap_or('0'));
        millis /= 36;
        if millis == 0 {
            break;
        }
    }
    let stamp: String = base36.iter().rev().collect();
    let mut random = [0u8; 4];
    // Without random bytes the time stamp alone still names a new table.
    let _ = getrandom::fill(&mut random);
    let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("edgegrant_test_{stamp}_{random}")
}

/// The users of a reset: `name` (the sign-in name and display name), `account_id`, `uid`; checked
/// as the configuration file's users are (config.rs `accounts`), as test-mode.mjs checks them with
/// parseConfig.
fn test_users(users: &[Value]) -> Result<Vec<Account>, String> {
    let users = users
        .iter()
        .map(|user| {
            let name = user.get("name").cloned().unwrap_or(Value::Null);
            json!({
                "username": name,
                "name": name,
                "account_id": user.get("account_id"),
                "uid": user.get("uid"),
                "password_scrypt": NO_PASSWORD,
            })
        })
        .collect();
    accounts(Some(&Value::Array(users)))
}

fn clock(app: &App, body: &Map<String, Value>) -> Response {
    let now = match body.get("now") {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .filter(|n| *n <= MAX_SAFE_INTEGER),
        _ => None,
    };
    let Some(now) = now else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "now must be an integer (Unix seconds)",
        );
    };
    let entropy = body
        .get("entropy")
        .and_then(Value::as_str)
        .and_then(hex)
        .and_then(|bytes| Entropy::from_slice(&bytes));
    let Some(entropy) = entropy else {
        return refuse(
            StatusCode::BAD_REQUEST,
            &format!("entropy must be the hex of exactly {ENTROPY_LEN} bytes"),
        );
    };
    let web = match body.get("web").map(web) {
        None => HashMap::new(),
        Some(Ok(web)) => web,
        Some(Err(why)) => return refuse(StatusCode::BAD_REQUEST, &why),
    };
    if let Some(mut state) = app.test_state() {
        state.clock = Some((UnixTime(now), entropy));
        state.web = web;
    }
    ok(json!({}))
}

/// The web of `/__test__/clock`: URL → `{status, cache_control, body}` (the body in hex) or
/// `{fails}` (a fetch failure's name).
fn web(value: &Value) -> Result<crate::web::Web, String> {
    let mut web = HashMap::new();
    for (url, answer) in value.as_object().ok_or("web must be an object")? {
        let bad = || format!("web {url}: {{status, cache_control, body: hex}} or {{fails}}");
        let answer = match answer.get("fails").and_then(Value::as_str) {
            Some(name) => Err(FetchFailure::from_name(name).ok_or_else(bad)?),
            None => Ok(Fetched {
                status: answer
                    .get("status")
                    .and_then(Value::as_u64)
                    .and_then(|s| u16::try_from(s).ok())
                    .ok_or_else(bad)?,
                cache_control: answer
                    .get("cache_control")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                body: match answer.get("body") {
                    None => Vec::new(),
                    Some(body) => body.as_str().and_then(hex).ok_or_else(bad)?,
                },
            }),
        };
        web.insert(url.clone(), answer);
    }
    Ok(web)
}

async fn event(app: &Arc<App>, body: &Map<String, Value>) -> Response {
    let text = |field: &str| body.get(field).and_then(Value::as_str);
    match text("kind") {
        Some("unlink") => {
            let by = match body.get("by") {
                None => Some(Unlinker::User),
                Some(Value::String(by)) if by == "user" => Some(Unlinker::User),
                Some(Value::String(by)) if by == "team_admin" => Some(Unlinker::TeamAdmin),
                Some(_) => None,
            };
            let Some(by) = by else {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "unlink: by must be user or team_admin",
                );
            };
            let app_key = text("app")
                .ok_or("unlink takes app")
                .and_then(|a| AppKey::new(a).map_err(|_| "unlink: app is not an app key"));
            let account_id = text("account_id")
                .ok_or("unlink takes account_id")
                .and_then(|a| {
                    AccountId::new(a).map_err(|_| "unlink: account_id is not an account id")
                });
            let (app_key, account_id) = match (app_key, account_id) {
                (Ok(app_key), Ok(account_id)) => (app_key, account_id),
                (Err(why), _) | (_, Err(why)) => return refuse(StatusCode::BAD_REQUEST, why),
            };
            let input = Input::Unlink {
                app: app_key,
                account_id,
                by,
            };
            match run(app.clone(), app.site(), input).await {
                Ok(Finish::Reply(reply)) => ok(json!({ "outcome": reply.outcome.name() })),
                Ok(Finish::Serve(_)) => {
                    fault_response(&crate::host::Fault::Bug("an unlink was served"))
                }
                Err(fault) => fault_response(&fault),
            }
        }
        Some("migrate_app") => {
            let key = text("app").unwrap_or_default();
            let site = app.site();
            match site.config.with_app_migrated(key) {
                Ok(config) => {
                    app.replace_site(Site {
                        config: Arc::new(config),
                        ..(*site).clone()
                    });
                    ok(json!({ "outcome": "migrated" }))
                }
                Err(e) => refuse(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot migrate {key}: {e}"),
                ),
            }
        }
        _ => refuse(
            StatusCode::BAD_REQUEST,
            "event kind must be unlink or migrate_app",
        ),
    }
}

fn audit(app: &App) -> Response {
    let (events, fetched) = app
        .test_state()
        .map(|mut state| {
            (
                std::mem::take(&mut state.audit),
                std::mem::take(&mut state.fetched),
            )
        })
        .unwrap_or_default();
    ok(json!({ "audit": events, "fetched": fetched }))
}
