//! PKCE (RFC 7636): code challenges, code verifiers and the check that binds them.

use crate::prelude::*;
use core::fmt;
use serde::{Deserialize, Serialize};

use crate::credentials::{ct_str_eq, s256};

/// How a code challenge was derived from its verifier (RFC 7636 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ChallengeMethod {
    /// The challenge is the verifier. Only for clients that cannot do S256.
    #[serde(rename = "plain")]
    Plain,
    /// The challenge is `BASE64URL(SHA256(verifier))`.
    S256,
}

impl ChallengeMethod {
    /// Parses `code_challenge_method`; empty or absent means `plain` (SPEC.md).
    pub fn parse(text: Option<&str>) -> Option<Self> {
        match text {
            None | Some("") | Some("plain") => Some(ChallengeMethod::Plain),
            Some("S256") => Some(ChallengeMethod::S256),
            Some(_) => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChallengeMethod::Plain => "plain",
            ChallengeMethod::S256 => "S256",
        }
    }
}

/// 43–128 characters from the unreserved set `A–Z a–z 0–9 - . _ ~` (RFC 7636 §4.1, §4.2).
fn is_pkce_string(text: &str) -> bool {
    (43..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// A `code_verifier`: the client's secret half of PKCE.
///
/// Its S256 transform is computed once, when it is read: a token request decides again as its
/// records arrive, and hashes nothing twice.
#[derive(Clone, PartialEq, Eq)]
pub struct CodeVerifier {
    text: String,
    s256: String,
}

impl CodeVerifier {
    /// Accepts a verifier of 43–128 unreserved characters.
    pub fn new(text: &str) -> Option<Self> {
        is_pkce_string(text).then(|| CodeVerifier {
            text: text.to_owned(),
            s256: s256(text),
        })
    }

    /// The verifier itself.
    pub fn expose(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for CodeVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CodeVerifier(<redacted>)")
    }
}

/// A `code_challenge` with its method, as stored with the authorization code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeChallenge {
    /// The transform from verifier to challenge.
    pub method: ChallengeMethod,
    /// The challenge: 43–128 unreserved characters.
    pub value: String,
}

impl CodeChallenge {
    /// Accepts a challenge of 43–128 unreserved characters.
    pub fn new(method: ChallengeMethod, value: &str) -> Option<Self> {
        is_pkce_string(value).then(|| CodeChallenge {
            method,
            value: value.to_owned(),
        })
    }

    /// The S256 challenge of `verifier`.
    ///
    /// The RFC 7636 Appendix B example:
    /// ```
    /// # use edgegrant::{CodeChallenge, CodeVerifier};
    /// let verifier = CodeVerifier::new("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").unwrap();
    /// assert_eq!(CodeChallenge::s256(&verifier).value, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    /// ```
    pub fn s256(verifier: &CodeVerifier) -> Self {
        CodeChallenge {
            method: ChallengeMethod::S256,
            value: verifier.s256.clone(),
        }
    }

    /// Whether `verifier`, transformed by this challenge's method, equals the challenge
    /// (RFC 7636 §4.6), compared in constant time.
    pub fn is_satisfied_by(&self, verifier: &CodeVerifier) -> bool {
        let transformed = match self.method {
            ChallengeMethod::Plain => verifier.expose(),
            ChallengeMethod::S256 => &verifier.s256,
        };
        ct_str_eq(transformed, &self.value)
    }
}
