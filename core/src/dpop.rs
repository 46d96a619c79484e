//! DPoP proofs (RFC 9449): a JWS the client signs with a key of its own, whose public half it
//! carries, for one HTTP request — its method (`htm`), its URI (`htu`), now (`iat`), once
//! (`jti`), and with an access token, that token (`ath`). A token issued with a proof is bound to
//! the key (its JWK SHA-256 thumbprint, RFC 7638), and is good only with proofs of that key.
//!
//! Read and checked here as §4.3 lists it — the proof against its request ([`presented`]), its
//! time and nonce ([`Proof::fresh`]; nonces are a MAC of the time under the server key, so they
//! need no record) — but for the signature, which the host verifies as it does a client
//! assertion's ([`Step::Verify`](crate::Step::Verify)), and the `jti`, which the token endpoint
//! records as used (`endpoints::token`). A resource server elsewhere checks proofs with
//! [`resource_server_proof`].

use crate::prelude::*;
use base64ct::{Base64UrlUnpadded, Encoding as _};
use serde_json::Value;
use subtle::ConstantTimeEq as _;

use crate::config::{Config, DpopNonces};
use crate::credentials::{sha256, ServerKey};
use crate::ids::KeyThumbprint;
use crate::jose::{compact, holds_private_members, public_key, SigningAlg};
use crate::refusal::{DpopFault, Refusal};
use crate::step::Verify;
use crate::time::UnixTime;
use crate::wire::http::HttpRequest;
use crate::wire::json::JsonObject;

/// The algorithms a proof may be signed with: the keys this server reads (§5.1's
/// `dpop_signing_alg_values_supported`, §7.1's `algs`).
pub(crate) const ALG_NAMES: [&str; 2] = ["ES256", "RS256"];

/// The `typ` of a proof (§4.2).
const TYP: &str = "dpop+jwt";

/// A proof's `jti` at most this long: enough for any unique id, little to keep.
const MAX_JTI: usize = 256;

/// A DPoP proof as read: the key it carries and what it claims, its signature unchecked.
#[derive(Clone, Debug)]
pub(crate) struct Proof {
    /// The algorithm of the signature: the key's.
    pub alg: SigningAlg,
    /// The public key, as JWK JSON (as WebCrypto imports it).
    pub jwk: String,
    /// The key's JWK SHA-256 thumbprint: what a bound token names (`cnf.jkt`).
    pub thumbprint: KeyThumbprint,
    /// `<header>.<payload>`, as signed.
    pub signing_input: String,
    pub signature: Vec<u8>,
    pub jti: String,
    pub htm: String,
    pub htu: String,
    pub iat: u64,
    /// The hash of the access token it is presented with (§4.2), base64url.
    pub ath: Option<String>,
    /// The nonce the server gave (§8, §9).
    pub nonce: Option<String>,
}

/// A DPoP proof a resource server elsewhere took (the npm package's `edgegrant/resource`): the
/// key it proves, and the signature the host must verify before it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceProof {
    /// The key's JWK SHA-256 thumbprint: the token's `cnf.jkt` must be this.
    pub thumbprint: KeyThumbprint,
    /// The proof's signature, to verify as [`Step::Verify`](crate::Step::Verify) asks.
    pub signature: Verify,
}

/// The DPoP proof of `request` (its `DPoP` header) to a resource server on another host, checked
/// as the API served here checks one (RFC 9449 §4.3, §7): for the request's method and `uri`
/// (the resource's URL without query), carrying the hash of `access_token`, made within
/// `window` of `now` — all but its signature, which the host verifies
/// ([`ResourceProof::signature`]), and replay, which a resource server without a store bounds
/// by `window` alone. `Err`: [`Refusal::DpopProofInvalid`], answered with
/// [`resource_server_challenge`](crate::resource_server_challenge).
///
/// ```
/// use edgegrant::{resource_server_proof, DpopFault, HttpRequest, Refusal, Seconds, UnixTime};
/// let mut request = HttpRequest::new("POST", "/mcp", "");
/// request.headers.push(("DPoP".into(), "not a proof".into()));
/// let refused = resource_server_proof(&request, "https://mcp.example/mcp", "sl.t", UnixTime(0), Seconds(300));
/// assert_eq!(refused, Err(Refusal::DpopProofInvalid(DpopFault::Malformed)));
/// ```
pub fn resource_server_proof(
    request: &HttpRequest,
    uri: &str,
    access_token: &str,
    now: UnixTime,
    window: crate::time::Seconds,
) -> Result<ResourceProof, Refusal> {
    let proof = match presented(request, uri, Some(access_token)) {
        Ok(Some(proof)) => proof,
        Ok(None) => return Err(Refusal::DpopProofInvalid(DpopFault::Malformed)),
        Err(fault) => return Err(Refusal::DpopProofInvalid(fault)),
    };
    if proof.iat.abs_diff(now.0) > window.0 {
        return Err(Refusal::DpopProofInvalid(DpopFault::Time));
    }
    Ok(ResourceProof {
        signature: proof.signature(),
        thumbprint: proof.thumbprint,
    })
}

