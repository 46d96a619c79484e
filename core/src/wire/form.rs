//! `application/x-www-form-urlencoded` parameters: query strings and token-request bodies.

use std::borrow::Cow;

/// Parsed name/value pairs, in order, repeats kept so they can be refused. Borrowed from the
/// input where nothing needed decoding.
pub(crate) struct Params<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

/// A parameter that must appear at most once appeared more often (RFC 6749 §3.1, §3.2).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Repeated(pub &'static str);

impl<'a> Params<'a> {
    /// Decodes `+` and percent escapes (invalid UTF-8 becomes U+FFFD, so it can never match a
    /// credential or a registered value).
    pub fn parse(input: &'a [u8]) -> Params<'a> {
        Params {
            pairs: form_urlencoded::parse(input).collect(),
        }
    }

    /// The value of `name`, which may appear at most once. A parameter sent without a value is
    /// treated as omitted (RFC 6749 §3.1).
    pub fn one(&self, name: &'static str) -> Result<Option<&str>, Repeated> {
        let mut found = self.pairs.iter().filter(|(n, _)| n == name);
        let first = found.next();
        if found.next().is_some() {
            return Err(Repeated(name));
        }
        Ok(first.map(|(_, v)| v.as_ref()).filter(|v| !v.is_empty()))
    }
}

/// Decodes one form-urlencoded component (RFC 6749 §2.3.1 encodes Basic credentials so).
pub(crate) fn decode_component(text: &str) -> Option<String> {
    let plus_as_space = text.replace('+', " ");
    percent_encoding::percent_decode_str(&plus_as_space)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// Whether a `Content-Type` value names `application/x-www-form-urlencoded` (parameters such as
/// `charset` allowed).
pub(crate) fn is_form_content_type(value: &str) -> bool {
    value.split(';').next().is_some_and(|media| {
        media
            .trim()
            .eq_ignore_ascii_case("application/x-www-form-urlencoded")
    })
}
