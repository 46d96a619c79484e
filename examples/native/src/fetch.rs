//! The fetch of client metadata documents (and the JWK sets clients name by `jwks_uri`) the core
//! asks for in a [`edgegrant::Step::Fetch`], with the vetting of the npm package's Node fetch
//! (`pkg/src/documents-node.js`): the URL is a `client_id`, chosen by whoever starts an
//! authorization request, so this is the classic server-side request forgery channel and
//! everything here errs on the side of refusing.
//!
//! - The URL (as `checkDocumentUrl` in `pkg/src/documents.js`): `https` only; no user
//!   information; no special-use IP literal (IPv4 in every form the WHATWG parser takes:
//!   `127.1`, `2130706433`, `0x7f.1`); no single-label name (search domains, hosts files: GCE's
//!   `metadata`); no `localhost` or `*.localhost`; no name under a private-use suffix (`.local`,
//!   `.internal` — `metadata.google.internal` — `.localdomain`, `.arpa`, `.invalid`, `.onion`,
//!   `.alt`, `.lan`, `.home`, `.corp`, `.intranet`, `.private`).
//! - The addresses: the name is resolved once, here, and refused if ANY address is special-use
//!   (a name with one public and one private address could otherwise be steered to the private
//!   one); the connection goes to a vetted address, never through a second resolution that an
//!   attacker's DNS could answer differently. The table of special-use addresses is the
//!   package's `isSpecialUseAddress`: IANA's special-purpose registries for IPv4 and, within
//!   2000::/3, for IPv6; everything outside 2000::/3; IPv4-mapped and NAT64 addresses judged by
//!   the IPv4 address inside; a scoped (zone) IPv6 address.
//! - TLS to the URL's host (SNI and the certificate's name; an IP literal is checked as an
//!   address), against Mozilla's roots (webpki-roots).
//! - One `GET` with `Accept: application/json`; a redirect is never followed (a 3xx is the
//!   answer, with an empty body); any status but 200 is answered without reading its body;
//!   `Content-Length` above the limit, or more bytes than the limit arriving, is
//!   [`FetchFailure::TooLarge`]; one deadline over everything, the name's resolution and the
//!   body included, is [`FetchFailure::Timeout`].

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use edgegrant::{Fetch, FetchFailure, Fetched};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::header::{ACCEPT, CACHE_CONTROL, CONTENT_LENGTH, HOST};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use url::{Host, Url};

/// The addresses a name resolves to, all of them (each with the port asked for).
pub type Resolved = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;

/// Resolves `(name, port)`: the system's resolver ([`system_resolver`]), or a table of the
/// tests' own. Its answers are vetted like the system's.
pub type Resolver = Arc<dyn Fn(String, u16) -> Resolved + Send + Sync>;

/// The system's resolver (getaddrinfo, on tokio's blocking threads).
pub fn system_resolver() -> Resolver {
    Arc::new(|name, port| {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((name.as_str(), port))
                .await?
                .collect())
        })
    })
}

/// Fetches documents for the core; one per host, shared by every request.
pub struct Fetcher {
    tls: TlsConnector,
    allow_loopback: bool,
    resolver: Resolver,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("allow_loopback", &self.allow_loopback)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// The host's fetcher: Mozilla's roots, no loopback, the system's resolver.
    pub fn system() -> Result<Fetcher, String> {
        Fetcher::new(false, &[], system_resolver())
    }

    /// A fetcher trusting Mozilla's roots and `extra_roots`, resolving with `resolver`;
    /// `allow_loopback` admits loopback hosts and addresses (development, tests: CIMD §6.5's
    /// exception for an authorization server on loopback itself).
    pub fn new(
        allow_loopback: bool,
        extra_roots: &[CertificateDer<'static>],
        resolver: Resolver,
    ) -> Result<Fetcher, String> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for root in extra_roots {
            roots
                .add(root.clone())
                .map_err(|e| format!("a trusted root: {e}"))?;
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Fetcher {
            tls: TlsConnector::from(Arc::new(config)),
            allow_loopback,
            resolver,
        })
    }

    /// Fetches `fetch.url` for the core, within `fetch.timeout_ms` and `fetch.max_bytes`.
    pub async fn fetch(&self, fetch: &Fetch) -> Result<Fetched, FetchFailure> {
        let target = target(&fetch.url, self.allow_loopback).ok_or(FetchFailure::Refused)?;
        let deadline = Duration::from_millis(u64::from(fetch.timeout_ms));
        tokio::time::timeout(deadline, self.fetch_target(&target, fetch.max_bytes))
            .await
            .unwrap_or(Err(FetchFailure::Timeout))
    }