/// How long a nonce this server hands out stays the current one; it is taken for one period
/// more, so a client's nonce is good for 5 to 10 minutes.
const NONCE_PERIOD: u64 = 300;

/// The proof presented with `request` (its one `DPoP` header), read and checked against the
/// request's method, this server's `uri` for it and the access token it comes with — all of
/// §4.3 that needs neither the time, the server key nor a record. `Ok(None)`: no proof.
pub(crate) fn presented(
    request: &HttpRequest,
    uri: &str,
    access_token: Option<&str>,
) -> Result<Option<Box<Proof>>, DpopFault> {
    let mut values = request.header_values("dpop");
    let Some(text) = values.next() else {
        return Ok(None);
    };
    // §4.3 step 1: one header, one JWT (a repeated header may reach the host joined by a
    // comma).
    if values.next().is_some() || text.contains([',', ' ']) {
        return Err(DpopFault::Malformed);
    }
    let read = proof(text)?;
    read.fits(&Expected {
        method: &request.method,
        uri,
        access_token,
    })?;
    Ok(Some(Box::new(read)))
}

/// The nonce this server hands out at `now` (`DPoP-Nonce`): a MAC of the nonce period under the
/// server key, so every host of a deployment hands out and takes the same with no record.
pub(crate) fn nonce(key: &ServerKey, now: UnixTime) -> String {
    nonce_of_period(key, now.0 / NONCE_PERIOD)
}

fn nonce_of_period(key: &ServerKey, period: u64) -> String {
    let mac = key.mac(&[b"dpop-nonce\0", &period.to_be_bytes()]);
    Base64UrlUnpadded::encode_string(mac.get(..16).unwrap_or_default())
}

/// Whether the answer to `request` carries the current nonce: it came with a proof (or must
/// have: an API call under the `DPoP` scheme) to an endpoint where nonces are asked for.
pub(crate) fn hands_nonce(config: &Config, request: &HttpRequest) -> bool {
    let Some(dpop) = config.dpop() else {
        return false;
    };
    let at = match crate::routes::Endpoint::at(config, &request.path) {
        Some(crate::routes::Endpoint::Token) => At::TokenEndpoint,
        // The reference service's revocation checks a bearer token as the API does.
        Some(crate::routes::Endpoint::Api | crate::routes::Endpoint::Revoke) => At::Api,
        _ => return false,
    };
    asks_nonce(dpop.nonces, at) && request.header_values("dpop").next().is_some()
}

/// Whether proofs presented `at` must carry a nonce.
fn asks_nonce(nonces: DpopNonces, at: At) -> bool {
    match nonces {
        DpopNonces::None => false,
        DpopNonces::TokenEndpoint => at == At::TokenEndpoint,
        DpopNonces::Everywhere => true,
    }
}

/// Whether `nonce` is one this server handed out in the current nonce period or the one before.
fn nonce_holds(key: &ServerKey, nonce: &str, now: UnixTime) -> bool {
    let period = now.0 / NONCE_PERIOD;
    [period, period.saturating_sub(1)]
        .into_iter()
        .any(|p| bool::from(nonce_of_period(key, p).as_bytes().ct_eq(nonce.as_bytes())))
}

/// Why a proof is not taken now (§4.3 steps 10 and 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stale {
    /// Its `iat` is out of the window.
    Time,
    /// It carries no nonce, or one no longer taken, where nonces are required:
    /// `use_dpop_nonce`, with the current one.
    Nonce,
}

/// Where a proof is presented, for the nonce policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum At {
    TokenEndpoint,
    Api,
}

impl Proof {
    /// §4.3 steps 10 and 11: made within the configured window of `now`, and with a nonce this
    /// server handed out where the configuration asks for one at `at`.
    pub fn fresh(&self, config: &Config, at: At, now: UnixTime) -> Result<(), Stale> {
        let Some(dpop) = config.dpop() else {
            return Err(Stale::Time);
        };
        if self.iat.abs_diff(now.0) > dpop.proof_window.0 {
            return Err(Stale::Time);
        }
        match &self.nonce {
            _ if !asks_nonce(dpop.nonces, at) => Ok(()),
            Some(nonce) if nonce_holds(config.server_key(), nonce, now) => Ok(()),
            _ => Err(Stale::Nonce),
        }
    }

