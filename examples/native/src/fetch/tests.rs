//! The fetch against the addresses and URLs the package's tests name, and against a real HTTPS
//! server of the tests' own (a certificate authority made with rcgen): what is refused before
//! any connection, what each answer is, the size and the deadline.
//!
//! A name that resolves to loopback: this machine has no resolver that maps a dotted name there
//! (offline; the hosts file names single labels only, which the URL check refuses before any
//! lookup), so the tests that need one give the fetcher a table as its resolver — the fetcher's
//! own vetting judges the table's answers as it judges the system's. `localhost` goes through
//! the system's resolver.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use edgegrant::{Fetch, FetchFailure, Fetched};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{classify, system_resolver, target, Fetcher, Resolver};

// ---------------------------------------------------------------------------------------------
// Addresses

/// `[address, special-use?]`, both sides of each boundary: the package's table
/// (pkg/test/documents.test.mjs) in the forms an address takes once parsed.
const ADDRESSES: &[(&str, bool)] = &[
    ("0.0.0.0", true),
    ("0.255.255.255", true),
    ("1.0.0.0", false),
    ("9.255.255.255", false),
    ("10.0.0.0", true),
    ("10.255.255.255", true),
    ("11.0.0.0", false),
    ("100.63.255.255", false),
    ("100.64.0.0", true),
    ("100.100.100.200", true),
    ("100.127.255.255", true),
    ("100.128.0.0", false),
    ("126.255.255.255", false),
    ("127.0.0.1", true),
    ("127.255.255.255", true),
    ("128.0.0.0", false),
    ("169.253.255.255", false),
    ("169.254.0.0", true),
    ("169.254.169.254", true),
    ("169.254.255.255", true),
    ("169.255.0.0", false),
    ("172.15.255.255", false),
    ("172.16.0.0", true),
    ("172.31.255.255", true),
    ("172.32.0.0", false),
    ("191.255.255.255", false),
    ("192.0.0.0", true),
    ("192.0.0.255", true),
    ("192.0.1.0", false),
    ("192.0.2.0", true),
    ("192.0.2.255", true),
    ("192.0.3.0", false),
    ("192.31.196.1", true),
    ("192.52.193.1", true),
    ("192.88.98.255", false),
    ("192.88.99.0", true),
    ("192.88.99.255", true),
    ("192.88.100.0", false),
    ("192.167.255.255", false),
    ("192.168.0.0", true),
    ("192.168.255.255", true),
    ("192.169.0.0", false),
    ("192.175.48.1", true),
    ("198.17.255.255", false),
    ("198.18.0.0", true),
    ("198.19.255.255", true),
    ("198.20.0.0", false),
    ("198.51.99.255", false),
    ("198.51.100.0", true),
    ("198.51.100.255", true),
    ("198.51.101.0", false),
    ("203.0.112.255", false),
    ("203.0.113.0", true),
    ("203.0.113.255", true),
    ("203.0.114.0", false),
    ("223.255.255.255", false),
    ("224.0.0.0", true),
    ("239.255.255.255", true),
    ("240.0.0.0", true),
    ("255.255.255.255", true),
    ("8.8.8.8", false),
    ("1.1.1.1", false),
    ("93.184.215.14", false),
    ("::", true),
    ("::1", true),
    ("::2", true),
    ("::ffff:127.0.0.1", true),
    ("::ffff:7f00:1", true),
    ("::ffff:169.254.169.254", true),
    ("::ffff:10.0.0.1", true),
    ("::ffff:8.8.8.8", false),
    ("::127.0.0.1", true),
    ("::8.8.8.8", true),
    ("64:ff9b::8.8.8.8", false),
    ("64:ff9b::127.0.0.1", true),
    ("64:ff9b::a9fe:a9fe", true),
    ("64:ff9b::a00:1", true),
    ("64:ff9b:1::1", true),
    ("100::1", true),
    ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
    ("2000::", false),
    ("2001::1", true),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", true),
    ("2001:1ff:ffff::1", true),
    ("2001:200::1", false),
    ("2001:db7:ffff::1", false),
    ("2001:db8::1", true),
    ("2001:db9::1", false),
    ("2001:4860:4860::8888", false),
    ("2002::1", true),
    ("2002:7f00:1::1", true),
    ("2003::1", false),
    ("2606:4700::1", false),
    ("2620:4f:8000::1", true),
    ("2620:4f:8001::1", false),
    ("2a00:1450:4001::200e", false),
    ("3ffe:ffff::1", false),
    ("3fff::1", true),
    ("4000::1", true),
    ("fbff:ffff::1", true),
    ("fc00::1", true),
    ("fd00:ec2::254", true),
    ("fdff:ffff::1", true),
    ("fe80::1", true),
    ("febf:ffff::1", true),
    ("fec0::1", true),
    ("ff02::1", true),
    ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
];

