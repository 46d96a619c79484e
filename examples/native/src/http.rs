//! HTTP: every request comes in here. The host's own pages (`/`, `/signin`) and, in test mode,
//! `/__test__/` are answered here; everything else goes to the core as it arrived, and its
//! reply goes out as it is.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::COOKIE;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
// The headers the core puts on the flow's pages: the host's own pages take them too.
use edgegrant::{
    AccountId, AttemptStep, AttemptVerdict, Attempter, HttpRequest, HttpResponse, Input, Principal,
    Subject, Uid, PAGE_HEADERS,
};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use url::Url;

use crate::config::Account;
use crate::host::{App, Fault, Finish, Site};
use crate::session::{password_matches, spend_password_check, SESSION_SECONDS};
use crate::test_mode;

/// How much of a sign-in form is read (the JS hosts' bound).
const SIGN_IN_FORM_BYTES: usize = 4096;

/// How long the rest of an oversized body is read and dropped before the answer goes out
/// anyway. Reading it keeps the connection: an answer over unread bytes makes the kernel reset
/// it, and the client may lose the answer.
const DRAIN_TIME: Duration = Duration::from_secs(10);

/// The look of the host's pages (examples/host/app.mjs).
const STYLE: &str = concat!(
    "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1e1919}\n",
    "h1{font-size:1.4rem}button,input{font:inherit;padding:.5rem 1rem;border-radius:.4rem;border:1px solid #bbb}\n",
    "button.allow{background:#0061fe;color:#fff;border-color:#0061fe}ul{padding-left:1.2rem}code{font-size:1.1rem;word-break:break-all;background:#f4f4f4;padding:.4rem}</style>",
);

/// The one handler: every method, every path.
pub async fn handle(State(app): State<Arc<App>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    if app.test.is_some() {
        if let Some(name) = path.strip_prefix(test_mode::PREFIX) {
            return test_mode::handle(&app, &parts.method, name, body).await;
        }
    }
    let site = app.site();
    let origin = Origin::of(&parts);
    let now = match app.moment() {
        Ok((now, _)) => now.0,
        Err(fault) => return fault_response(&fault),
    };
    let cookies = || {
        parts
            .headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
    };
    match path {
        "/signin" if parts.method == Method::GET => {
            drain(body).await;
            let return_to = query_value(parts.uri.query().unwrap_or(""), "return_to");
            match local_target(return_to.as_deref(), &origin) {
                Some(target) => sign_in_page(&target, StatusCode::OK, None),
                None => sign_in_page("/", StatusCode::BAD_REQUEST, Some(LEADS_AWAY)),
            }
        }
        "/signin" if parts.method == Method::POST => {
            if is_cross_site(&parts, &origin) {
                drain(body).await;
                return sign_in_page("/", StatusCode::FORBIDDEN, Some(CROSS_SITE));
            }
            sign_in(app, site, body, &origin, source_of(&parts), now).await
        }
        "/signout" if parts.method == Method::POST => {
            drain(body).await;
            if is_cross_site(&parts, &origin) {
                return page(
                    StatusCode::FORBIDDEN,
                    "Sign out",
                    &format!("{STYLE}<h1>Sign out</h1><p>{CROSS_SITE}</p>"),
                );
            }
            let cleared = site.sessions.cleared(origin.secure);
            build(
                StatusCode::SEE_OTHER,
                &[
                    ("Location", "/"),
                    ("Set-Cookie", &cleared),
                    ("Cache-Control", "no-store"),
                ],
                String::new(),
            )
        }
        "/" => {
            drain(body).await;
            let user = site
                .sessions
                .account_id(cookies(), now)
                .and_then(|id| site.accounts.with_account_id(&id).cloned());
            home(&site, app.title, user.as_deref())
        }
        _ => {
            let limit = site.config.body_limit(parts.uri.path());
            // One byte past the limit is enough for the core to refuse the body.
            let body = read_body(body, limit.saturating_add(1)).await;
            let user = site
                .sessions
                .account_id(cookies(), now)
                .and_then(|id| site.accounts.with_account_id(&id).map(|a| a.user.clone()));
            let request = HttpRequest {
                method: parts.method.as_str().to_owned(),
                path: path.to_owned(),
                query: parts.uri.query().unwrap_or("").to_owned(),
                headers: header_pairs(&parts.headers),
                body,
                // The peer's address: failed client authentications are counted against it.
                source: source_of(&parts),
                scheme: Some(origin.scheme().to_owned()),
            };
            serve(app, site, Input::Http { request, user }).await
        }
    }
}