    async fn fetch_target(&self, target: &Target, max_bytes: u32) -> Result<Fetched, FetchFailure> {
        let addresses = match &target.host {
            // Vetted with the URL: nothing to resolve.
            Name::Address(ip) => vec![SocketAddr::new(*ip, target.port)],
            Name::Domain(name) => {
                let resolved = (self.resolver)(name.clone(), target.port)
                    .await
                    .map_err(|_| FetchFailure::Unreachable)?;
                if resolved.is_empty() {
                    return Err(FetchFailure::Unreachable);
                }
                if !resolved.iter().all(|a| permitted(a, self.allow_loopback)) {
                    return Err(FetchFailure::Refused);
                }
                resolved
            }
        };
        let stream = connect(&addresses).await?;
        let server_name = match &target.host {
            Name::Address(ip) => ServerName::IpAddress((*ip).into()),
            Name::Domain(name) => ServerName::try_from(name.trim_end_matches('.').to_owned())
                .map_err(|_| FetchFailure::Refused)?,
        };
        let tls = self
            .tls
            .connect(server_name, stream)
            .await
            .map_err(|_| FetchFailure::Unreachable)?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|_| FetchFailure::Unreachable)?;
        // The connection is driven beside the request, and dropped with it (a deadline that
        // passes drops this future: the task goes too).
        let _driver = AbortOnDrop(tokio::spawn(async move {
            let _ = connection.await;
        }));
        let request = hyper::Request::get(target.path.as_str())
            .header(HOST, target.authority.as_str())
            .header(ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|_| FetchFailure::Refused)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|_| FetchFailure::Unreachable)?;
        let status = response.status().as_u16();
        let cache_control = joined(response.headers().get_all(CACHE_CONTROL));
        if status != 200 {
            return Ok(Fetched {
                status,
                cache_control,
                body: Vec::new(),
            });
        }
        let limit = max_bytes as usize;
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > u64::from(max_bytes)) {
            return Err(FetchFailure::TooLarge);
        }
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| FetchFailure::Unreachable)?;
            if let Some(data) = frame.data_ref() {
                if bytes.len() + data.len() > limit {
                    return Err(FetchFailure::TooLarge);
                }
                bytes.extend_from_slice(data);
            }
        }
        Ok(Fetched {
            status,
            cache_control,
            body: bytes,
        })
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A connection to the first of `addresses` that takes one.
async fn connect(addresses: &[SocketAddr]) -> Result<TcpStream, FetchFailure> {
    for address in addresses {
        if let Ok(stream) = TcpStream::connect(address).await {
            return Ok(stream);
        }
    }
    Err(FetchFailure::Unreachable)
}

/// Repeated header values joined by `, ` (as the core's [`Fetched::cache_control`] says); a
/// value that is not visible ASCII is left out.
fn joined(values: hyper::header::GetAll<'_, hyper::header::HeaderValue>) -> Option<String> {
    let parts: Vec<&str> = values
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

// ---------------------------------------------------------------------------------------------
// URLs

/// Where a document URL points, once it passed [`target`].
#[derive(Debug, PartialEq, Eq)]
struct Target {
    host: Name,
    port: u16,
    /// The `Host` header: the URL's host, with its port unless 443.
    authority: String,
    /// The path and the query.
    path: String,
}

#[derive(Debug, PartialEq, Eq)]
enum Name {
    Address(IpAddr),
    Domain(String),
}

/// Names that are private by convention or reservation (RFC 6761, 6762, 7686, 8375, 9476,
/// ICANN's `.internal`, RFC 6762 appendix G's private TLDs): the package's list. `.test` and
/// `.example` are not here: RFC 6761 asks software not to treat them specially.
const PRIVATE_SUFFIXES: [&str; 12] = [
    "local",
    "internal",
    "localdomain",
    "arpa",
    "invalid",
    "onion",
    "alt",
    "lan",
    "home",
    "corp",
    "intranet",
    "private",
];

/// The URL's target, or `None` when it may not be fetched (the package's `checkDocumentUrl`).
fn target(url: &str, allow_loopback: bool) -> Option<Target> {
    let parsed = Url::parse(url).ok()?;
    if parsed.scheme() != "https" || !parsed.username().is_empty() || parsed.password().is_some() {
        return None;
    }
    // The WHATWG parser has already turned every IPv4 form into an address.
    let host = match parsed.host()? {
        Host::Ipv4(ip) => Name::Address(IpAddr::V4(ip)),
        Host::Ipv6(ip) => Name::Address(IpAddr::V6(ip)),
        Host::Domain(name) => Name::Domain(name.to_owned()),
    };
    match &host {
        Name::Address(ip) => {
            let class = classify(*ip);
            if class.special && !(allow_loopback && class.loopback) {
                return None;
            }
        }
        Name::Domain(name) => {
            let name = name.to_ascii_lowercase();
            let name = name.trim_end_matches('.');
            if name == "localhost" || name.ends_with(".localhost") {
                if !allow_loopback {
                    return None;
                }
            } else if !name.contains('.')
                || PRIVATE_SUFFIXES
                    .iter()
                    .any(|suffix| name.ends_with(&format!(".{suffix}")))
            {
                return None;
            }
        }
    }
    let port = parsed.port_or_known_default()?;
    let authority = match parsed.port() {
        Some(port) => format!("{}:{port}", parsed.host_str()?),
        None => parsed.host_str()?.to_owned(),
    };
    let path = match parsed.query() {
        Some(query) => format!("{}?{query}", parsed.path()),
        None => parsed.path().to_owned(),
    };
    Some(Target {
        host,
        port,
        authority,
        path,
    })
}

// ---------------------------------------------------------------------------------------------
// Addresses

/// Whether a resolved address may be connected to.
fn permitted(address: &SocketAddr, allow_loopback: bool) -> bool {
    // A zone id: only scoped, non-global addresses need one.
    if let SocketAddr::V6(v6) = address {
        if v6.scope_id() != 0 {
            return false;
        }
    }
    let class = classify(address.ip());
    !class.special || (allow_loopback && class.loopback)
}

/// What an address is, for the fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Class {
    special: bool,
    loopback: bool,
}

