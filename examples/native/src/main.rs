//! # edgegrant native host
//!
//! The third live host of edgegrant, on the Rust crate alone: axum on tokio for HTTP, SQLite
//! (rusqlite) for the records, and the parts the JS hosts share in examples/host — the
//! configuration file, scrypt sign-in, HMAC session cookies, the page templates
//! (examples/host/pages.json, compiled in), the account API and test mode — written again in
//! Rust. It passes the same conformance corpus over HTTP as the Node and Worker hosts.
//!
//! ```text
//! cargo run -p edgegrant-native-host -- <config.json> [--test-mode] [--port N]
//! ```
//!
//! Every request the host does not answer itself (`/`, `/signin`, test mode's `/__test__/`)
//! becomes one [`edgegrant::Request`], driven by the calling contract of the crate docs
//! ([`host::App::drive`]): the core decides everything else.

mod config;
mod fetch;
mod host;
mod http;
mod session;
mod signatures;
mod store;
mod test_mode;
mod web;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use edgegrant::UnixTime;

use crate::config::Accounts;
use crate::host::{App, Site};
use crate::session::Sessions;
use crate::store::{Pool, Store, DEFAULT_TABLE};

const USAGE: &str = "usage: edgegrant-native <config.json> [--test-mode] [--port N]";

/// How often records past their purge time are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// The command line.
struct Args {
    config: PathBuf,
    test_mode: bool,
    port: Option<u16>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut config = None;
    let mut test_mode = false;
    let mut port = None;
    while let Some(arg) = args.next() {
        let port_text = match arg.as_str() {
            "--test-mode" => {
                test_mode = true;
                continue;
            }
            "--port" => Some(args.next().ok_or("--port takes a number")?),
            other => other.strip_prefix("--port=").map(str::to_owned),
        };
        if let Some(text) = port_text {
            port = Some(text.parse().map_err(|_| format!("not a port: {text}"))?);
        } else if arg.starts_with("--") || config.is_some() {
            return Err(format!("unexpected argument {arg}"));
        } else {
            config = Some(PathBuf::from(arg));
        }
    }
    Ok(Args {
        config: config.ok_or("the configuration file is missing")?,
        test_mode,
        port,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> Result<(), String> {
    let allow_sample_secret = std::env::var("EDGEGRANT_ALLOW_SAMPLE_SECRET").as_deref() == Ok("1");
    let config = config::load(&args.config, allow_sample_secret)?;
    let pool = Pool::open(&config.database)
        .map_err(|e| format!("cannot open {}: {e}", config.database.display()))?;
    let store = Store::open(&pool, DEFAULT_TABLE)
        .map_err(|e| format!("cannot open {}: {e}", config.database.display()))?;
    let site = Site {
        config: Arc::new(config.core),
        accounts: Arc::new(Accounts::new(config.accounts)),
        sessions: Sessions::new(&config.session_secret)?,
        store: store.clone(),
    };
    // Client metadata documents: every address a name resolves to vetted (fetch.rs).
    let fetcher = fetch::Fetcher::system()?;
    let app = Arc::new(App::new(site, pool, args.test_mode, "native host", fetcher));

    let port = args.port.unwrap_or(config.port);
    let listener = tokio::net::TcpListener::bind((config.host.as_str(), port))
        .await
        .map_err(|e| format!("cannot listen on {}:{port}: {e}", config.host))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    // The line a test (or a person) waits for; with --port 0 it names the port chosen.
    println!("edgegrant native host listening on http://{address}");

    // Test mode sets its own clock, so records can look expired to the system clock while a
    // vector still needs them: only a real host purges.
    if !args.test_mode {
        tokio::spawn(purge(store));
    }

    let router = Router::new().fallback(http::handle).with_state(app);
    // With each connection's peer address, which the core counts failed client
    // authentications against.
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .await
    .map_err(|e| format!("the server stopped: {e}"))
}

/// Deletes the records past their purge time, now and every [`PURGE_EVERY`].
async fn purge(store: Store) {
    let mut every = tokio::time::interval(PURGE_EVERY);
    loop {
        every.tick().await;
        let store = store.clone();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        match tokio::task::spawn_blocking(move || store.purge(UnixTime(now))).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => eprintln!("purge failed: {e}"),
            Err(e) => eprintln!("purge failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse_args(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn the_command_line() {
        let parsed = args(&["c.json", "--test-mode", "--port", "0"]).unwrap();
        assert_eq!(parsed.config, PathBuf::from("c.json"));
        assert!(parsed.test_mode);
        assert_eq!(parsed.port, Some(0));
        assert_eq!(args(&["--port=9000", "c.json"]).unwrap().port, Some(9000));
        assert!(!args(&["c.json"]).unwrap().test_mode);
        assert!(args(&[]).is_err());
        assert!(args(&["c.json", "--port"]).is_err());
        assert!(args(&["c.json", "--port", "x"]).is_err());
        assert!(args(&["c.json", "d.json"]).is_err());
        assert!(args(&["c.json", "--verbose"]).is_err());
    }
}
