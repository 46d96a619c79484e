//! Client assertions' signatures (`private_key_jwt`), which the core asks the host to verify
//! (`Step::Verify`): ES256 and RS256 with RustCrypto's crates, natively (the JS hosts use
//! WebCrypto; in the wasm module the crates would cost 27 KiB and several times the time).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use edgegrant::{SigningAlg, Verify};
use p256::ecdsa::signature::Verifier as _;
use serde_json::Value;

/// Whether `verify`'s signature holds under its key (a JWK): ES256 (P-256, `r ‖ s`) or RS256
/// (PKCS #1 v1.5, SHA-256). Anything that cannot be read does not hold.
pub fn holds(verify: &Verify) -> bool {
    let Ok(Value::Object(jwk)) = serde_json::from_str::<Value>(&verify.key) else {
        return false;
    };
    let bytes = |name: &str| {
        jwk.get(name)
            .and_then(Value::as_str)
            .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
    };
    let message = verify.message.as_bytes();
    match verify.alg {
        SigningAlg::Es256 => {
            let (Some(x), Some(y)) = (bytes("x"), bytes("y")) else {
                return false;
            };
            let (Ok(x), Ok(y)) = (<[u8; 32]>::try_from(x), <[u8; 32]>::try_from(y)) else {
                return false;
            };
            let point = p256::EncodedPoint::from_affine_coordinates(&x.into(), &y.into(), false);
            let (Ok(key), Ok(signature)) = (
                p256::ecdsa::VerifyingKey::from_encoded_point(&point),
                p256::ecdsa::Signature::from_slice(&verify.signature),
            ) else {
                return false;
            };
            key.verify(message, &signature).is_ok()
        }
        SigningAlg::Rs256 => {
            let (Some(n), Some(e)) = (bytes("n"), bytes("e")) else {
                return false;
            };
            let Ok(key) = rsa::RsaPublicKey::new(
                rsa::BigUint::from_bytes_be(&n),
                rsa::BigUint::from_bytes_be(&e),
            ) else {
                return false;
            };
            let key = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(key);
            let Ok(signature) = rsa::pkcs1v15::Signature::try_from(verify.signature.as_slice())
            else {
                return false;
            };
            key.verify(message, &signature).is_ok()
        }
    }
}
