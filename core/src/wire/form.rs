//! `application/x-www-form-urlencoded` parameters: query strings and token-request bodies.

use crate::prelude::*;
use alloc::borrow::Cow;

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
        let mut pairs = Vec::with_capacity(8);
        for piece in input.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
            match plain(piece) {
                // Nothing to decode (no escape, no `+`, valid UTF-8): borrowed as it is. Most
                // parameters are so; the library's decoding makes several passes per byte.
                Some(text) => {
                    let (name, value) = text.split_once('=').unwrap_or((text, ""));
                    pairs.push((Cow::Borrowed(name), Cow::Borrowed(value)));
                }
                None => pairs.extend(form_urlencoded::parse(piece)),
            }
        }
        Params { pairs }
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

    /// Every value of `name`, a parameter that may repeat (RFC 8707 `resource`), in order;
    /// values sent empty are left out.
    pub fn all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> {
        self.pairs
            .iter()
            .filter(move |(n, v)| n == name && !v.is_empty())
            .map(|(_, v)| v.as_ref())
    }
}

/// `piece` as text when decoding would not change it.
fn plain(piece: &[u8]) -> Option<&str> {
    if piece.iter().any(|&b| b == b'%' || b == b'+') {
        return None;
    }
    core::str::from_utf8(piece).ok()
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

#[cfg(test)]
mod tests {
    use super::Params;

    /// The same pairs as the library's own parser, on every input built from the characters
    /// that matter (separators, escapes, `+`, invalid UTF-8), up to four of them.
    #[test]
    fn parses_as_form_urlencoded_does() {
        let alphabet: [&[u8]; 9] = [
            b"&",
            b"=",
            b"a",
            b"%41",
            b"%",
            b"+",
            b"\xff",
            b"%zz",
            "é".as_bytes(),
        ];
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = inputs
                .iter()
                .flat_map(|input| {
                    alphabet
                        .iter()
                        .map(move |part| [input.as_slice(), part].concat())
                })
                .collect();
            inputs.extend(longer);
        }
        for input in &inputs {
            let ours: Vec<(String, String)> = Params::parse(input)
                .pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            let theirs: Vec<(String, String)> = form_urlencoded::parse(input)
                .map(|(n, v)| (n.into_owned(), v.into_owned()))
                .collect();
            assert_eq!(ours, theirs, "{input:?}");
        }
    }
}