#[test]
fn special_use_addresses_on_both_sides_of_each_range() {
    let wrong: Vec<_> = ADDRESSES
        .iter()
        .filter(|(text, special)| {
            let ip: IpAddr = text.parse().expect(text);
            classify(ip).special != *special
        })
        .collect();
    assert_eq!(wrong, Vec::<&(&str, bool)>::new());
}

#[test]
fn loopback_is_127_8_and_1_and_their_mapped_forms_only() {
    for text in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] {
        assert!(classify(text.parse().expect(text)).loopback, "{text}");
    }
    for text in [
        "0.0.0.0",
        "::",
        "10.0.0.1",
        "64:ff9b::127.0.0.1",
        "fe80::1",
        "::127.0.0.1",
    ] {
        assert!(!classify(text.parse().expect(text)).loopback, "{text}");
    }
}

#[test]
fn a_scoped_ipv6_address_is_never_permitted() {
    let scoped = SocketAddr::V6(std::net::SocketAddrV6::new(
        "2606:4700::1".parse().expect("address"),
        443,
        0,
        2,
    ));
    assert!(!super::permitted(&scoped, true));
    assert!(super::permitted(
        &"[2606:4700::1]:443".parse().expect("address"),
        false
    ));
}

// ---------------------------------------------------------------------------------------------
// URLs

const REFUSED_URLS: &[&str] = &[
    "http://client.example.com/c",
    "ftp://client.example.com/c",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "not a url",
    "https://user:pw@client.example.com/c",
    "https://user@client.example.com/c",
    "https://:pw@client.example.com/c",
    "https://localhost/c",
    "https://localhost./c",
    "https://LOCALHOST:8443/c",
    "https://app.localhost/c",
    "https://[::1]/c",
    "https://127.0.0.1/c",
    "https://127.1/c",
    "https://2130706433/c",
    "https://0x7f.0.0.1/c",
    "https://017700000001/c",
    "https://0.0.0.0/c",
    "https://0/c",
    "https://10.0.0.1/c",
    "https://169.254.169.254/latest/meta-data/",
    "https://[::ffff:169.254.169.254]/c",
    "https://[::ffff:127.0.0.1]/c",
    "https://[64:ff9b::a9fe:a9fe]/c",
    "https://[fd00:ec2::254]/latest/meta-data/",
    "https://[fe80::1]/c",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://metadata/computeMetadata/v1/",
    "https://intranet/c",
    "https://printer.local/c",
    "https://router.home.arpa/c",
    "https://1.0.0.127.in-addr.arpa/c",
    "https://db.localdomain/c",
    "https://svc.corp/c",
    "https://hidden.onion/c",
    "https://x.invalid/c",
];

const ALLOWED_URLS: &[&str] = &[
    "https://client.example.com/metadata.json",
    "https://client.example.com:8443/c?v=1",
    "https://CLIENT.Example.com./c",
    "https://localhost.example.com/c",
    "https://app.test/c",
    "https://8.8.8.8/c",
    "https://[2606:4700::1]/c",
    "https://[64:ff9b::808:808]/c",
    "https://xn--bcher-kva.example/c",
];

#[test]
fn urls_that_are_not_https_carry_userinfo_or_name_a_local_place_are_refused() {
    let wrong: Vec<_> = REFUSED_URLS
        .iter()
        .filter(|url| target(url, false).is_some())
        .collect();
    assert_eq!(wrong, Vec::<&&str>::new());
}

#[test]
fn public_https_urls_are_admitted_with_their_host_header_and_path() {
    let wrong: Vec<_> = ALLOWED_URLS
        .iter()
        .filter(|url| target(url, false).is_none())
        .collect();
    assert_eq!(wrong, Vec::<&&str>::new());
    let with_port = target("https://client.example.com:8443/c?v=1#f", false).expect("admitted");
    assert_eq!(
        (
            with_port.port,
            with_port.authority.as_str(),
            with_port.path.as_str()
        ),
        (8443, "client.example.com:8443", "/c?v=1")
    );
    let default_port = target("https://client.example.com:443/c", false).expect("admitted");
    assert_eq!(
        (default_port.port, default_port.authority.as_str()),
        (443, "client.example.com")
    );
}

