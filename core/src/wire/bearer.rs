//! `Authorization: Bearer <token>` (RFC 6750 §2.1).

use super::http::HttpRequest;

/// Why no bearer token could be read.
pub(crate) enum BearerError {
    /// No bearer credentials at all (→ 401, challenge without an error code, RFC 6750 §3.1).
    Missing,
    /// A malformed header or several of them (→ 400 `invalid_request`).
    Malformed,
}

/// How an access token is presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// `Bearer` (RFC 6750).
    Bearer,
    /// `DPoP` (RFC 9449 §7.1): with a proof in the `DPoP` header.
    Dpop,
}

/// The access token of `request` and its scheme: `Bearer`, or also `DPoP` when `dpop`. The
/// scheme is case-insensitive; one or more spaces separate it from the token, which must be a
/// `b64token`.
pub(crate) fn access_token(
    request: &HttpRequest,
    dpop: bool,
) -> Result<(Scheme, &str), BearerError> {
    let mut headers = request.header_values("authorization");
    let header = headers.next().ok_or(BearerError::Missing)?;
    if headers.next().is_some() {
        return Err(BearerError::Malformed);
    }
    credentials_of(header, dpop)
}

/// The bearer token of `request`, by [`access_token`]'s rules.
pub(crate) fn bearer_token(request: &HttpRequest) -> Result<&str, BearerError> {
    access_token(request, false).map(|(_, token)| token)
}

/// The access token of one `Authorization` header value and its scheme, by [`access_token`]'s
/// rules.
pub(crate) fn credentials_of(header: &str, dpop: bool) -> Result<(Scheme, &str), BearerError> {
    let header = header.trim_matches(|c| c == ' ' || c == '\t');
    let (scheme, token) = match header.split_once(' ') {
        Some((scheme, rest)) => (scheme, rest.trim_start_matches(' ')),
        None => (header, ""),
    };
    let scheme = if scheme.eq_ignore_ascii_case("bearer") {
        Scheme::Bearer
    } else if dpop && scheme.eq_ignore_ascii_case("dpop") {
        Scheme::Dpop
    } else {
        return Err(BearerError::Missing);
    };
    if is_b64token(token) {
        Ok((scheme, token))
    } else {
        Err(BearerError::Malformed)
    }
}

/// `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="` (RFC 6750 §2.1).
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}