/// IANA's IPv4 Special-Purpose Address Registry (RFC 6890 and its updates), every entry — the
/// globally reachable ones too (AS112, AMT, 6to4 relay): no client's document lives there.
const V4_SPECIAL: [([u8; 4], u8); 18] = [
    ([0, 0, 0, 0], 8), // "this network"; 0.0.0.0 reaches the local host on Linux
    ([10, 0, 0, 0], 8),
    ([100, 64, 0, 0], 10), // carrier-grade NAT (Alibaba's metadata is 100.100.100.200)
    ([127, 0, 0, 0], 8),
    ([169, 254, 0, 0], 16), // link-local: cloud metadata at 169.254.169.254
    ([172, 16, 0, 0], 12),
    ([192, 0, 0, 0], 24),
    ([192, 0, 2, 0], 24),
    ([192, 31, 196, 0], 24),
    ([192, 52, 193, 0], 24),
    ([192, 88, 99, 0], 24),
    ([192, 168, 0, 0], 16),
    ([192, 175, 48, 0], 24),
    ([198, 18, 0, 0], 15),
    ([198, 51, 100, 0], 24),
    ([203, 0, 113, 0], 24),
    ([224, 0, 0, 0], 4), // multicast
    ([240, 0, 0, 0], 4), // reserved, with 255.255.255.255
];

/// Within 2000::/3 (global unicast), the IPv6 special-purpose registry's entries; everything
/// outside 2000::/3 is special anyway (::, ::1, 64:ff9b:1::/48, 100::/64, fc00::/7, fe80::/10,
/// ff00::/8 and all unallocated space).
const V6_SPECIAL: [([u16; 8], u8); 5] = [
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23), // IETF protocol assignments, Teredo among them
    ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
    ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16), // 6to4: the embedded IPv4 is reached through a relay
    ([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48), // AS112
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // documentation (RFC 9637)
];

/// Whether the first `bits` bits of `value` and `prefix` agree.
fn in_prefix(value: u128, prefix: u128, bits: u8, width: u8) -> bool {
    let shift = u32::from(width - bits);
    bits == 0 || (value >> shift) == (prefix >> shift)
}

fn classify_v4(ip: Ipv4Addr) -> Class {
    let value = u128::from(u32::from(ip));
    Class {
        special: V4_SPECIAL.iter().any(|(base, bits)| {
            in_prefix(
                value,
                u128::from(u32::from(Ipv4Addr::from(*base))),
                *bits,
                32,
            )
        }),
        loopback: ip.octets()[0] == 127,
    }
}

fn classify_v6(ip: Ipv6Addr) -> Class {
    let value = u128::from(ip);
    let within = |prefix: [u16; 8], bits: u8| {
        in_prefix(value, u128::from(Ipv6Addr::from(prefix)), bits, 128)
    };
    // IPv4-mapped (::ffff:0:0/96) and NAT64's well-known prefix (64:ff9b::/96) carry an IPv4
    // address that is where the packets end up: judge that one.
    let embedded = Ipv4Addr::from((value & 0xffff_ffff) as u32);
    if within([0, 0, 0, 0, 0, 0xffff, 0, 0], 96) {
        return classify_v4(embedded);
    }
    if within([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return Class {
            special: classify_v4(embedded).special,
            loopback: false,
        };
    }
    let loopback = ip == Ipv6Addr::LOCALHOST;
    if !within([0x2000, 0, 0, 0, 0, 0, 0, 0], 3) {
        return Class {
            special: true,
            loopback,
        };
    }
    Class {
        special: V6_SPECIAL.iter().any(|(base, bits)| within(*base, *bits)),
        loopback: false,
    }
}

fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

#[cfg(test)]
mod tests;
