//! The parts of an `http` / `https` URI the core reasons about — scheme, host, port (RFC 3986
//! §3.2) — for the rules on redirect URIs (RFC 9700 §2.6, RFC 8252 §7.3) and for CORS origins.
//!
//! Written here rather than taken from the `url` crate: the core needs only the authority of an
//! ASCII URI it already validated, and `url` (with IDNA tables) would add more to the wasm module
//! than the whole request machinery. Hosts, which resolve relative targets the way a browser does,
//! use a WHATWG URL parser.

/// `http` or `https`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub(crate) fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// An `http(s)://authority…` URI, split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HttpUri<'a> {
    pub scheme: Scheme,
    /// As written: a name, an IPv4 address, or an IPv6 address in brackets.
    pub host: &'a str,
    /// `None` when the authority names no port.
    pub port: Option<u16>,
    /// Whether the authority carries user information (`user@host`).
    pub userinfo: bool,
    /// Everything after the authority: path, query.
    pub rest: &'a str,
}

impl<'a> HttpUri<'a> {
    /// Splits `uri`; `None` unless it is `http://` or `https://` with a well-formed authority.
    pub fn parse(uri: &'a str) -> Option<HttpUri<'a>> {
        let (scheme, after) = uri.split_once(':')?;
        let scheme = if scheme.eq_ignore_ascii_case("http") {
            Scheme::Http
        } else if scheme.eq_ignore_ascii_case("https") {
            Scheme::Https
        } else {
            return None;
        };
        let after = after.strip_prefix("//")?;
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        let (authority, rest) = after.split_at_checked(end)?;
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((_, host_port)) => (true, host_port),
            None => (false, authority),
        };
        let (host, port) = if host_port.starts_with('[') {
            let close = host_port.find(']')?;
            let (host, after_host) = host_port.split_at_checked(close + 1)?;
            match after_host {
                "" => (host, ""),
                _ => (host, after_host.strip_prefix(':')?),
            }
        } else {
            match host_port.rsplit_once(':') {
                Some((host, port)) => (host, port),
                None => (host_port, ""),
            }
        };
        if host.is_empty() || (host.contains(['[', ']']) && !host.starts_with('[')) {
            return None;
        }
        let port = match port {
            "" => None,
            digits if digits.len() <= 5 && digits.bytes().all(|b| b.is_ascii_digit()) => {
                Some(digits.parse().ok()?)
            }
            _ => return None,
        };
        Some(HttpUri {
            scheme,
            host,
            port,
            userinfo,
            rest,
        })
    }

    /// The loopback interface by name or address (RFC 8252 §7.3, §8.3): `127.0.0.1`, `[::1]`,
    /// `localhost`.
    pub fn is_loopback(&self) -> bool {
        ["127.0.0.1", "[::1]", "localhost"]
            .iter()
            .any(|name| self.host.eq_ignore_ascii_case(name))
    }

    fn effective_port(&self) -> u16 {
        self.port.unwrap_or(self.scheme.default_port())
    }

    /// Whether a redirect URI presented at authorization is this registered one: the same
    /// string, or — for a loopback `http` URI — the same but for the port, which a native app
    /// picks when it starts listening (RFC 8252 §7.3).
    pub fn admits_redirect(&self, presented: &HttpUri<'_>) -> bool {
        self.scheme == Scheme::Http
            && self.is_loopback()
            && presented.scheme == Scheme::Http
            && !presented.userinfo
            && presented.host.eq_ignore_ascii_case(self.host)
            && presented.rest == self.rest
    }

    /// Whether a request from the web origin `origin` (an `Origin` header's value, already
    /// split) comes from this URI's origin; any port on loopback, as for redirects.
    pub fn same_origin(&self, origin: &HttpUri<'_>) -> bool {
        self.scheme == origin.scheme
            && self.host.eq_ignore_ascii_case(origin.host)
            && (self.is_loopback() || self.effective_port() == origin.effective_port())
    }
}

/// An `Origin` header's value (RFC 6454 §7), split; `None` for `null` or anything else that
/// is not `scheme://host[:port]`.
pub(crate) fn origin(value: &str) -> Option<HttpUri<'_>> {
    HttpUri::parse(value.trim()).filter(|uri| uri.rest.is_empty() && !uri.userinfo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split() {
        let uri = HttpUri::parse("http://127.0.0.1:8788/callback?x=1");
        assert_eq!(
            uri,
            Some(HttpUri {
                scheme: Scheme::Http,
                host: "127.0.0.1",
                port: Some(8788),
                userinfo: false,
                rest: "/callback?x=1",
            })
        );
        let v6 = HttpUri::parse("http://[::1]:9/cb");
        assert_eq!(v6.map(|u| (u.host, u.port)), Some(("[::1]", Some(9))));
        assert_eq!(
            HttpUri::parse("https://a.example").map(|u| (u.port, u.rest)),
            Some((None, ""))
        );
        assert!(HttpUri::parse("https://u:p@a.example/").is_some_and(|u| u.userinfo));
        for bad in [
            "https:a.example/cb",
            "https://:443/",
            "https://a.example:99999/",
            "https://a.example:8x/",
            "http://[::1/",
            "http://a]b/",
            "com.example.app:/cb",
        ] {
            assert_eq!(HttpUri::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn loopback_redirects_take_any_port_and_nothing_else_changes() {
        let registered = HttpUri::parse("http://127.0.0.1:8788/callback");
        let admits = |presented: &str| {
            registered
                .zip(HttpUri::parse(presented))
                .is_some_and(|(r, p)| r.admits_redirect(&p))
        };
        assert!(admits("http://127.0.0.1:51234/callback"));
        assert!(admits("http://127.0.0.1/callback"));
        assert!(!admits("http://127.0.0.1:51234/callback/x"));
        assert!(!admits("http://127.0.0.2:8788/callback"));
        assert!(!admits("https://127.0.0.1:8788/callback"));
        assert!(!admits("http://evil@127.0.0.1:1/callback"));
        let remote = HttpUri::parse("https://app.example:8443/cb");
        let other_port = HttpUri::parse("https://app.example:9443/cb");
        assert!(!remote
            .zip(other_port)
            .is_some_and(|(r, p)| r.admits_redirect(&p)));
    }

    #[test]
    fn origins_compare_by_scheme_host_and_port() {
        let app = HttpUri::parse("https://spa.example/cb");
        let check = |value: &str| {
            app.zip(origin(value))
                .is_some_and(|(a, o)| a.same_origin(&o))
        };
        assert!(check("https://spa.example"));
        assert!(check("https://SPA.example:443"));
        assert!(!check("https://spa.example:8443"));
        assert!(!check("http://spa.example"));
        assert!(!check("https://spa.example.evil"));
        assert!(!check("null"));
        assert!(!check("https://spa.example/path"));
        let local = HttpUri::parse("http://localhost:8788/cb");
        assert!(local
            .zip(origin("http://localhost:5173"))
            .is_some_and(|(a, o)| a.same_origin(&o)));
    }
}
