//! The binary end to end, under concurrency: many clients redeem one authorization code at
//! once over HTTP, each request on its own connection to SQLite. Exactly one gets tokens; the
//! others see the used code (`invalid_grant`) — conditional writes hold across connections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const RACERS: usize = 16;

/// The host in test mode on a free port, killed when dropped.
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

fn start() -> Host {
    let dir = std::env::temp_dir().join(format!("edgegrant-native-race-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.json");
    let users = r#"[{"username": "nobody", "password_scrypt": "!", "account_id": "dbid:AAnobody000000000000000000000000000", "uid": "1"}]"#;
    let secret = "race-test-session-secret-0123456789-0123456789";
    let key = "cmFjZS10ZXN0LXNlcnZlci1rZXktMzItYnl0ZXMtISE";
    let file = format!(
        r#"{{"database": "race.sqlite", "session_secret": "{secret}", "server_key": "{key}", "users": {users}}}"#
    );
    std::fs::write(&config, file).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_edgegrant-native"))
        .arg(&config)
        .args(["--test-mode", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first
        .strip_prefix("edgegrant native host listening on http://")
        .unwrap_or_else(|| panic!("not the listening line: {first}"));
    let address = url.to_owned();
    // The audit lines that follow are read and dropped, so the pipe never fills.
    std::thread::spawn(move || lines.for_each(drop));
    Host {
        child,
        address,
        _dir: Scratch(dir),
    }
}

/// One HTTP/1.1 exchange on a new connection: status and body.
fn exchange(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

#[test]
fn one_code_redeemed_by_many_clients_at_once_gives_tokens_once() {
    let host = start();
    let address = host.address.as_str();
    let setup = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../conformance/setups/standard.json"
    ))
    .unwrap();
    let setup: serde_json::Value = serde_json::from_str(&setup).unwrap();
    let reset =
        serde_json::json!({ "config": setup["config"], "users": setup["users"] }).to_string();
    let (status, answer) = exchange(
        address,
        "POST",
        "/__test__/reset",
        &[("Content-Type", "application/json")],
        &reset,
    );
    assert_eq!(status, 200, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let cookie = answer["cookies"]["alice"].as_str().unwrap().to_owned();

    // alice consents; no redirect_uri, so the page shows the code.
    let consent = form(&[
        ("query", "client_id=conf-app&response_type=code"),
        ("decision", "allow"),
    ]);
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Sec-Fetch-Site", "same-origin"),
        ("Cookie", cookie.as_str()),
    ];
    let (status, page) = exchange(address, "POST", "/oauth2/authorize", &headers, &consent);
    assert_eq!(status, 200, "{page}");
    let code = page
        .split("data-code=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();

    let exchange_body = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("client_id", "conf-app"),
        ("client_secret", "conf-secret-0123456789"),
    ]);
    let statuses: Vec<(u16, String)> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                scope.spawn(|| {
                    let headers = [("Content-Type", "application/x-www-form-urlencoded")];
                    exchange(address, "POST", "/oauth2/token", &headers, &exchange_body)
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let winners = statuses.iter().filter(|(status, _)| *status == 200).count();
    assert_eq!(winners, 1, "{statuses:?}");
    for (status, body) in statuses.iter().filter(|(status, _)| *status != 200) {
        assert_eq!(*status, 400, "{body}");
        assert!(body.contains("invalid_grant"), "{body}");
    }
}