/// Runs a request of the core and answers: its reply, or the API handler's.
async fn serve(app: Arc<App>, site: Arc<Site>, input: Input) -> Response {
    let path = match &input {
        Input::Http { request, .. } => request.path.clone(),
        _ => String::new(),
    };
    match run(app, site.clone(), input).await {
        Ok(Finish::Reply(reply)) => respond(reply.response),
        Ok(Finish::Serve(authorized)) => {
            let mut response = api(&site, &path, &authorized.principal);
            // The core's headers for the answer (no-store, nosniff, CORS), over the handler's.
            for (name, value) in &authorized.headers {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_bytes(value.as_bytes()),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        Err(fault) => fault_response(&fault),
    }
}

/// Runs a request of the core to its end, on a blocking thread (SQLite blocks).
pub async fn run(app: Arc<App>, site: Arc<Site>, input: Input) -> Result<Finish, Fault> {
    let (now, entropy) = app.moment()?;
    let started = edgegrant::Request::start(site.config.clone(), input, now, entropy);
    tokio::task::spawn_blocking(move || app.drive(&site.store, &site.config, started))
        .await
        .unwrap_or(Err(Fault::Bug("the request's task died")))
}

/// Every header as a pair, in the order received per name. Names come lowercased from hyper
/// (HTTP/1.1 names are case-insensitive, and so is the core). Values that are not UTF-8 are
/// read as Latin-1, byte for byte, as node:http reads them.
fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let value = match value.to_str() {
                Ok(text) => text.to_owned(),
                Err(_) => value.as_bytes().iter().map(|&b| char::from(b)).collect(),
            };
            (name.as_str().to_owned(), value)
        })
        .collect()
}

/// The body, up to `keep` bytes; the rest is read and dropped. A body that breaks off counts as
/// ended: the core answers for what arrived.
pub async fn read_body(mut body: Body, keep: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    while bytes.len() < keep {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let room = keep - bytes.len();
                    bytes.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Some(Err(_)) | None => return bytes,
        }
    }
    drain(body).await;
    bytes
}

/// Reads what is left of a body and drops it, for [`DRAIN_TIME`] at most.
pub async fn drain(mut body: Body) {
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while let Some(Ok(_)) = body.frame().await {}
    })
    .await;
}

/// The core's response, as it is.
fn respond(response: HttpResponse) -> Response {
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers: Vec<(&str, &str)> = response
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    build(status, &headers, response.body)
}

/// A response with these headers (in order) and body.
pub fn build(status: StatusCode, headers: &[(&str, &str)], body: String) -> Response {
    let mut response = Response::new(if body.is_empty() {
        Body::empty()
    } else {
        Body::from(body)
    });
    *response.status_mut() = status;
    for (name, value) in headers {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            (Ok(name), Ok(value)) => {
                response.headers_mut().append(name, value);
            }
            _ => eprintln!("dropped a header that HTTP cannot carry: {name}"),
        }
    }
    response
}

/// A JSON answer.
pub fn json_response(status: StatusCode, value: &Value, extra: &[(&str, &str)]) -> Response {
    let mut headers = vec![("Content-Type", "application/json")];
    headers.extend_from_slice(extra);
    build(status, &headers, value.to_string())
}

/// The answer to a fault of the host: logged, and a 5xx that says only that.
pub fn fault_response(fault: &Fault) -> Response {
    eprintln!("host fault: {fault}");
    match fault {
        // Storage down or overloaded: worth a retry.
        Fault::Store(_) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({ "error": "temporarily_unavailable", "error_description": "storage is unavailable, retry" }),
            &[("Retry-After", "1"), ("Cache-Control", "no-store")],
        ),
        _ => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "error": "server_error", "error_description": "the host failed" }),
            &[("Cache-Control", "no-store")],
        ),
    }
}

