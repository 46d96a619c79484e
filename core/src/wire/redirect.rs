//! Redirects back to the client: parameters in the query (code flow) or fragment (implicit).

use crate::ids::RedirectUri;

/// Where the authorization response parameters go.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseMode {
    /// `?code=…&state=…` (RFC 6749 §4.1.2), kept after any query the URI already has.
    Query,
    /// `#access_token=…` (RFC 6749 §4.2.2).
    Fragment,
}

/// `uri` with `params` form-encoded into its query or fragment.
pub(crate) fn location(uri: &RedirectUri, mode: ResponseMode, params: &[(&str, &str)]) -> String {
    let mut encoded = form_urlencoded::Serializer::new(String::new());
    for (name, value) in params {
        encoded.append_pair(name, value);
    }
    let encoded = encoded.finish();
    let uri = uri.as_str();
    let separator = match mode {
        ResponseMode::Fragment => "#",
        ResponseMode::Query if !uri.contains('?') => "?",
        ResponseMode::Query if uri.ends_with('?') || uri.ends_with('&') => "",
        ResponseMode::Query => "&",
    };
    format!("{uri}{separator}{encoded}")
}
