//! The client's DPoP proofs (RFC 9449 §4): the machine writes each proof's header and claims and
//! hands the host `<header>.<claims>` to sign with the private key it keeps (WebCrypto, a
//! hardware key); the key never enters the machine, only its public half.

use crate::prelude::*;
use base64ct::{Base64UrlUnpadded, Encoding as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dpop::token_hash;
use crate::jose::{holds_private_members, public_key};
use crate::time::UnixTime;
use crate::wire::json::JsonObject;

/// The key a client binds its tokens to, read from the public JWK of its configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ProofKey {
    /// `ES256` or `RS256`.
    alg: &'static str,
    /// The public members only, in RFC 7638's order: what each proof's header carries.
    jwk: String,
    /// Its JWK SHA-256 thumbprint: the authorization request's `dpop_jkt` (§10).
    pub thumbprint: String,
}

impl ProofKey {
    /// The key of a public JWK: EC P-256 (ES256) or RSA of 2048 bits or more (RS256). A JWK
    /// with a private member is refused: the machine's configuration is no place for it.
    pub(super) fn of(jwk: &Value) -> Result<ProofKey, &'static str> {
        let members = jwk
            .as_object()
            .ok_or("dpop_public_key must be a JWK object")?;
        if holds_private_members(members) {
            return Err("dpop_public_key holds private key material: give the public half only");
        }
        let key = public_key(members)?
            .ok_or("dpop_public_key must be an EC P-256 or an RSA public key")?;
        Ok(ProofKey {
            alg: key.alg.name(),
            jwk: key.members(JsonObject::new()).finish(),
            thumbprint: key.thumbprint(),
        })
    }

    /// A proof for a request of `method` to `url` (sent without its query and fragment, §4.2),
    /// made at `now` with the unique `jti`, carrying the server's `nonce` and, with an access
    /// token, its hash.
    pub(super) fn proof(&self, request: ProofOf<'_>, now: UnixTime, jti: &str) -> ProofToSign {
        let header = JsonObject::new()
            .string("alg", self.alg)
            .json("jwk", &self.jwk)
            .string("typ", "dpop+jwt")
            .finish();
        let ath = request.access_token.map(token_hash);
        let claims = JsonObject::new()
            .optional_string("ath", ath.as_deref())
            .string("htm", request.method)
            .string(
                "htu",
                request.url.split(['?', '#']).next().unwrap_or_default(),
            )
            .number("iat", now.0)
            .string("jti", jti)
            .optional_string("nonce", request.nonce)
            .finish();
        let b64 = |text: &str| Base64UrlUnpadded::encode_string(text.as_bytes());
        ProofToSign {
            alg: self.alg.into(),
            signing_input: format!("{}.{}", b64(&header), b64(&claims)),
        }
    }
}

/// What a proof is for.
pub(super) struct ProofOf<'a> {
    pub method: &'a str,
    pub url: &'a str,
    /// The nonce the server last handed out (`DPoP-Nonce`), if any.
    pub nonce: Option<&'a str>,
    /// The access token the request presents, if any.
    pub access_token: Option<&'a str>,
}

/// A DPoP proof for the host to sign (RFC 9449 §4.2): sign `signing_input` (its UTF-8 bytes)
/// with the private key of the configured `dpop_public_key` — ECDSA P-256 with SHA-256, the
/// signature as `r ‖ s` (WebCrypto's form), or RSASSA-PKCS1-v1_5 with SHA-256 — and send
/// [`header`](ProofToSign::header) of it as the request's `DPoP` header.
///
/// ```
/// # use edgegrant::client::ProofToSign;
/// let proof = ProofToSign { alg: "ES256".into(), signing_input: "eyJh.eyJo".into() };
/// assert_eq!(proof.header(&[0xff, 0xfe]), "eyJh.eyJo.__4");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofToSign {
    /// The algorithm to sign with: `ES256` or `RS256`, the key's.
    pub alg: String,
    /// `<header>.<claims>`, base64url: the bytes to sign.
    pub signing_input: String,
}

impl ProofToSign {
    /// The `DPoP` header value: the signing input and the `signature` over it, a compact JWS.
    pub fn header(&self, signature: &[u8]) -> String {
        format!(
            "{}.{}",
            self.signing_input,
            Base64UrlUnpadded::encode_string(signature)
        )
    }
}