/// The API handlers: `/2/users/get_current_account`; any other declared endpoint has none.
fn api(site: &Site, path: &str, principal: &Principal) -> Response {
    if path != "/2/users/get_current_account" {
        return json_response(StatusCode::NOT_FOUND, &Value::Null, &[]);
    }
    // An app acting for itself (client credentials) has no account: it is told its own id.
    let (Subject::Account(account_id), Some(uid)) = (&principal.subject, &principal.uid) else {
        let app = json!({"client_id": principal.app.as_str()});
        return json_response(StatusCode::OK, &app, &[]);
    };
    let account = site.accounts.with_account_id(account_id.as_str());
    json_response(
        StatusCode::OK,
        &account_json(account_id, uid, account.map(|a| &**a)),
        &[],
    )
}

/// The account in the reference service's `get_current_account` shape (app.mjs `account()`):
/// every field the official SDKs' FullAccount type requires (the optional ones,
/// `profile_photo_url`, `team`, `team_member_id` and root_info's `home_path`, are left out, as
/// the reference service leaves out what is null). The configuration's checks (config.rs
/// `accounts`) make the user's fields valid for that type.
fn account_json(account_id: &AccountId, uid: &Uid, account: Option<&Account>) -> Value {
    let (username, name, email, country) = match account {
        Some(a) => (
            a.username.as_str(),
            a.name.as_deref(),
            a.email.clone(),
            a.country.as_deref(),
        ),
        None => ("unknown", None, None, None),
    };
    let display_name = name.unwrap_or(username);
    let (given, surname) = display_name.split_once(' ').unwrap_or((display_name, ""));
    let initial = |text: &str| text.chars().next().map(String::from).unwrap_or_default();
    let uid = uid.as_str();
    json!({
        "account_id": account_id.as_str(),
        "name": {
            "given_name": given,
            "surname": surname,
            "familiar_name": given,
            "display_name": display_name,
            "abbreviated_name": initial(given) + &initial(surname),
        },
        "email": email.unwrap_or_else(|| format!("{username}@example.com")),
        "email_verified": true,
        "disabled": false,
        "country": country.unwrap_or("US"),
        "locale": "en",
        // Required, a string; this host runs no referral programme, so there is no link to give.
        "referral_link": "",
        "is_paired": false,
        "account_type": { ".tag": "basic" },
        "root_info": { ".tag": "user", "root_namespace_id": uid, "home_namespace_id": uid },
    })
}

/// Escapes text for HTML content and attribute values.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A page of the host, with the flow's page headers.
fn page(status: StatusCode, title: &str, body_html: &str) -> Response {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title></head><body>{body_html}</body></html>",
        escape_html(title)
    );
    build(status, &PAGE_HEADERS, html)
}

fn home(site: &Site, title: &str, user: Option<&Account>) -> Response {
    let sign_out = user.map_or(String::new(), |account| {
        format!(
            "<p>Signed in as {}.</p><form method=\"post\" action=\"/signout\"><button>Sign out</button></form>",
            escape_html(&account.username)
        )
    });
    page(
        StatusCode::OK,
        "edgegrant",
        &format!(
            "{STYLE}<h1>edgegrant {}</h1><p>Authorization server for {} app(s).</p>{sign_out}",
            escape_html(title),
            site.config.apps().count()
        ),
    )
}

/// The sign-in page: 200, or with the status of a refusal and its message (403 for refused
/// credentials or a cross-site post, 400 for a `return_to` that leads off the host, 429 while
/// sign-in is held).
fn sign_in_page(return_to: &str, status: StatusCode, error: Option<&str>) -> Response {
    let error = error.map_or(String::new(), |e| {
        format!("<p style=\"color:#c00\">{}</p>", escape_html(e))
    });
    page(
        status,
        "Sign in",
        &format!(
            "{STYLE}<h1 data-page=\"sign_in\">Sign in</h1>{error}
    <form method=\"post\" action=\"/signin\"><input type=\"hidden\" name=\"return_to\" value=\"{}\">
    <p><input name=\"username\" placeholder=\"username\" autocomplete=\"username\" required></p>
    <p><input name=\"password\" type=\"password\" placeholder=\"password\" autocomplete=\"current-password\" required></p>
    <p><button class=\"allow\">Sign in</button></p></form>",
            escape_html(return_to)
        ),
    )
}

