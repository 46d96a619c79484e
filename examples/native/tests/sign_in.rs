//! The host's own sign-in and sessions over HTTP, as a browser meets them: where `return_to`
//! leads after a real sign-in, login CSRF, the status of a refused sign-in, the session's end by
//! the server's clock, sign-out, the `Secure` cookie over https, and the sample's placeholder
//! `session_secret`. The twin of the JS hosts' suite (examples/host/sign-in-suite.mjs).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use url::Url;

/// The host on a free port, killed when dropped.
struct Host {
    child: Child,
    address: String,
    _dir: Scratch,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ALICE: [(&str, &str); 2] = [("username", "alice"), ("password", "alice-password")];

/// A folder of its own holding the sample configuration (users alice and bob), for `name`.
fn sample_config(name: &str) -> (Scratch, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "edgegrant-native-signin-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.json");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../node/config.sample.json"),
        &config,
    )
    .unwrap();
    (Scratch(dir), config)
}

fn binary(config: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_edgegrant-native"));
    command
        .arg(config)
        .args(["--port", "0"])
        .env_remove("EDGEGRANT_ALLOW_SAMPLE_SECRET");
    command
}

/// The host on the sample configuration, in test mode (its clock can be set), with the demo's
/// opt-in to the sample's secret.
fn start(name: &str) -> Host {
    let (dir, config) = sample_config(name);
    let mut child = binary(&config)
        .arg("--test-mode")
        .env("EDGEGRANT_ALLOW_SAMPLE_SECRET", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let address = first
        .strip_prefix("edgegrant native host listening on http://")
        .unwrap_or_else(|| panic!("not the listening line: {first}"))
        .to_owned();
    // The audit lines that follow are read and dropped, so the pipe never fills.
    std::thread::spawn(move || lines.for_each(drop));
    Host {
        child,
        address,
        _dir: dir,
    }
}

/// An answer: status, headers (names lower case, in order), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `name=value` of the `Set-Cookie` header.
    fn cookie(&self) -> Option<&str> {
        self.header("set-cookie")
            .map(|c| c.split(';').next().unwrap_or_default())
    }

    /// The `data-page` of the page.
    fn page(&self) -> Option<&str> {
        self.body
            .split("data-page=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
    }
}

/// One HTTP/1.1 exchange on a new connection; `target` goes on the request line as it is.
fn exchange(
    address: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request =
        format!("{method} {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.get(9..12))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

/// Posts the sign-in form as alice (`return_to` last: a long one is the part cut off).
fn sign_in(address: &str, return_to: &str, headers: &[(&str, &str)]) -> Answer {
    let mut all = vec![FORM];
    all.extend_from_slice(headers);
    let mut fields = ALICE.to_vec();
    fields.push(("return_to", return_to));
    exchange(address, "POST", "/signin", &all, &form(&fields))
}

fn set_clock(address: &str, now: u64) {
    let body = format!(
        r#"{{"now": {now}, "entropy": "{}"}}"#,
        "07".repeat(edgegrant::ENTROPY_LEN)
    );
    let answer = exchange(
        address,
        "POST",
        "/__test__/clock",
        &[("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
}

/// The JS suite's list (examples/host/sign-in-suite.mjs `hostileReturnTo`).
fn hostile_return_to(host: &str) -> Vec<String> {
    let mut values: Vec<String> = [
        "//evil.example",
        "//evil.example/path",
        "///evil.example",
        "////evil.example",
        "/\\evil.example",
        "/\\\\evil.example",
        "\\\\evil.example",
        "\\/evil.example",
        "/\\/evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r/evil.example",
        "/\r\n/evil.example",
        "\t//evil.example",
        " //evil.example",
        "\u{0}//evil.example",
        "/\u{0}/evil.example",
        "/a\u{0}b",
        "/a\nb",
        "/a\r\nSet-Cookie: x=1",
        "/a\tb",
        "https:evil.example",
        "http:evil.example",
        "https:/evil.example",
        "https://evil.example/",
        "HTTP://evil.example",
        "ftp://evil.example/",
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "/%2F%2Fevil.example",
        "/%2f/evil.example",
        "%2F%2Fevil.example",
        "/%5Cevil.example",
        "/%09/evil.example",
        "/.//evil.example",
        "/..//evil.example",
        "/./../..//evil.example",
        "//@evil.example",
        "/@evil.example",
        "//user:pass@evil.example",
        "https://user@evil.example",
        "//évil.example",
        "/ü",
        "/日本語?q=é#ß",
        "/\u{3000}/evil.example",
        "\u{FF0F}\u{FF0F}evil.example",
        "/\u{2028}/evil.example",
        "/\u{85}/evil.example",
        "",
        "?next=1",
        "#top",
        "signin",
        "..",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    values.extend([
        format!("//{host}@evil.example"),
        format!("http://{host}@evil.example/"),
        format!("http://evil.example\\@{host}/"),
        format!("http://evil.example#@{host}/"),
        format!("http://{host}.evil.example/"),
        format!("http://{host}/oauth2/authorize?client_id=x"),
        format!("http://user:pass@{host}/account"),
        format!("/{}", "a".repeat(3000)),
        format!("//{}.example", "a".repeat(3000)),
    ]);
    values
}

#[test]
fn a_return_to_that_would_lead_off_the_host_gets_a_400_page_the_rest_a_303_on_the_host_never_a_5xx()
{
    let host = start("return-to");
    let address = host.address.as_str();
    let root = Url::parse(&format!("http://{address}/")).unwrap();
    let sign_in_url = root.join("/signin").unwrap();
    let values = hostile_return_to(address);
    // Two at a time: scrypt is slow in a debug build.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = values
            .chunks(values.len().div_ceil(2))
            .map(|chunk| {
                let (root, sign_in_url) = (&root, &sign_in_url);
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|value| {
                            check_return_to(address, root, sign_in_url, value).err()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // A request line too long for any server: refused, never a 5xx.
    let huge = exchange(
        address,
        "GET",
        &format!("/signin?return_to=/{}", "a".repeat(100_000)),
        &[],
        "",
    );
    assert!((400..500).contains(&huge.status), "{}", huge.status);
}

/// Signs in with `value` as `return_to`, then asks for the sign-in page with it.
fn check_return_to(
    address: &str,
    root: &Url,
    sign_in_url: &Url,
    value: &str,
) -> Result<(), String> {
    let shown = format!("{:?}", value.chars().take(80).collect::<String>());
    // Where a browser would go if the value were the Location as it is (WHATWG URL), a relative
    // one taken from the host's root.
    let raw = root.join(value).ok();
    let leaves = raw.as_ref().is_none_or(|raw| raw.origin() != root.origin());
    let answer = sign_in(address, value, &[]);
    if answer.status >= 500 {
        return Err(format!("{shown}: {} {}", answer.status, answer.body));
    }
    if answer.status == 303 {
        if leaves {
            return Err(format!(
                "{shown} leads a browser off the host, yet sign-in redirected"
            ));
        }
        let location = answer.header("location").unwrap_or_default();
        let plain = location.starts_with('/')
            && !location.starts_with("//")
            && !location.starts_with("/\\")
            && location.bytes().all(|b| (0x21..0x7f).contains(&b));
        let landed = sign_in_url.join(location).ok();
        if !plain || landed.as_ref().map(Url::origin) != Some(root.origin()) {
            return Err(format!("{shown}: Location {location:?}"));
        }
        if value.len() < 1000 {
            let mut raw = raw.unwrap_or_else(|| root.clone());
            let _ = raw.set_username("");
            let _ = raw.set_password(None);
            if landed.as_ref() != Some(&raw) {
                return Err(format!("{shown}: Location {location:?}, not {raw}"));
            }
        }
        if answer.cookie().is_none_or(|c| c.len() <= "session=".len()) {
            return Err(format!("{shown}: no session cookie"));
        }
    } else if answer.status != 400
        || answer.header("set-cookie").is_some()
        || answer.page() != Some("sign_in")
    {
        return Err(format!(
            "{shown}: {} {:?} {}",
            answer.status,
            answer.header("set-cookie"),
            answer.body
        ));
    }
    let query = form(&[("return_to", value)]);
    let page = exchange(address, "GET", &format!("/signin?{query}"), &[], "");
    match page.status {
        400 => Ok(()),
        200 if !leaves => Ok(()),
        status => Err(format!("GET {shown}: {status}")),
    }
}

#[test]
fn a_cross_site_sign_in_post_gets_a_403_page_and_no_cookie_a_same_origin_one_signs_in() {
    let host = start("csrf");
    let address = host.address.as_str();
    let origin = format!("http://{address}");
    let cross_site: [&[(&str, &str)]; 6] = [
        &[("Origin", "https://evil.example")],
        &[("Origin", "null")],
        &[("Sec-Fetch-Site", "cross-site")],
        &[
            ("Sec-Fetch-Site", "same-site"),
            ("Origin", "http://sub.example"),
        ],
        &[("Sec-Fetch-Site", "none")],
        &[("Sec-Fetch-Site", "cross-site"), ("Origin", &origin)],
    ];
    for headers in cross_site {
        let answer = sign_in(address, "/", headers);
        assert_eq!(answer.status, 403, "{headers:?}: {}", answer.body);
        assert_eq!(answer.header("set-cookie"), None, "{headers:?}");
        assert_eq!(answer.page(), Some("sign_in"));
    }
    let same_origin: [&[(&str, &str)]; 4] = [
        &[],
        &[("Origin", &origin)],
        &[("Sec-Fetch-Site", "same-origin")],
        &[("Sec-Fetch-Site", "same-origin"), ("Origin", "null")],
    ];
    for headers in same_origin {
        let answer = sign_in(address, "/", headers);
        assert_eq!(answer.status, 303, "{headers:?}: {}", answer.body);
        assert!(answer.cookie().unwrap_or_default().len() > "session=".len());
    }
}

#[test]
fn a_wrong_password_or_an_unknown_user_is_a_403_sign_in_page() {
    let host = start("wrong-password");
    let address = host.address.as_str();
    for fields in [
        vec![("username", "alice"), ("password", "nope")],
        vec![("username", "mallory"), ("password", "alice-password")],
        vec![],
    ] {
        let mut fields = fields;
        fields.push(("return_to", "/"));
        let answer = exchange(address, "POST", "/signin", &[FORM], &form(&fields));
        assert_eq!(answer.status, 403, "{fields:?}");
        assert_eq!(answer.header("set-cookie"), None);
        assert_eq!(answer.page(), Some("sign_in"));
        assert!(answer.body.contains("Wrong username or password"));
    }
}

/// The sample's public PKCE app, for a page that needs a signed-in user.
const AUTHORIZE: &str = "/oauth2/authorize?client_id=demo-pkce-app&response_type=code&redirect_uri=http%3A%2F%2F127.0.0.1%3A8788%2Fcallback&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256";

#[test]
fn the_server_ends_a_session_a_day_after_sign_in_by_its_own_clock() {
    let host = start("expiry");
    let address = host.address.as_str();
    let at = 1_900_000_000;
    set_clock(address, at);
    let answer = sign_in(address, "/", &[]);
    assert_eq!(answer.status, 303);
    let set_cookie = answer.header("set-cookie").unwrap();
    for attribute in ["Max-Age=86400", "HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(
            set_cookie.split("; ").any(|a| a == attribute),
            "{set_cookie}"
        );
    }
    assert!(!set_cookie.contains("Secure"), "served over http");
    let cookie = answer.cookie().unwrap().to_owned();
    let authorize = |cookie: &str| {
        exchange(address, "GET", AUTHORIZE, &[("Cookie", cookie)], "")
            .page()
            .map(str::to_owned)
    };
    assert_eq!(authorize(&cookie).as_deref(), Some("consent"));
    set_clock(address, at + 86_399);
    assert_eq!(authorize(&cookie).as_deref(), Some("consent"));
    set_clock(address, at + 86_400);
    assert_eq!(
        authorize(&cookie).as_deref(),
        Some("sign_in"),
        "a day later the cookie no longer signs anyone in"
    );
    // The cookie carries its end, under the signature.
    let parts: Vec<&str> = cookie["session=".len()..].split('.').collect();
    assert_eq!(parts.len(), 3, "{cookie}");
    assert_eq!(parts[1], (at + 86_400).to_string());
    let stretched = format!("session={}.{}.{}", parts[0], at + 2 * 86_400, parts[2]);
    assert_eq!(authorize(&stretched).as_deref(), Some("sign_in"));
}

#[test]
fn sign_out_is_csrf_checked_clears_the_cookie_and_goes_home() {
    let host = start("sign-out");
    let address = host.address.as_str();
    let origin = format!("http://{address}");
    let cookie = sign_in(address, "/", &[]).cookie().unwrap().to_owned();
    let home = exchange(address, "GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(home.status, 200);
    assert!(
        home.body
            .contains("<form method=\"post\" action=\"/signout\">"),
        "{}",
        home.body
    );
    assert!(!exchange(address, "GET", "/", &[], "")
        .body
        .contains("action=\"/signout\""));
    for cross in [
        ("Origin", "https://evil.example"),
        ("Sec-Fetch-Site", "cross-site"),
    ] {
        let refused = exchange(
            address,
            "POST",
            "/signout",
            &[FORM, ("Cookie", &cookie), cross],
            "",
        );
        assert_eq!(refused.status, 403, "{cross:?}");
        assert_eq!(refused.header("set-cookie"), None);
    }
    let out = exchange(
        address,
        "POST",
        "/signout",
        &[FORM, ("Cookie", &cookie), ("Origin", &origin)],
        "",
    );
    assert_eq!(out.status, 303);
    assert_eq!(out.header("location"), Some("/"));
    let cleared = out.header("set-cookie").unwrap_or_default();
    assert!(cleared.starts_with("session=;"), "{cleared}");
    assert!(cleared.split("; ").any(|a| a == "Max-Age=0"), "{cleared}");
    assert!(cleared.split("; ").any(|a| a == "Path=/"), "{cleared}");
    assert!(!cleared.contains("Secure"), "{cleared}");
}

#[test]
fn over_https_the_session_cookie_and_the_one_that_clears_it_are_secure() {
    let host = start("secure");
    let address = host.address.as_str();
    // The request's URL is https when its target says so (absolute form, RFC 9112 §3.2.2).
    let origin = format!("https://{address}");
    let headers = [FORM, ("Origin", origin.as_str())];
    let mut fields = ALICE.to_vec();
    fields.push(("return_to", "/"));
    let signed_in = exchange(
        address,
        "POST",
        &format!("{origin}/signin"),
        &headers,
        &form(&fields),
    );
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    let cookie = signed_in.header("set-cookie").unwrap_or_default();
    assert!(cookie.split("; ").any(|a| a == "Secure"), "{cookie}");
    let out = exchange(address, "POST", &format!("{origin}/signout"), &headers, "");
    assert_eq!(out.status, 303);
    let cleared = out.header("set-cookie").unwrap_or_default();
    assert!(cleared.split("; ").any(|a| a == "Secure"), "{cleared}");
}

#[test]
fn the_samples_placeholder_secret_stops_the_host_unless_the_demo_opts_in() {
    let (_dir, config) = sample_config("placeholder");
    let refused = binary(&config).output().unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("session_secret is the sample configuration's placeholder"),
        "{stderr}"
    );
    assert!(
        stderr.contains("randomBytes(32)"),
        "says how to make one: {stderr}"
    );
    assert!(
        stderr.contains("EDGEGRANT_ALLOW_SAMPLE_SECRET=1"),
        "{stderr}"
    );

    let mut demo = binary(&config)
        .env("EDGEGRANT_ALLOW_SAMPLE_SECRET", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let first = BufReader::new(demo.stdout.take().unwrap())
        .lines()
        .next()
        .map(Result::unwrap)
        .unwrap_or_default();
    let _ = demo.kill();
    let _ = demo.wait();
    assert!(
        first.starts_with("edgegrant native host listening on http://"),
        "{first}"
    );
}
