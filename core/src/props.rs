//! Grant props: what the host keeps with a grant — an upstream API's token that an MCP server
//! uses on the user's behalf, say — given with the signed-in user when the grant is made
//! ([`User::props`](crate::User)), carried from the code to the grant and to every access token
//! minted under it, and handed back with the principal of each API call
//! ([`Principal::props`](crate::Principal)). They end with the grant: no record outlives it.
//!
//! Stored sealed: ChaCha20-Poly1305 (RFC 8439) under a key derived from the server key, with a
//! fresh 96-bit nonce from the request's entropy, bound to the app and the account they were
//! given for (the associated data), so that no stored record shows them and none opens under
//! another app or account. A record whose props do not open is a fault of the store's.

use crate::credentials::ServerKey;
use crate::ids::{AccountId, AppKey};
use crate::prelude::*;
use base64ct::{Base64UrlUnpadded, Encoding};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use serde::{Deserialize, Serialize};

/// A grant's props, sealed: base64url of the nonce, then the ciphertext with its tag.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SealedProps(String);

impl core::fmt::Debug for SealedProps {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SealedProps(<sealed>)")
    }
}

/// The nonce's length (96 bits).
pub(crate) const NONCE_LEN: usize = 12;

/// The AEAD under the server key's props key (a key of its own, derived by label).
fn cipher(key: &ServerKey) -> ChaCha20Poly1305 {
    ChaCha20Poly1305::new(Key::from_slice(&key.mac(&[b"grant props\0"])))
}

/// What the sealed props are bound to: the app and the account, a NUL between (neither holds
/// one).
fn bound_to(app: &AppKey, account: &AccountId) -> Vec<u8> {
    let mut aad = Vec::with_capacity(app.as_str().len() + account.as_str().len() + 1);
    aad.extend_from_slice(app.as_str().as_bytes());
    aad.push(0);
    aad.extend_from_slice(account.as_str().as_bytes());
    aad
}

impl SealedProps {
    /// `props` sealed for `app` and `account` with `nonce` (fresh from the request's entropy).
    pub(crate) fn seal(
        key: &ServerKey,
        props: &str,
        app: &AppKey,
        account: &AccountId,
        nonce: [u8; NONCE_LEN],
    ) -> SealedProps {
        let aad = bound_to(app, account);
        let payload = Payload {
            msg: props.as_bytes(),
            aad: &aad,
        };
        // Encryption fails only past the cipher's length limit (256 GiB), far above any input.
        let sealed = cipher(key)
            .encrypt(Nonce::from_slice(&nonce), payload)
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(NONCE_LEN + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        SealedProps(Base64UrlUnpadded::encode_string(&bytes))
    }

    /// The props, opened for `app` and `account`; `None` if they were sealed for others, under
    /// another key, or altered.
    pub(crate) fn open(sealed: &str, key: &ServerKey, app: &str, account: &str) -> Option<String> {
        let bytes = Base64UrlUnpadded::decode_vec(sealed).ok()?;
        let (nonce, ciphertext) = bytes.split_at_checked(NONCE_LEN)?;
        let aad = bound_to(&AppKey::new(app).ok()?, &AccountId::new(account).ok()?);
        let payload = Payload {
            msg: ciphertext,
            aad: &aad,
        };
        let opened = cipher(key)
            .decrypt(Nonce::from_slice(nonce), payload)
            .ok()?;
        String::from_utf8(opened).ok()
    }

    /// Sealed props as a record holds them (for tests of records).
    #[cfg(test)]
    pub(crate) fn from_stored(text: String) -> SealedProps {
        SealedProps(text)
    }

    /// The sealed text, as stored.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> ServerKey {
        ServerKey::from_base64(&Base64UrlUnpadded::encode_string(&[byte; 32]))
            .unwrap_or_else(|_| unreachable!())
    }

    #[test]
    fn props_open_only_under_their_key_for_their_app_and_account_and_never_show_in_clear() {
        let app = AppKey::new("mcp").unwrap_or_else(|_| unreachable!());
        let alice = AccountId::new("alice").unwrap_or_else(|_| unreachable!());
        let props = r#"{"upstream_token":"gho_secret"}"#;
        let sealed = SealedProps::seal(&key(1), props, &app, &alice, [7; NONCE_LEN]);
        assert!(!sealed.as_str().contains("gho_secret"));
        assert_eq!(
            SealedProps::open(sealed.as_str(), &key(1), "mcp", "alice").as_deref(),
            Some(props)
        );
        assert_eq!(
            SealedProps::open(sealed.as_str(), &key(2), "mcp", "alice"),
            None
        );
        assert_eq!(
            SealedProps::open(sealed.as_str(), &key(1), "other", "alice"),
            None
        );
        assert_eq!(
            SealedProps::open(sealed.as_str(), &key(1), "mcp", "bob"),
            None
        );
        // One character of the ciphertext changed (base64url: ASCII throughout).
        let altered: String = sealed
            .as_str()
            .chars()
            .enumerate()
            .map(|(i, c)| match (i, c) {
                (20, 'A') => 'B',
                (20, _) => 'A',
                _ => c,
            })
            .collect();
        assert_eq!(SealedProps::open(&altered, &key(1), "mcp", "alice"), None);
        // A fresh nonce: the same props seal differently.
        let again = SealedProps::seal(&key(1), props, &app, &alice, [8; NONCE_LEN]);
        assert_ne!(again, sealed);
    }
}