    /// The signature to verify (§4.3 step 6): the proof's own, under the key it carries.
    pub fn signature(&self) -> Verify {
        Verify {
            alg: self.alg,
            key: self.jwk.clone(),
            message: self.signing_input.clone(),
            signature: self.signature.clone(),
        }
    }
}

/// Reads a proof (§4.2, §4.3 steps 2–7 but the signature); `Err` when it is none.
pub(crate) fn proof(text: &str) -> Result<Proof, DpopFault> {
    let jws = compact(text).ok_or(DpopFault::Malformed)?;
    let header_text = |name: &str| jws.header.get(name).and_then(Value::as_str);
    if header_text("typ") != Some(TYP) {
        return Err(DpopFault::Malformed);
    }
    let Some(Value::Object(jwk)) = jws.header.get("jwk") else {
        return Err(DpopFault::Malformed);
    };
    // §4.3 step 7: the key must be public. Any private member of an EC or RSA key refuses it.
    if holds_private_members(jwk) {
        return Err(DpopFault::Malformed);
    }
    let key = match public_key(jwk) {
        Ok(Some(key)) => key,
        _ => return Err(DpopFault::Malformed),
    };
    // §4.3 step 5: the header's algorithm, asymmetric and one this server verifies, is the
    // key's (no `none`, no MAC).
    if header_text("alg") != Some(key.alg.name()) {
        return Err(DpopFault::Malformed);
    }
    let claims = &jws.claims;
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let optional = |name: &str| match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone())),
        Some(_) => Err(DpopFault::Malformed),
    };
    let jti = text("jti")
        .filter(|jti| !jti.is_empty() && jti.len() <= MAX_JTI)
        .ok_or(DpopFault::Malformed)?;
    Ok(Proof {
        alg: key.alg,
        jwk: key
            .members(JsonObject::new().string("alg", key.alg.name()))
            .finish(),
        thumbprint: KeyThumbprint::new(key.thumbprint()).map_err(|_| DpopFault::Malformed)?,
        signing_input: jws.signing_input,
        signature: jws.signature,
        jti,
        htm: text("htm").ok_or(DpopFault::Malformed)?,
        htu: text("htu").ok_or(DpopFault::Malformed)?,
        iat: claims
            .get("iat")
            .and_then(Value::as_u64)
            .ok_or(DpopFault::Malformed)?,
        ath: optional("ath")?,
        nonce: optional("nonce")?,
    })
}

/// The hash of an access token a proof presented with it carries (`ath`, §4.2): its SHA-256,
/// base64url.
pub(crate) fn token_hash(access_token: &str) -> String {
    Base64UrlUnpadded::encode_string(&sha256(access_token.as_bytes()))
}

/// What a proof must say of the request it came with.
pub(crate) struct Expected<'a> {
    /// The request's method.
    pub method: &'a str,
    /// The request's URI as this server names it: its origin and path, no query or fragment.
    pub uri: &'a str,
    /// The access token presented with it (at a resource), whose hash it must carry.
    pub access_token: Option<&'a str>,
}

impl Proof {
    /// §4.3 steps 8, 9 and 12's hash: for this method and URI, with the access token's hash
    /// when one is presented.
    pub fn fits(&self, expected: &Expected<'_>) -> Result<(), DpopFault> {
        if self.htm != expected.method {
            return Err(DpopFault::Method);
        }
        if !same_uri(&self.htu, expected.uri) {
            return Err(DpopFault::Uri);
        }
        // With an access token, its hash (§4.3 step 12); at the token endpoint none is asked.
        if let Some(token) = expected.access_token {
            if self.ath.as_deref() != Some(token_hash(token).as_str()) {
                return Err(DpopFault::TokenHash);
            }
        }
        Ok(())
    }
}

/// Whether the proof's `htu` names `uri` (an origin and a path): compared without its query and
/// fragment (§4.3 step 9), its scheme and host in any case, an explicit default port as none
/// (RFC 3986 §6.2.2–6.2.3).
fn same_uri(htu: &str, uri: &str) -> bool {
    let bare = htu.split(['?', '#']).next().unwrap_or_default();
    normalized(bare).is_some_and(|htu| Some(htu) == normalized(uri))
}

