//! Sign-in secrets, as the JS hosts keep them (examples/host/app.mjs): scrypt password hashes
//! and HMAC-signed session cookies, so a cookie or a hash from one host works in the others.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// How long a session lasts, by the server's clock (the cookie's `Max-Age` says the same).
pub const SESSION_SECONDS: u64 = 86_400;

/// Session cookies: `session=<base64url(account id)>.<expiry, Unix seconds>.<base64url(HMAC-SHA256
/// of both)>`, as the JS hosts write them. They hold no state, so sessions survive a restart; the
/// server refuses one past its expiry whatever the browser kept, and the signature covers it.
#[derive(Clone)]
pub struct Sessions {
    /// HMAC keyed with the secret, cloned for each cookie.
    keyed: HmacSha256,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sessions { .. }")
    }
}

/// The cookie's attributes; `Secure` when the page was served over https.
fn attributes(secure: bool, max_age: u64) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}")
}

impl Sessions {
    /// Cookies signed with `secret`.
    pub fn new(secret: &str) -> Result<Sessions, String> {
        let keyed = HmacSha256::new_from_slice(secret.as_bytes())
            .map_err(|e| format!("session_secret: {e}"))?;
        Ok(Sessions { keyed })
    }

    fn sign(&self, signed: &str) -> String {
        let mut mac = self.keyed.clone();
        mac.update(signed.as_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// The `Set-Cookie` value that signs `account_id` in at `now` until `expires`.
    pub fn cookie(&self, account_id: &str, now: u64, expires: u64, secure: bool) -> String {
        let signed = format!("{}.{expires}", URL_SAFE_NO_PAD.encode(account_id));
        let mac = self.sign(&signed);
        let max_age = expires.saturating_sub(now);
        format!("session={signed}.{mac}{}", attributes(secure, max_age))
    }

    /// The `Set-Cookie` value that signs out.
    pub fn cleared(&self, secure: bool) -> String {
        format!("session={}", attributes(secure, 0))
    }

    /// The account id of the first `session` cookie among `cookie_headers`, if its signature
    /// holds (checked in constant time) and it has not expired at `now`.
    pub fn account_id<'a>(
        &self,
        cookie_headers: impl Iterator<Item = &'a str>,
        now: u64,
    ) -> Option<String> {
        let cookie = cookie_headers
            .flat_map(|header| header.split(';'))
            .map(str::trim_start)
            .find_map(|cookie| cookie.strip_prefix("session="))?;
        let (signed, signature) = cookie.rsplit_once('.')?;
        let (value, expires) = signed.split_once('.')?;
        let expected = self.sign(signed);
        if !bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
            return None;
        }
        let valid = expires.len() <= 15
            && expires.bytes().all(|b| b.is_ascii_digit())
            && expires.parse::<u64>().is_ok_and(|end| now < end);
        if !valid {
            return None;
        }
        String::from_utf8(URL_SAFE_NO_PAD.decode(value).ok()?).ok()
    }
}

/// Node's `scryptSync` defaults: N = 2^14, r = 8, p = 1.
const SCRYPT_LOG_N: u8 = 14;
const SCRYPT_R: u32 = 8;
const SCRYPT_P: u32 = 1;

/// Whether `password` matches `stored`, `scrypt$<salt hex>$<hash hex>` (the hash's length is
/// the key length, as examples/node/hash-password.mjs writes it). Slow on purpose: run it off
/// the async threads. Anything else stored matches no password.
pub fn password_matches(stored: &str, password: &str) -> bool {
    let mut parts = stored.split('$');
    let (Some("scrypt"), Some(salt), Some(hash)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(salt), Some(expected)) = (hex(salt), hex(hash)) else {
        return false;
    };
    if salt.is_empty() || expected.is_empty() {
        return false;
    }
    match derive(password, &salt, expected.len()) {
        Some(actual) => bool::from(actual.ct_eq(&expected)),
        None => false,
    }
}

/// Spends what checking a password costs, for a user who does not exist: the answer then takes
/// as long as for a wrong password, so the time does not tell which names exist.
pub fn spend_password_check(password: &str) {
    let _ = derive(password, b"no such user", 32);
}

fn derive(password: &str, salt: &[u8], len: usize) -> Option<Vec<u8>> {
    // The length in the parameters only matters to the PHC string format, which is not used.
    let params = scrypt::Params::new(
        SCRYPT_LOG_N,
        SCRYPT_R,
        SCRYPT_P,
        scrypt::Params::RECOMMENDED_LEN,
    )
    .ok()?;
    let mut out = vec![0u8; len];
    scrypt::scrypt(password.as_bytes(), salt, &params, &mut out).ok()?;
    Some(out)
}

/// The bytes of an even-length hex string.
pub fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_users_sign_in() {
        // examples/node/config.sample.json: alice / alice-password.
        let alice = "scrypt$a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1$ee05c6a93fbb44d7543b1656c0fbafca6e4cb80719890a9d7a1f876446705ed6";
        assert!(password_matches(alice, "alice-password"));
        assert!(!password_matches(alice, "bob-password"));
        assert!(!password_matches("!test-mode", ""));
        assert!(!password_matches("scrypt$zz$00", "x"));
    }

    #[test]
    fn cookies_round_trip_expire_and_refuse_forgeries() {
        let sessions = Sessions::new("a-session-secret-of-32-characters-or-more").unwrap();
        let cookie = sessions.cookie("dbid:alice", 1_000, 1_000 + SESSION_SECONDS, false);
        assert!(cookie.ends_with("; Path=/; HttpOnly; SameSite=Lax; Max-Age=86400"));
        let pair = cookie.split(';').next().unwrap_or_default();
        let header = format!("theme=dark; {pair}");
        let at = |now: u64| sessions.account_id([header.as_str()].into_iter(), now);
        assert_eq!(at(1_000).as_deref(), Some("dbid:alice"));
        assert_eq!(at(87_399).as_deref(), Some("dbid:alice"));
        assert_eq!(at(87_400), None, "the server ends it after a day");
        let stretched = pair.replace(".87400.", ".999999.");
        assert_eq!(
            sessions.account_id([stretched.as_str()].into_iter(), 1_000),
            None
        );
        let forged = pair.replace("ZGJpZDphbGljZQ", "ZGJpZDpib2I");
        assert_eq!(
            sessions.account_id([forged.as_str()].into_iter(), 1_000),
            None
        );
        let other = Sessions::new("another-session-secret-of-32-characters").unwrap();
        assert_eq!(other.account_id([pair].into_iter(), 1_000), None);
        assert!(sessions
            .cookie("dbid:alice", 0, 1, true)
            .ends_with("; Secure"));
        assert_eq!(
            sessions.cleared(true),
            "session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure"
        );
    }

    #[test]
    fn the_cookie_is_the_node_hosts() {
        // Computed with examples/host/app.mjs sessions("…").cookie("dbid:AAnobody", { now: 0, expires: 86400 }).
        let sessions = Sessions::new("conformance-runner-host-start-secret-0123456789").unwrap();
        assert_eq!(
            sessions.cookie("dbid:AAnobody", 0, 86_400, false),
            "session=ZGJpZDpBQW5vYm9keQ.86400.2RDcpgGxN_LysRH8nHlvIUNxIoX8RZCDHd2YgyMmG9A; Path=/; HttpOnly; SameSite=Lax; Max-Age=86400"
        );
    }
}
