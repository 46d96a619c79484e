//! HTTP messages as plain values: the request a host received, the response it sends.

use crate::prelude::*;
use serde::{Deserialize, Serialize};

/// An HTTP request as the host received it. Header names compare case-insensitively.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The path, e.g. `/oauth2/token` (no query).
    pub path: String,
    /// The URL's query string, without `?`.
    pub query: String,
    /// Every header, in order, repeated names included.
    pub headers: Vec<(String, String)>,
    /// The body bytes. A host may stop reading one byte past
    /// [`Policy::max_input_bytes`](crate::Policy): the core refuses it then.
    pub body: Vec<u8>,
    /// Where the request came from, as the host knows it (the peer's IP address, or the one a
    /// trusted proxy names): failed client authentications are counted against it
    /// ([`AttemptLimits`](crate::AttemptLimits)). `None` when unknown.
    pub source: Option<String>,
    /// The scheme the client reached this server by, `http` or `https`, when the host knows it
    /// (a Worker from the request's URL, a server from its socket): a form posted from the
    /// same host on the other scheme is another site's. `None` when unknown (behind a proxy
    /// that does not say); the issuer's scheme stands in where there is one.
    pub scheme: Option<String>,
}

impl HttpRequest {
    /// A request with no headers and no body.
    pub fn new(method: &str, path: &str, query: &str) -> Self {
        HttpRequest {
            method: method.to_owned(),
            path: path.to_owned(),
            query: query.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
            source: None,
            scheme: None,
        }
    }

    /// The values of every header named `name` (case-insensitive).
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The value of header `name` when it appears exactly once.
    pub fn single_header<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let mut values = self.header_values(name);
        let first = values.next();
        values.next().is_none().then_some(first).flatten()
    }

    /// Whether a state-changing form post may come from another site (CSRF), by the rule the
    /// consent form follows and a host applies to its own forms (sign-in, sign-out):
    /// `Sec-Fetch-Site`, which pages cannot set, decides when present (only `same-origin`
    /// passes); otherwise `Origin`, when present, must be this server's: the `Host` the request
    /// was sent to, on the [`scheme`](Self::scheme) it came by when the host reported one. A
    /// form posted from a `Referrer-Policy: no-referrer` page carries `Origin: null` in
    /// Chromium, but Chromium sends `Sec-Fetch-Site` too. A request with neither header (an old
    /// browser, a script) passes: it cannot have come from a page of another site in a browser
    /// that sends them.
    ///
    /// ```
    /// use edgegrant::HttpRequest;
    /// let mut post = HttpRequest::new("POST", "/signin", "");
    /// post.headers.push(("Host".into(), "auth.example".into()));
    /// post.headers.push(("Origin".into(), "http://auth.example".into()));
    /// assert!(!post.is_cross_site(), "the scheme is unknown");
    /// post.scheme = Some("https".into());
    /// assert!(post.is_cross_site(), "same host, other scheme");
    /// post.headers.push(("Sec-Fetch-Site".into(), "same-origin".into()));
    /// assert!(!post.is_cross_site());
    /// ```
    pub fn is_cross_site(&self) -> bool {
        self.is_cross_site_on(self.scheme.as_deref())
    }

    /// [`is_cross_site`](Self::is_cross_site), this server being reached by `scheme` (when
    /// known).
    pub(crate) fn is_cross_site_on(&self, scheme: Option<&str>) -> bool {
        if let Some(site) = self.header_values("sec-fetch-site").next() {
            return self.header_values("sec-fetch-site").count() != 1
                || !site.trim().eq_ignore_ascii_case("same-origin");
        }
        let mut origins = self.header_values("origin");
        let Some(origin) = origins.next() else {
            return false;
        };
        if origins.next().is_some() {
            return true;
        }
        // `scheme://authority`, split at the first `:` (a scheme holds none; a search for
        // "://" would link a substring searcher into the wasm module for this alone).
        let Some((origin_scheme, authority)) = origin
            .trim()
            .split_once(':')
            .and_then(|(s, rest)| Some((s, rest.strip_prefix("//")?)))
            .filter(|(s, _)| s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("http"))
        else {
            return true;
        };
        let other_scheme = scheme.is_some_and(|known| !known.eq_ignore_ascii_case(origin_scheme));
        match self.single_header("host") {
            Some(host) => other_scheme || !authority.eq_ignore_ascii_case(host.trim()),
            None => true,
        }
    }

    /// Whether the body, the query or any header is larger than `limit` bytes.
    pub fn exceeds(&self, limit: usize) -> bool {
        self.body.len() > limit || self.head_exceeds(limit)
    }

    /// Whether its query, path or a header is over `limit` bytes (its body aside).
    pub(crate) fn head_exceeds(&self, limit: usize) -> bool {
        self.query.len() > limit
            || self.path.len() > limit
            || self.headers.iter().any(|(n, v)| n.len() + v.len() > limit)
    }
}

/// An HTTP response, complete: the host sends it as it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers (may be left out when a host feeds a response to the client machine).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl HttpResponse {
    /// A response with these headers.
    pub fn new(status: u16, headers: &[(&str, &str)], body: String) -> Self {
        HttpResponse {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body,
        }
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Drops every header called `name`.
    pub(crate) fn without_header(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }
}
