//! Redirects back to the client: parameters in the query (code flow) or fragment (implicit).

use crate::ids::RedirectUri;
use crate::prelude::*;

/// Where the authorization response parameters go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResponseMode {
    /// `?code=…&state=…` (RFC 6749 §4.1.2), kept after any query the URI already has.
    Query,
    /// `#access_token=…` (RFC 6749 §4.2.2).
    Fragment,
}

/// A registered redirect URI to answer an authorization request at, with its `state`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReplyTo {
    pub uri: RedirectUri,
    pub mode: ResponseMode,
    pub state: Option<String>,
    /// The issuer to name in every response (RFC 9207), in the standards profile.
    pub iss: Option<String>,
}

impl ReplyTo {
    /// The URI with `params`, then `state` if the request had one and `iss` if the server names
    /// itself (RFC 9207), form-encoded into its query or fragment.
    pub fn location(&self, params: &[(&str, &str)]) -> String {
        let mut encoded = form_urlencoded::Serializer::new(String::new());
        for (name, value) in params {
            encoded.append_pair(name, value);
        }
        if let Some(state) = &self.state {
            encoded.append_pair("state", state);
        }
        if let Some(iss) = &self.iss {
            encoded.append_pair("iss", iss);
        }
        let encoded = encoded.finish();
        let uri = self.uri.as_str();
        let separator = match self.mode {
            ResponseMode::Fragment => "#",
            ResponseMode::Query if !uri.contains('?') => "?",
            ResponseMode::Query if uri.ends_with('?') || uri.ends_with('&') => "",
            ResponseMode::Query => "&",
        };
        format!("{uri}{separator}{encoded}")
    }
}