/// `POST /signin`: the form's username and password, limited per account name and source by
/// the core's attempt limits; on success back to `return_to` (on this host) with the session
/// cookie.
async fn sign_in(
    app: Arc<App>,
    site: Arc<Site>,
    body: Body,
    origin: &Origin,
    source: Option<String>,
    now: u64,
) -> Response {
    let form = read_body(body, SIGN_IN_FORM_BYTES).await;
    let field = |name: &str| {
        form_urlencoded::parse(&form)
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.into_owned())
    };
    let Some(return_to) = local_target(field("return_to").as_deref(), origin) else {
        return sign_in_page("/", StatusCode::BAD_REQUEST, Some(LEADS_AWAY));
    };
    let username = field("username").unwrap_or_default();
    let password = field("password").unwrap_or_default();
    let mut attempters = vec![Attempter::Account(username.clone())];
    attempters.extend(source.map(Attempter::Source));
    let attempts = |step| Input::Attempts {
        attempters: attempters.clone(),
        step,
    };
    let wrong = || {
        // 403: credentials given and refused (a 401 would need a WWW-Authenticate challenge).
        sign_in_page(
            &return_to,
            StatusCode::FORBIDDEN,
            Some("Wrong username or password."),
        )
    };
    // The check is counted before it runs (atomically: posts racing each other never pass the
    // limit together), and taken back once it succeeds.
    let reply = match run(app.clone(), site.clone(), attempts(AttemptStep::Reserve)).await {
        Ok(Finish::Reply(reply)) => reply,
        Ok(Finish::Serve(_)) => return fault_response(&Fault::Bug("a sign-in check was served")),
        Err(fault) => return fault_response(&fault),
    };
    let held = match reply.attempt_verdict() {
        AttemptVerdict::Allowed => None,
        // A name no one can have typed (empty, control characters): no such account, and
        // nothing to count against it.
        AttemptVerdict::Malformed => return wrong(),
        AttemptVerdict::Limited(wait) => Some((
            StatusCode::TOO_MANY_REQUESTS,
            "Too many failed sign-ins. Try again later.",
            wait,
        )),
        // The store failed (an outage, contention): no one's limit; 503, as the OAuth
        // endpoints answer then.
        AttemptVerdict::Unavailable(wait) => Some((
            StatusCode::SERVICE_UNAVAILABLE,
            "The service is unavailable; try again shortly.",
            wait,
        )),
    };
    if let Some((status, message, wait)) = held {
        // The page, with the wait the core decided.
        let mut page = sign_in_page(&return_to, status, Some(message));
        if let Ok(value) = HeaderValue::from_str(&wait.0.to_string()) {
            page.headers_mut().insert("retry-after", value);
        }
        return page;
    }
    let account = site.accounts.named(&username).cloned();
    // scrypt is slow on purpose: off the async threads.
    let signed_in = tokio::task::spawn_blocking(move || match account {
        Some(account) if password_matches(&account.password_scrypt, &password) => Some(account),
        Some(_) => None,
        None => {
            spend_password_check(&password);
            None
        }
    })
    .await
    .ok()
    .flatten();
    match signed_in {
        Some(account) => {
            // Its count taken back (a store failing here costs the user one count, no more).
            let _ = run(app, site.clone(), attempts(AttemptStep::Succeeded)).await;
            let cookie = site.sessions.cookie(
                account.user.account_id.as_str(),
                now,
                now.saturating_add(SESSION_SECONDS),
                origin.secure,
            );
            build(
                StatusCode::SEE_OTHER,
                &[
                    ("Location", &return_to),
                    ("Set-Cookie", &cookie),
                    ("Cache-Control", "no-store"),
                ],
                String::new(),
            )
        }
        // Counted already, before the check.
        None => wrong(),
    }
}

const LEADS_AWAY: &str = "That link would lead away from this site.";
const CROSS_SITE: &str = "This form was sent from another site.";