#[test]
fn allow_loopback_admits_loopback_only() {
    for url in [
        "https://localhost:8443/c",
        "https://app.localhost/c",
        "https://127.0.0.1/c",
        "https://127.1/c",
        "https://2130706433/c",
        "https://[::1]/c",
        "https://[::ffff:127.0.0.1]/c",
    ] {
        assert!(target(url, true).is_some(), "{url}");
    }
    for url in [
        "http://localhost/c",
        "https://0.0.0.0/c",
        "https://10.0.0.1/c",
        "https://169.254.169.254/c",
        "https://[fe80::1]/c",
        "https://[64:ff9b::127.0.0.1]/c",
        "https://metadata/c",
        "https://u@localhost/c",
    ] {
        assert!(target(url, true).is_none(), "{url}");
    }
}

// ---------------------------------------------------------------------------------------------
// Against a real HTTPS server

const DOC: &str = r#"{"client_id":"https://docs.example/c","client_name":"Example","redirect_uris":["https://docs.example/cb"]}"#;
const MAX: u32 = 1000;
const TIMEOUT: u32 = 300;

/// What the server saw of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    path: String,
    host: String,
    accept: String,
    servername: Option<String>,
}

/// The tests' HTTPS server on 127.0.0.1, with a certificate for `localhost`, `docs.example`,
/// `other.test` is not in it, and 127.0.0.1.
struct Server {
    port: u16,
    root: CertificateDer<'static>,
    connections: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start() -> Server {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "edgegrant native tests CA");
        let ca = ca_params.self_signed(&ca_key).expect("CA");
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec![
            "localhost".to_owned(),
            "docs.example".to_owned(),
            "127.0.0.1".to_owned(),
        ])
        .expect("params");
        let cert = params.signed_by(&key, &ca, &ca_key).expect("certificate");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .expect("server config");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (count, log) = (connections.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let (acceptor, log) = (acceptor.clone(), log.clone());
                tokio::spawn(async move {
                    if let Ok(stream) = acceptor.accept(socket).await {
                        serve(stream, log).await;
                    }
                });
            }
        });
        Server {
            port,
            root: ca.der().clone(),
            connections,
            seen,
        }
    }

    /// A fetcher trusting the server's CA, resolving by `table` (and `localhost` by the system).
    fn fetcher(&self, allow_loopback: bool, table: &[(&str, &[&str])]) -> Fetcher {
        Fetcher::new(
            allow_loopback,
            std::slice::from_ref(&self.root),
            resolver(table),
        )
        .expect("fetcher")
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.port)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }
}

/// A resolver answering from `table`; `localhost` from the system's; any other name: not found.
fn resolver(table: &[(&str, &[&str])]) -> Resolver {
    let table: HashMap<String, Vec<IpAddr>> = table
        .iter()
        .map(|(name, addresses)| {
            let parsed = addresses.iter().map(|a| a.parse().expect(a)).collect();
            ((*name).to_owned(), parsed)
        })
        .collect();
    let system = system_resolver();
    Arc::new(move |name, port| {
        if name == "localhost" {
            return system(name, port);
        }
        let answer = table.get(&name).map(|addresses| {
            addresses
                .iter()
                .map(|ip| SocketAddr::new(*ip, port))
                .collect::<Vec<_>>()
        });
        Box::pin(async move {
            answer.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name"))
        })
    })
}

/// Answers one request by its path: `/doc`, `/redirect`, `/missing`, `/sized/N` (with
/// Content-Length), `/chunked/N` (without), `/lying` (says 500 bytes, sends 10 and hangs up),
/// `/stall` (headers and a byte, then nothing), `/hang` (never answers).
async fn serve(
    mut stream: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    log: Arc<Mutex<Vec<Seen>>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let path = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or("")
        .to_owned();
    let header = |name: &str| {
        text.split("\r\n")
            .filter_map(|line| line.split_once(": "))
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map_or(String::new(), |(_, value)| value.to_owned())
    };
    log.lock().expect("log").push(Seen {
        path: path.clone(),
        host: header("host"),
        accept: header("accept"),
        servername: stream.get_ref().1.server_name().map(str::to_owned),
    });
    let mut parts = path.split('/').skip(1);
    let route = parts.next().unwrap_or("");
    let n: usize = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let answer = match route {
        "doc" => format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncache-control: max-age=300\r\ncache-control: public\r\ncontent-length: {}\r\n\r\n{DOC}",
            DOC.len()
        )
        .into_bytes(),
        "redirect" => b"HTTP/1.1 302 Found\r\nlocation: /doc\r\ncache-control: no-store\r\ncontent-length: 8\r\n\r\nsee /doc".to_vec(),
        "missing" => {
            let mut answer = b"HTTP/1.1 404 Not Found\r\ncontent-length: 100000\r\n\r\n".to_vec();
            answer.extend(std::iter::repeat_n(b'x', 100_000));
            answer
        }
        "sized" => {
            let mut answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {n}\r\n\r\n").into_bytes();
            answer.extend(std::iter::repeat_n(b'a', n));
            answer
        }
        "chunked" => {
            let mut answer = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
            let mut left = n;
            while left > 0 {
                let size = left.min(100);
                answer.extend(format!("{size:x}\r\n").into_bytes());
                answer.extend(std::iter::repeat_n(b'b', size));
                answer.extend(b"\r\n");
                left -= size;
            }
            answer.extend(b"0\r\n\r\n");
            answer
        }
        "lying" => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\ncccccccccc")
                .await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            return;
        }
        "stall" => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{")
                .await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
        "hang" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
        _ => b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n".to_vec(),
    };
    let _ = stream.write_all(&answer).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