/// `scheme://authority/path` with the scheme and host lower case and a default port dropped;
/// `None` for anything but an http(s) URI.
fn normalized(uri: &str) -> Option<String> {
    // Split at the first `:` (a scheme holds none) and by `get`, not at "://" and by
    // `split_at`: a substring searcher and a slicing panic would be linked for this alone.
    let (scheme, rest) = uri.split_once(':')?;
    let rest = rest.strip_prefix("//")?;
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = match rest.find('/') {
        Some(at) => (rest.get(..at)?, rest.get(at..)?),
        None => (rest, "/"),
    };
    let authority = authority.to_ascii_lowercase();
    let authority = match (scheme.as_str(), authority.rsplit_once(':')) {
        ("https", Some((host, "443"))) | ("http", Some((host, "80"))) => host.to_owned(),
        ("https" | "http", _) => authority,
        _ => return None,
    };
    Some(format!("{scheme}://{authority}{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: &str = "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs";
    const Y: &str = "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA";
    const IAT: u64 = 1562262618;

    fn jws(header: &Value, claims: &Value) -> String {
        let b64 = |v: &Value| Base64UrlUnpadded::encode_string(v.to_string().as_bytes());
        // The signature is the host's to verify: any bytes do here.
        format!("{}.{}.c2ln", b64(header), b64(claims))
    }

    /// `value` with `member` set (`None`: removed), in the object at `path`.
    fn with(mut value: Value, path: &[&str], member: &str, set: Option<Value>) -> Value {
        let mut object = value.as_object_mut();
        for step in path {
            object = object
                .and_then(|o| o.get_mut(*step))
                .and_then(Value::as_object_mut);
        }
        if let Some(object) = object {
            match set {
                Some(set) => object.insert(member.into(), set),
                None => object.remove(member),
            };
        }
        value
    }

    fn header() -> Value {
        serde_json::json!({ "typ": "dpop+jwt", "alg": "ES256",
            "jwk": { "kty": "EC", "crv": "P-256", "x": X, "y": Y } })
    }

    fn claims() -> Value {
        serde_json::json!({ "jti": "e1j3V_bKic8-LAEB", "htm": "POST",
            "htu": "https://server.example.com/token", "iat": IAT })
    }

    fn token_endpoint() -> Expected<'static> {
        Expected {
            method: "POST",
            uri: "https://server.example.com/token",
            access_token: None,
        }
    }

    #[test]
    fn a_proofs_key_is_named_by_its_rfc_7638_thumbprint() {
        // RFC 9449's own example key (§4.2) and the thumbprint its examples bind to (§6.1).
        let read = proof(&jws(&header(), &claims()));
        assert_eq!(
            read.as_ref().map(|p| p.thumbprint.as_str()),
            Ok("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        );
        assert_eq!(read.map(|p| p.fits(&token_endpoint())), Ok(Ok(())));
    }

    #[test]
    fn a_proof_is_refused_unless_typed_public_and_signed_by_its_keys_algorithm() {
        let refused = Err(DpopFault::Malformed);
        let read = |header: Value, claims: Value| proof(&jws(&header, &claims)).map(|_| ());
        let header_with =
            |member: &str, set: Value| read(with(header(), &[], member, Some(set)), claims());
        assert_eq!(header_with("typ", "JWT".into()), refused);
        assert_eq!(header_with("alg", "none".into()), refused);
        assert_eq!(header_with("alg", "HS256".into()), refused);
        assert_eq!(header_with("alg", "RS256".into()), refused);
        assert_eq!(header_with("jwk", Value::Null), refused);
        assert_eq!(header_with("crit", serde_json::json!(["x"])), refused);
        let private = with(header(), &["jwk"], "d", Some("c2VjcmV0".into()));
        assert_eq!(read(private, claims()), refused);
        for claim in ["jti", "htm", "htu", "iat"] {
            assert_eq!(
                read(header(), with(claims(), &[], claim, None)),
                refused,
                "{claim}"
            );
        }
        assert_eq!(read(header(), claims()), Ok(()));
    }

    #[test]
    fn a_proof_names_its_request_and_the_token_it_comes_with() {
        let hash = Base64UrlUnpadded::encode_string(&sha256(b"sl.token"));
        let claims = with(
            claims(),
            &[],
            "htu",
            Some("HTTPS://Server.Example.com:443/token?q#f".into()),
        );
        let bound = proof(&jws(
            &header(),
            &with(claims.clone(), &[], "ath", Some(hash.into())),
        ));
        let bare = proof(&jws(&header(), &claims));
        fn at(proof: &Result<Proof, DpopFault>, expected: &Expected<'_>) -> Result<(), DpopFault> {
            proof.as_ref().map_err(|fault| *fault)?.fits(expected)
        }
        let mut expected = Expected {
            access_token: Some("sl.token"),
            ..token_endpoint()
        };
        assert_eq!(at(&bound, &expected), Ok(()));
        assert_eq!(at(&bare, &expected), Err(DpopFault::TokenHash));
        expected.access_token = Some("sl.other");
        assert_eq!(at(&bound, &expected), Err(DpopFault::TokenHash));
        expected.access_token = Some("sl.token");
        expected.uri = "https://server.example.com/token2";
        assert_eq!(at(&bound, &expected), Err(DpopFault::Uri));
        expected.uri = "https://server.example.com/token";
        expected.method = "GET";
        assert_eq!(at(&bound, &expected), Err(DpopFault::Method));
    }
}