/// This host's origin as the request names it: the scheme of its target (https when a proxy
/// or the client says so in the absolute form), or http; the `Host` header's authority.
pub struct Origin {
    /// `scheme://host[:port]`.
    text: String,
    /// Served over https: the session cookie is `Secure`.
    secure: bool,
}

impl Origin {
    /// `https` or `http`.
    fn scheme(&self) -> &'static str {
        if self.secure {
            "https"
        } else {
            "http"
        }
    }

    fn of(parts: &axum::http::request::Parts) -> Origin {
        let secure = parts.uri.scheme_str() == Some("https");
        let host = parts
            .uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| {
                parts
                    .headers
                    .get(axum::http::header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "localhost".to_owned());
        let scheme = if secure { "https" } else { "http" };
        Origin {
            text: format!("{scheme}://{host}"),
            secure,
        }
    }
}

/// Login CSRF: the rule the consent form follows, from the core (the scheme is the origin's: a
/// form from the same host on the other scheme is another site's).
fn is_cross_site(parts: &axum::http::request::Parts, origin: &Origin) -> bool {
    let mut request = HttpRequest::new("POST", "/", "");
    request.headers = header_pairs(&parts.headers);
    request.scheme = Some(origin.scheme().to_owned());
    request.is_cross_site()
}

/// The peer's address: failed checks are counted against it.
fn source_of(parts: &axum::http::request::Parts) -> Option<String> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip().to_string())
}

/// The first value of `name` in a query string.
fn query_value(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.into_owned())
}

/// Where to send the browser after it signs in: `target` resolved as the browser will resolve
/// it (WHATWG URL, from this host's root), as a path on this host, or `None` when it leads
/// anywhere else. The path is the URL's own serialization (percent-encoded, no control
/// characters); one that starts with `//` gets `/.` in front, as the URL standard serializes
/// such paths, so no browser reads it as another host.
fn local_target(target: Option<&str>, origin: &Origin) -> Option<String> {
    let root = Url::parse(&format!("{}/", origin.text)).ok()?;
    let url = root.join(target.unwrap_or("/")).ok()?;
    if url.origin() != root.origin() {
        return None;
    }
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    if let Some(fragment) = url.fragment() {
        path.push('#');
        path.push_str(fragment);
    }
    Some(if path.starts_with("//") {
        format!("/.{path}")
    } else {
        path
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_targets_on_this_host_are_followed() {
        let origin = Origin {
            text: "http://127.0.0.1:8787".into(),
            secure: false,
        };
        let target = |t: &str| local_target(Some(t), &origin);
        assert_eq!(
            target("/oauth2/authorize?x=1").as_deref(),
            Some("/oauth2/authorize?x=1")
        );
        assert_eq!(target("//evil.example/"), None);
        assert_eq!(target("/\\evil.example"), None);
        assert_eq!(
            target("/\t/evil.example"),
            None,
            "a tab is stripped: //evil"
        );
        assert_eq!(target("https://evil.example/"), None);
        assert_eq!(
            target("/.//evil.example").as_deref(),
            Some("/.//evil.example")
        );
        assert_eq!(target("/a\r\nb").as_deref(), Some("/ab"));
        assert_eq!(local_target(None, &origin).as_deref(), Some("/"));
    }

    #[test]
    fn the_account_has_the_js_hosts_shape() {
        let account_id = AccountId::new("dbid:x").unwrap();
        let value = account_json(&account_id, &Uid::new("7").unwrap(), None);
        assert_eq!(value["name"]["display_name"], "unknown");
        assert_eq!(value["name"]["abbreviated_name"], "u");
        assert_eq!(value["email"], "unknown@example.com");
        assert_eq!(value["root_info"]["home_namespace_id"], "7");
        assert_eq!(value["referral_link"], "");
        // Every field the official SDKs' FullAccount type requires, as app.mjs `account()` has them.
        let mut fields: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "account_id",
                "account_type",
                "country",
                "disabled",
                "email",
                "email_verified",
                "is_paired",
                "locale",
                "name",
                "referral_link",
                "root_info",
            ]
        );
    }
}
