//! `Authorization: Bearer <token>` (RFC 6750 §2.1).

use super::http::HttpRequest;

/// Why no bearer token could be read.
pub(crate) enum BearerError {
    /// No bearer credentials at all (→ 401, challenge without an error code, RFC 6750 §3.1).
    Missing,
    /// A malformed header or several of them (→ 400 `invalid_request`).
    Malformed,
}

/// The bearer token of `request`. The scheme is case-insensitive; one or more spaces separate
/// it from the token, which must be a `b64token`.
pub(crate) fn bearer_token(request: &HttpRequest) -> Result<&str, BearerError> {
    let mut headers = request.header_values("authorization");
    let header = headers.next().ok_or(BearerError::Missing)?;
    if headers.next().is_some() {
        return Err(BearerError::Malformed);
    }
    bearer_of(header)
}

/// The bearer token of one `Authorization` header value, by [`bearer_token`]'s rules.
pub(crate) fn bearer_of(header: &str) -> Result<&str, BearerError> {
    let header = header.trim_matches(|c| c == ' ' || c == '\t');
    let (scheme, token) = match header.split_once(' ') {
        Some((scheme, rest)) => (scheme, rest.trim_start_matches(' ')),
        None => (header, ""),
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(BearerError::Missing);
    }
    if is_b64token(token) {
        Ok(token)
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
