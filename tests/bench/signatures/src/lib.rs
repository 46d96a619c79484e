//! The two verifications a `private_key_jwt` client assertion needs (RFC 7518 ES256 and RS256),
//! as RustCrypto would do them inside the wasm module: what `measure.mjs` weighs against WebCrypto.

use wasm_bindgen::prelude::*;

/// ES256: x, y (32 bytes each), the JWS signature (r||s, 64 bytes), the signing input.
#[cfg(feature = "es")]
#[wasm_bindgen]
pub fn verify_es256(x: &[u8], y: &[u8], signature: &[u8], message: &[u8]) -> bool {
    use p256::ecdsa::{signature::Verifier, Signature, VerifyingKey};
    use p256::{EncodedPoint, FieldBytes};
    let (Ok(x), Ok(y)) = (<[u8; 32]>::try_from(x), <[u8; 32]>::try_from(y)) else { return false };
    let point = EncodedPoint::from_affine_coordinates(&FieldBytes::from(x), &FieldBytes::from(y), false);
    let Ok(key) = VerifyingKey::from_encoded_point(&point) else { return false };
    let Ok(signature) = Signature::from_slice(signature) else { return false };
    key.verify(message, &signature).is_ok()
}

/// RS256: n, e (big-endian), the signature, the signing input.
#[cfg(feature = "rs")]
#[wasm_bindgen]
pub fn verify_rs256(n: &[u8], e: &[u8], signature: &[u8], message: &[u8]) -> bool {
    use rsa::{pkcs1v15::{Signature, VerifyingKey}, signature::Verifier, BigUint, RsaPublicKey};
    let Ok(key) = RsaPublicKey::new(BigUint::from_bytes_be(n), BigUint::from_bytes_be(e)) else { return false };
    let key = VerifyingKey::<sha2::Sha256>::new(key);
    let Ok(signature) = Signature::try_from(signature) else { return false };
    key.verify(message, &signature).is_ok()
}