fn request(url: String) -> Fetch {
    Fetch {
        url,
        max_bytes: MAX,
        timeout_ms: 2000,
    }
}

/// Runs the fetch and asserts the server saw no connection meanwhile.
async fn no_connection(
    server: &Server,
    fetcher: &Fetcher,
    url: String,
) -> Result<Fetched, FetchFailure> {
    let before = server.connections();
    let answer = fetcher.fetch(&request(url)).await;
    tokio::time::sleep(Duration::from_millis(50)).await; // a connection would have arrived by now
    assert_eq!(server.connections(), before, "the server saw a connection");
    answer
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused_before_any_connection_and_reached_only_when_loopback_is_allowed(
) {
    let server = Server::start().await;
    let table: &[(&str, &[&str])] = &[("docs.example", &["127.0.0.1"])];
    // The vetting: the name passes the URL check, its address does not.
    let refused = no_connection(
        &server,
        &server.fetcher(false, table),
        server.url("docs.example", "/doc"),
    )
    .await;
    assert_eq!(refused, Err(FetchFailure::Refused));
    // The same fetch with loopback allowed reaches the server: the refusal above is the
    // vetting's, not an unreachable name.
    let fetched = server
        .fetcher(true, table)
        .fetch(&request(server.url("docs.example", "/doc")))
        .await;
    assert_eq!(
        fetched,
        Ok(Fetched {
            status: 200,
            cache_control: Some("max-age=300, public".to_owned()),
            body: DOC.as_bytes().to_vec(),
        })
    );
    assert_eq!(
        server.seen().last(),
        Some(&Seen {
            path: "/doc".to_owned(),
            host: format!("docs.example:{}", server.port),
            accept: "application/json".to_owned(),
            servername: Some("docs.example".to_owned()),
        }),
        "Host, Accept and SNI are the URL's"
    );
}

/// Each name's first address is the tests' server, on loopback: a fetcher that stopped vetting
/// would connect there (and be caught), never to the special-use address after it.
#[tokio::test]
async fn any_special_use_address_among_a_names_refuses_it_even_with_loopback_allowed() {
    let server = Server::start().await;
    let table: &[(&str, &[&str])] = &[
        ("private.example", &["127.0.0.1", "10.1.2.3"]),
        (
            "mixed.example",
            &["127.0.0.1", "93.184.215.14", "192.168.1.1"],
        ),
        ("mapped.example", &["127.0.0.1", "::ffff:169.254.169.254"]),
        ("nat64.example", &["127.0.0.1", "64:ff9b::a9fe:a9fe"]),
        ("ula.example", &["127.0.0.1", "fd00:ec2::254"]),
        ("link-local.example", &["127.0.0.1", "fe80::1"]),
        ("unspecified.example", &["127.0.0.1", "0.0.0.0"]),
        ("cgnat.example", &["127.0.0.1", "100.100.100.200"]),
        ("multicast.example", &["127.0.0.1", "224.0.0.1"]),
    ];
    for (name, _) in table {
        let answer = no_connection(
            &server,
            &server.fetcher(true, table),
            server.url(name, "/doc"),
        )
        .await;
        assert_eq!(answer, Err(FetchFailure::Refused), "{name}");
    }
}

#[tokio::test]
async fn loopback_by_name_or_address_is_refused_without_allow_loopback_and_fetched_with_it() {
    let server = Server::start().await;
    for host in [
        "localhost",
        "127.0.0.1",
        "127.1",
        "2130706433",
        "[::ffff:127.0.0.1]",
    ] {
        let answer = no_connection(
            &server,
            &server.fetcher(false, &[]),
            server.url(host, "/doc"),
        )
        .await;
        assert_eq!(answer, Err(FetchFailure::Refused), "{host}");
    }
    // localhost through the system's resolver, 127.0.0.1 connected to directly (no SNI: the
    // certificate is checked against the address).
    for (host, servername) in [("localhost", Some("localhost")), ("127.0.0.1", None)] {
        let answer = server
            .fetcher(true, &[])
            .fetch(&request(server.url(host, "/doc")))
            .await;
        assert_eq!(answer.map(|fetched| fetched.status), Ok(200), "{host}");
        assert_eq!(
            server.seen().last().map(|seen| seen.servername.as_deref()),
            Some(servername)
        );
    }
}

#[tokio::test]
async fn a_redirect_is_the_answer_not_followed_and_other_statuses_come_without_a_body() {
    let server = Server::start().await;
    let fetcher = server.fetcher(true, &[]);
    let before = server.seen().len();
    let redirect = fetcher
        .fetch(&request(server.url("localhost", "/redirect")))
        .await;
    assert_eq!(
        redirect,
        Ok(Fetched {
            status: 302,
            cache_control: Some("no-store".to_owned()),
            body: Vec::new(),
        })
    );
    let paths: Vec<String> = server.seen()[before..]
        .iter()
        .map(|seen| seen.path.clone())
        .collect();
    assert_eq!(paths, ["/redirect"]);
    let missing = fetcher
        .fetch(&request(server.url("localhost", "/missing")))
        .await;
    assert_eq!(
        missing,
        Ok(Fetched {
            status: 404,
            cache_control: None,
            body: Vec::new(),
        })
    );
}

#[tokio::test]
async fn exactly_max_bytes_is_fetched_one_more_is_too_large_with_or_without_content_length() {
    let server = Server::start().await;
    let fetcher = server.fetcher(true, &[]);
    for route in ["sized", "chunked"] {
        let fits = fetcher
            .fetch(&request(
                server.url("localhost", &format!("/{route}/{MAX}")),
            ))
            .await;
        assert_eq!(
            fits.map(|fetched| fetched.body.len()),
            Ok(MAX as usize),
            "{route}"
        );
        for over in [MAX + 1, MAX * 50] {
            let answer = fetcher
                .fetch(&request(
                    server.url("localhost", &format!("/{route}/{over}")),
                ))
                .await;
            assert_eq!(answer, Err(FetchFailure::TooLarge), "{route} {over}");
        }
    }
}

#[tokio::test]
async fn a_server_that_never_answers_or_stalls_mid_body_times_out_within_the_deadline() {
    let server = Server::start().await;
    let fetcher = server.fetcher(true, &[]);
    for path in ["/hang", "/stall"] {
        let started = Instant::now();
        let answer = fetcher
            .fetch(&Fetch {
                url: server.url("localhost", path),
                max_bytes: MAX,
                timeout_ms: TIMEOUT,
            })
            .await;
        let elapsed = started.elapsed();
        assert_eq!(answer, Err(FetchFailure::Timeout), "{path}");
        assert!(
            elapsed >= Duration::from_millis(u64::from(TIMEOUT) - 5)
                && elapsed < Duration::from_millis(u64::from(TIMEOUT) + 500),
            "{path}: {elapsed:?} for a {TIMEOUT} ms deadline"
        );
    }
}

#[tokio::test]
async fn what_breaks_off_or_cannot_be_reached_or_trusted_is_unreachable() {
    let server = Server::start().await;
    let fetcher = server.fetcher(true, &[]);
    assert_eq!(
        fetcher
            .fetch(&request(server.url("localhost", "/lying")))
            .await,
        Err(FetchFailure::Unreachable),
        "a body cut short of its Content-Length"
    );
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let closed_port = closed.local_addr().expect("address").port();
    drop(closed);
    assert_eq!(
        fetcher
            .fetch(&request(format!("https://localhost:{closed_port}/c")))
            .await,
        Err(FetchFailure::Unreachable),
        "a refused port"
    );
    assert_eq!(
        server
            .fetcher(true, &[])
            .fetch(&request(server.url("nowhere.example", "/doc")))
            .await,
        Err(FetchFailure::Unreachable),
        "a name that does not resolve"
    );
    let untrusting = Fetcher::new(true, &[], system_resolver()).expect("fetcher");
    assert_eq!(
        untrusting
            .fetch(&request(server.url("localhost", "/doc")))
            .await,
        Err(FetchFailure::Unreachable),
        "a certificate of no trusted authority"
    );
    let other = server.fetcher(true, &[("other.example", &["127.0.0.1"])]);
    assert_eq!(
        other
            .fetch(&request(server.url("other.example", "/doc")))
            .await,
        Err(FetchFailure::Unreachable),
        "a certificate for other names"
    );
}
