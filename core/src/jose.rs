//! Client assertions (RFC 7523 §2.2, `private_key_jwt`): a JWS in compact form (RFC 7515) signed
//! with ES256 or RS256 (RFC 7518), and the public keys of a client's JWK set (RFC 7517) that may
//! check it. Everything is read and checked here but the signature itself, which the host
//! verifies with its WebCrypto ([`Step::Verify`](crate::Step::Verify)): measured against
//! RustCrypto's crates in the module, 27 KiB and 3–6× the time less (README's decisions).

use crate::prelude::*;
use base64ct::{Base64UrlUnpadded, Encoding as _};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::wire::json::JsonObject;

/// The most keys a client's JWK set may hold, and the longest assertion read.
const MAX_KEYS: usize = 8;
const MAX_ASSERTION: usize = 8192;

/// The signature algorithms a client assertion may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SigningAlg {
    /// ECDSA on P-256 with SHA-256; the signature is `r ‖ s`, 64 bytes.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256, on a key of at least 2048 bits.
    Rs256,
}

impl SigningAlg {
    /// Its JOSE name: `ES256`, `RS256`.
    pub fn name(self) -> &'static str {
        match self {
            SigningAlg::Es256 => "ES256",
            SigningAlg::Rs256 => "RS256",
        }
    }

    fn named(name: &str) -> Option<SigningAlg> {
        match name {
            "ES256" => Some(SigningAlg::Es256),
            "RS256" => Some(SigningAlg::Rs256),
            _ => None,
        }
    }
}

/// One public key of a client, as registered: its `kid`, the algorithm it signs with, and the
/// key as a JWK (only the members that make the key), which the host imports to verify.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientKey {
    /// The key id, if the set gave one.
    pub kid: Option<String>,
    /// The algorithm.
    pub alg: SigningAlg,
    /// The public key as JWK JSON, as registered and as WebCrypto imports it:
    /// `{"alg":"ES256","kid":…,"crv":"P-256","kty":"EC","x":…,"y":…}` or
    /// `{"alg":"RS256","kid":…,"e":…,"kty":"RSA","n":…}`.
    pub jwk: String,
}

/// A JWK set's keys that can check an assertion (RFC 7517 §5): EC P-256 and RSA keys of at
/// least 2048 bits, for signing; others are skipped. `Err`: why the set is unusable.
pub(crate) fn client_keys(set: &Value) -> Result<Vec<ClientKey>, &'static str> {
    let keys = set
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("jwks must be a JWK set: {\"keys\": [...]}")?;
    if keys.len() > MAX_KEYS {
        return Err("jwks holds too many keys (at most 8)");
    }
    let mut usable = Vec::new();
    for key in keys {
        let Some(key) = key.as_object() else {
            return Err("jwks must hold JWK objects");
        };
        let text = |name: &str| key.get(name).and_then(Value::as_str);
        if text("use").is_some_and(|u| u != "sig") {
            continue;
        }
        let Some(public) = public_key(key)? else {
            continue;
        };
        if text("alg").is_some_and(|a| a != public.alg.name()) {
            continue;
        }
        let jwk = public_jwk(public.alg, text("kid"));
        usable.push(ClientKey {
            kid: text("kid").map(str::to_owned),
            alg: public.alg,
            jwk: public.members(jwk).finish(),
        });
    }
    if usable.is_empty() {
        return Err("jwks holds no ES256 (P-256) or RS256 (2048 bits or more) signing key");
    }
    Ok(usable)
}

/// The key material of a public JWK: a P-256 point or an RSA modulus and exponent, decoded.
pub(crate) struct PublicKey {
    pub alg: SigningAlg,
    material: Material,
}

enum Material {
    P256 { x: Vec<u8>, y: Vec<u8> },
    Rsa { n: Vec<u8>, e: Vec<u8> },
}

impl PublicKey {
    /// `jwk` with the key's own members after what it holds, in alphabetical order (RFC 7638's
    /// order when `jwk` is empty).
    pub fn members(&self, jwk: JsonObject) -> JsonObject {
        let b64 = |bytes: &[u8]| Base64UrlUnpadded::encode_string(bytes);
        match &self.material {
            Material::P256 { x, y } => jwk
                .string("crv", "P-256")
                .string("kty", "EC")
                .string("x", &b64(x))
                .string("y", &b64(y)),
            Material::Rsa { n, e } => jwk
                .string("e", &b64(e))
                .string("kty", "RSA")
                .string("n", &b64(n)),
        }
    }

    /// Its JWK SHA-256 thumbprint (RFC 7638), base64url: what a DPoP-bound token's `cnf.jkt`
    /// names (RFC 9449 §6.1).
    pub fn thumbprint(&self) -> String {
        let canonical = self.members(JsonObject::new()).finish();
        Base64UrlUnpadded::encode_string(&crate::credentials::sha256(canonical.as_bytes()))
    }
}

/// Whether a JWK holds any member of a private key (RFC 7518 §6.2.2, §6.3.2) or a symmetric
/// one (§6.4): a key that must never travel or be kept where a public key goes.
pub(crate) fn holds_private_members(key: &Map<String, Value>) -> bool {
    ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]
        .iter()
        .any(|member| key.contains_key(*member))
}

/// The public key a JWK object holds, if of a kind that signs here (`Ok(None)`: another kind,
/// skipped); `Err`: a key of such a kind that is malformed or too weak.
pub(crate) fn public_key(key: &Map<String, Value>) -> Result<Option<PublicKey>, &'static str> {
    let text = |name: &str| key.get(name).and_then(Value::as_str);
    let bytes = |name: &str| text(name).and_then(|v| Base64UrlUnpadded::decode_vec(v).ok());
    Ok(Some(match (text("kty"), text("crv")) {
        (Some("EC"), Some("P-256")) => {
            let (Some(x), Some(y)) = (bytes("x"), bytes("y")) else {
                return Err("an EC key needs x and y");
            };
            if x.len() != 32 || y.len() != 32 {
                return Err("a P-256 key's x and y are 32 bytes each");
            }
            PublicKey {
                alg: SigningAlg::Es256,
                material: Material::P256 { x, y },
            }
        }
        (Some("RSA"), _) => {
            let (Some(n), Some(e)) = (bytes("n"), bytes("e")) else {
                return Err("an RSA key needs n and e");
            };
            let bits = n.iter().skip_while(|b| **b == 0).count() * 8;
            if bits < 2048 {
                return Err("an RSA key must have at least 2048 bits");
            }
            PublicKey {
                alg: SigningAlg::Rs256,
                material: Material::Rsa { n, e },
            }
        }
        _ => return Ok(None),
    }))
}

/// A public JWK's first members, in alphabetical order with the key's own after them: its
/// algorithm and its key id (the key material is re-encoded, nothing else of the set is kept).
fn public_jwk(alg: SigningAlg, kid: Option<&str>) -> JsonObject {
    JsonObject::new()
        .string("alg", alg.name())
        .optional_string("kid", kid)
}

/// A client assertion as presented: its header's algorithm and key id, its claims, and what
/// the signature covers.
#[derive(Clone, Debug)]
pub(crate) struct Assertion {
    pub alg: SigningAlg,
    pub kid: Option<String>,
    /// The header's `typ` (RFC 7515 §4.1.9), if it has one.
    pub typ: Option<String>,
    /// `<header>.<payload>`, as signed.
    pub signing_input: String,
    pub signature: Vec<u8>,
    pub claims: Claims,
}

/// The claims RFC 7523 §3 asks of an assertion, and those an identity assertion (ID-JAG §3)
/// adds, which a client assertion does without.
#[derive(Clone, Debug)]
pub(crate) struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: Vec<String>,
    pub exp: u64,
    pub nbf: Option<u64>,
    pub jti: String,
    pub iat: Option<u64>,
    /// The client the assertion is for (ID-JAG).
    pub client_id: Option<String>,
    /// The scopes it grants, space-separated (ID-JAG).
    pub scope: Option<String>,
    /// The resources (RFC 8707) it grants access to (ID-JAG): a string or a list.
    pub resource: Vec<String>,
}

/// Reads a compact JWS with the claims of a client assertion; `None` when it is none (its
/// signature unchecked: that is the host's).
pub(crate) fn assertion(text: &str) -> Option<Assertion> {
    let Jws {
        header,
        claims,
        signing_input,
        signature,
    } = compact(text)?;
    let string = |object: &Map<String, Value>, name: &str| {
        object.get(name).and_then(Value::as_str).map(str::to_owned)
    };
    let number = |name: &str| claims.get(name).and_then(Value::as_u64);
    // A member that is absent or null reads as none; of another type, as no assertion.
    let optional_number = |name: &str| match claims.get(name) {
        None | Some(Value::Null) => Some(None),
        Some(value) => value.as_u64().map(Some),
    };
    let optional_string = |name: &str| match claims.get(name) {
        None | Some(Value::Null) => Some(None),
        Some(value) => value.as_str().map(|text| Some(text.to_owned())),
    };
    let strings = |value: &Value| match value {
        Value::String(one) => Some(vec![one.clone()]),
        Value::Array(many) => many
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>(),
        _ => None,
    };
    let aud = strings(claims.get("aud")?)?;
    let resource = match claims.get("resource") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => strings(value)?,
    };
    let jti = string(&claims, "jti").filter(|j| !j.is_empty() && j.len() <= 256)?;
    Some(Assertion {
        alg: SigningAlg::named(&string(&header, "alg")?)?,
        kid: string(&header, "kid"),
        typ: string(&header, "typ"),
        signing_input,
        signature,
        claims: Claims {
            iss: string(&claims, "iss")?,
            sub: string(&claims, "sub")?,
            aud,
            exp: number("exp")?,
            nbf: match claims.get("nbf") {
                None => None,
                Some(_) => Some(number("nbf")?),
            },
            jti,
            iat: optional_number("iat")?,
            client_id: optional_string("client_id")?,
            scope: optional_string("scope")?,
            resource,
        },
    })
}

/// A compact JWS (RFC 7515 §7.1) as read: its header and payload as JSON objects, what its
/// signature covers, and the signature.
pub(crate) struct Jws {
    pub header: Map<String, Value>,
    pub claims: Map<String, Value>,
    pub signing_input: String,
    pub signature: Vec<u8>,
}

/// Reads a compact JWS of at most `MAX_ASSERTION` bytes whose header and payload are JSON
/// objects and whose header asks for no extension (`crit`, RFC 7515 §4.1.11); `None` otherwise.
pub(crate) fn compact(text: &str) -> Option<Jws> {
    if text.len() > MAX_ASSERTION {
        return None;
    }
    let mut parts = text.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let json = |part: &str| -> Option<Map<String, Value>> {
        let bytes = Base64UrlUnpadded::decode_vec(part).ok()?;
        match serde_json::from_str(core::str::from_utf8(&bytes).ok()?).ok()? {
            Value::Object(object) => Some(object),
            _ => None,
        }
    };
    let header = json(header)?;
    if header.contains_key("crit") {
        return None;
    }
    Some(Jws {
        header,
        claims: json(payload)?,
        signing_input: text.rfind('.').and_then(|at| text.get(..at))?.to_owned(),
        signature: Base64UrlUnpadded::decode_vec(signature).ok()?,
    })
}
