//! Credentials (secrets) and their digests, and the entropy they are made from.
//!
//! The spec insists the credentials are "distinct, not interchangeable", so each is its own type.
//! Their `Debug` never shows the secret; only [`expose`](AccessToken::expose) does, for the one
//! place a secret must leave: the response to the client. Storage only ever sees digests.

use crate::prelude::*;
use base64ct::{Base64UrlUnpadded, Encoding as _};
use core::fmt;
use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

use crate::ids::GrantId;

/// How many bytes of entropy every call takes.
pub const ENTROPY_LEN: usize = 112;

/// Randomness supplied by the host on every call (from a CSPRNG: `crypto.getRandomValues`,
/// `getrandom`). The core derives every token from it and never draws randomness itself, so
/// fixed entropy gives fixed tokens in a test vector.
///
/// Layout: bytes 0–31 the code or access token, 32–63 the refresh token (or the seed of a
/// rotation, from which its tokens are derived), 64–79 the grant id, 80–87 a new link's first
/// epoch, 88–95 a new ledger's first generation; the rest is reserved. Each credential
/// carries 256 bits (and its sealed partition: see [`Partition`](crate::Partition)).
#[derive(Clone)]
pub struct Entropy([u8; ENTROPY_LEN]);

impl Entropy {
    /// Wraps exactly [`ENTROPY_LEN`] random bytes.
    pub fn new(bytes: [u8; ENTROPY_LEN]) -> Self {
        Entropy(bytes)
    }

    /// Wraps a slice that must be exactly [`ENTROPY_LEN`] bytes long.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Entropy)
    }

    fn span<const N: usize>(&self, start: usize) -> [u8; N] {
        let mut out = [0u8; N];
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.0.get(start + i).copied().unwrap_or_default();
        }
        out
    }

    /// 256 bits for the authorization code or the access token of this call.
    pub(crate) fn primary(&self) -> [u8; 32] {
        self.span(0)
    }

    /// 256 bits for the refresh token of this call.
    pub(crate) fn secondary(&self) -> [u8; 32] {
        self.span(32)
    }

    /// 128 bits for a grant id.
    pub(crate) fn grant_id(&self) -> GrantId {
        GrantId(Base64UrlUnpadded::encode_string(&self.span::<16>(64)).into())
    }

    /// 64 bits for the first epoch of a new link: a link made again after an earlier one was
    /// purged never takes up that one's epoch, so nothing issued under it can come back.
    pub(crate) fn link_epoch(&self) -> u64 {
        u64::from_le_bytes(self.span(80))
    }

    /// 96 bits for the nonce that seals the props of a grant made in this call.
    pub(crate) fn props_nonce(&self) -> [u8; 12] {
        self.span(96)
    }

    /// 64 bits for the first generation of a new ledger: a ledger made again after an earlier
    /// one was purged never vouches for that one's tokens.
    pub(crate) fn ledger_generation(&self) -> u64 {
        u64::from_le_bytes(self.span(88))
    }
}

impl fmt::Debug for Entropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Entropy(..)")
    }
}

pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// `bytes` (at most 32) in URL-safe base64 without padding, appended to `out`.
pub(crate) fn push_base64(out: &mut String, bytes: &[u8]) {
    let mut text = [0u8; 43];
    // The buffer holds the encoding of 32 bytes: a longer input is a bug, written as nothing.
    out.push_str(Base64UrlUnpadded::encode(bytes, &mut text).unwrap_or_default());
}

macro_rules! digest_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name([u8; 32]);

        impl $name {
            /// The digest in URL-safe base64 (how it appears in storage keys and records).
            pub fn to_base64(&self) -> String {
                let mut text = String::with_capacity(43);
                self.push_base64(&mut text);
                text
            }

            /// Its URL-safe base64 appended to `out` (a storage key's part), no string of its own.
            pub(crate) fn push_base64(&self, out: &mut String) {
                push_base64(out, &self.0);
            }

            /// Parses the URL-safe base64 form.
            pub fn from_base64(text: &str) -> Option<Self> {
                let mut bytes = [0u8; 32];
                let decoded = Base64UrlUnpadded::decode(text, &mut bytes).ok()?.len();
                (decoded == 32).then_some($name(bytes))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.to_base64())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_base64())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::from_base64(&text)
                    .ok_or_else(|| serde::de::Error::custom("expected 32 bytes in URL-safe base64"))
            }
        }
    };
}

/// What the digest of a sealed credential (`<route>.<secret>`, after any prefix) covers: its
/// secret's 43 characters, one SHA-256 block where the whole would take two. That is enough to
/// name one credential: its route is checked under the server key before anything is looked
/// up (the tag covers partition and secret), and the digest is looked up only in the partition
/// the route names, where one secret has one valid route.
fn sealed_secret(text: &str) -> &str {
    text.rsplit('.').next().unwrap_or(text)
}

/// What the digest of any other credential covers: all of it.
fn whole(text: &str) -> &str {
    text
}

macro_rules! credential {
    ($(#[$doc:meta])* $name:ident, $digest:ident, $covered:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            /// Wraps a credential as presented by a client.
            pub fn presented(value: impl Into<String>) -> Self {
                $name(value.into())
            }

            /// The secret itself. Call only to hand it to its owner (a response body or redirect).
            pub fn expose(&self) -> &str {
                &self.0
            }

            /// The SHA-256 digest under which it is stored.
            pub fn digest(&self) -> $digest {
                $name::digest_of(&self.0)
            }

            /// The digest of a credential as presented, without keeping the credential.
            pub fn digest_of(presented: &str) -> $digest {
                $digest(sha256($covered(presented).as_bytes()))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}(<redacted>)", stringify!($name))
            }
        }
    };
}

digest_type!(
    /// SHA-256 of an [`AuthorizationCode`]'s secret: the storage key of its record.
    CodeDigest
);
digest_type!(
    /// SHA-256 of an [`AccessToken`]'s secret: the storage key of its record.
    AccessTokenDigest
);
digest_type!(
    /// SHA-256 of a [`RefreshToken`]'s secret: the storage key of its record.
    RefreshTokenDigest
);
digest_type!(
    /// SHA-256 of an app's [`ClientSecret`], as registered in the configuration.
    SecretDigest
);
digest_type!(
    /// SHA-256 of a [`RegistrationToken`] (RFC 7592), kept in its app's record.
    RegistrationTokenDigest
);
digest_type!(
    /// SHA-256 of whom failed attempts are counted against (an app, a network source, an
    /// account name): the storage key of the count, which so never holds an address or a name.
    AttempterDigest
);

digest_type!(
    /// HMAC of a client assertion's client and `jti` under the server key: the storage key of
    /// the record that makes the assertion single-use (RFC 7523 §3, item 7).
    AssertionDigest
);

impl AssertionDigest {
    /// The digest of the assertion `jti` of `client`, the two joined by a NUL (which neither
    /// holds), so no two clients' assertions share one.
    pub(crate) fn of(key: &ServerKey, client: &str, jti: &str) -> AssertionDigest {
        AssertionDigest(key.mac(&[b"assertion\0", client.as_bytes(), b"\0", jti.as_bytes()]))
    }

    /// The digest of the identity assertion `jti` of the provider `issuer` (ID-JAG): its own
    /// domain, so that it never meets a client assertion's.
    pub(crate) fn of_identity(key: &ServerKey, issuer: &str, jti: &str) -> AssertionDigest {
        AssertionDigest(key.mac(&[
            b"identity-assertion\0",
            issuer.as_bytes(),
            b"\0",
            jti.as_bytes(),
        ]))
    }

    /// The digest of the DPoP proof `jti` made with the key of `thumbprint` (RFC 9449 §11.1):
    /// its own domain, so that it never meets an assertion's.
    pub(crate) fn of_proof(key: &ServerKey, thumbprint: &str, jti: &str) -> AssertionDigest {
        AssertionDigest(key.mac(&[
            b"dpop-proof\0",
            thumbprint.as_bytes(),
            b"\0",
            jti.as_bytes(),
        ]))
    }

    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl AttempterDigest {
    /// The digest of `value` counted as a `kind`: HMAC-SHA256 under the server key (an
    /// unkeyed hash of an IPv4 address is undone by trying them all), the two joined by a NUL,
    /// which neither holds, so no two attempters share a digest.
    pub(crate) fn of(key: &ServerKey, kind: &str, value: &str) -> AttempterDigest {
        AttempterDigest(key.mac(&[kind.as_bytes(), b"\0", value.as_bytes()]))
    }

    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

credential!(
    /// A one-time authorization code: `<route>.<secret>`, the route 32 URL-safe characters
    /// (its [`Partition`](crate::Partition), sealed), the secret 43 (256 bits).
    AuthorizationCode,
    CodeDigest,
    sealed_secret
);
credential!(
    /// A bearer access token: `sl.<route>.<secret>`, the route 32 URL-safe characters (its
    /// [`Partition`](crate::Partition), sealed), the secret 43 (256 bits).
    AccessToken,
    AccessTokenDigest,
    sealed_secret
);
credential!(
    /// A refresh token: `<route>.<secret>`, the route 32 URL-safe characters (its
    /// [`Partition`](crate::Partition), sealed), the secret 43 (256 bits). Reusable; never expires by time.
    RefreshToken,
    RefreshTokenDigest,
    sealed_secret
);
credential!(
    /// An app secret, as sent in `client_secret` or as the Basic-auth password.
    ClientSecret,
    SecretDigest,
    whole
);

credential!(
    /// A registration access token (RFC 7592 §1): what a client that registered itself presents
    /// to read, update or delete its registration. 43 URL-safe characters (256 bits).
    RegistrationToken,
    RegistrationTokenDigest,
    whole
);

/// The credentials the core mints, from their visible form
/// ([`Partition`](crate::Partition) seals it).
macro_rules! minted {
    ($($name:ident),*) => {$(
        impl $name {
            pub(crate) fn minted(text: String) -> Self {
                $name(text)
            }
        }
    )*};
}
minted!(
    AuthorizationCode,
    AccessToken,
    RefreshToken,
    ClientSecret,
    RegistrationToken
);

impl AccessToken {
    /// The prefix every access token this core mints starts with.
    pub const PREFIX: &'static str = "sl.";
}

/// The server's own secret (`server_key` in the configuration: 32 random bytes, base64url,
/// kept by the host like any secret, never stored with the records): what makes records read
/// from storage and credentials seen in the wild useless on their own. It keys the partitions
/// ([`Partition::of_account`](crate::Partition::of_account)) and the seal of every credential (so a credential names its
/// partition to this server alone, and a forged one is refused before any read), the digests
/// of attempters, and the derivation of a rotation's tokens ([`RotationSeed`]), so that a copy
/// of the store and an old refresh token yield nothing.
///
/// ```
/// # use edgegrant::ServerKey;
/// let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
/// assert_eq!(format!("{key:?}"), "ServerKey(<redacted>)");
/// assert!(ServerKey::from_base64("too short").is_err());
/// ```
#[derive(Clone)]
pub struct ServerKey {
    bytes: [u8; 32],
    /// HMAC-SHA256 keyed with `bytes`, its inner and outer pads already hashed: every MAC
    /// starts from a copy, two SHA-256 blocks fewer than keying it afresh.
    keyed: Hmac<Sha256>,
}

impl PartialEq for ServerKey {
    fn eq(&self, other: &ServerKey) -> bool {
        self.bytes.ct_eq(&other.bytes).into()
    }
}

impl Eq for ServerKey {}

impl ServerKey {
    /// The key from its base64url text (43 characters, no padding).
    pub fn from_base64(text: &str) -> Result<ServerKey, &'static str> {
        let mut bytes = [0u8; 32];
        match Base64UrlUnpadded::decode(text.trim(), &mut bytes) {
            Ok(decoded) if decoded.len() == 32 => Ok(ServerKey {
                bytes,
                // Any key length is valid for HMAC.
                keyed: Hmac::new_from_slice(&bytes).map_err(|_| "is not an HMAC key")?,
            }),
            _ => Err("must be 32 bytes, base64url without padding (43 characters)"),
        }
    }

    /// Its base64url text.
    pub fn to_base64(&self) -> String {
        Base64UrlUnpadded::encode_string(&self.bytes)
    }

    /// HMAC-SHA256 under the key of the concatenated `parts` (each caller's parts have fixed
    /// lengths but for the last, and begin with a label of their own that ends with a NUL).
    /// A message of up to 55 bytes costs two SHA-256 blocks, each further 64 bytes one more:
    /// the labels of the MACs every request computes are short for that reason.
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.keyed.clone();
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }
}

impl fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerKey(<redacted>)")
    }
}

/// The secret of one refresh-token rotation, stored in the grant: the successor tokens are
/// derived from it and the superseded token under the [`ServerKey`], so that a retry with that
/// token can be given them again although only their digests are stored. None of the three
/// alone or any two without the key yields them — a copy of the store and an old token
/// included; the grant keeps only its last rotation's seed, so no older token leads anywhere.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RotationSeed([u8; 32]);

impl RotationSeed {
    /// A fresh seed (the entropy's refresh-token bytes: a rotation mints no other token from
    /// them).
    pub(crate) fn draw(entropy: &Entropy) -> Self {
        RotationSeed(entropy.secondary())
    }

    /// HMAC-SHA256 under `key` of `label`, the seed and the superseded token. The labels end
    /// with a NUL and the seed has a fixed length, so no two inputs share an encoding; they are
    /// short so that the message (at most 119 bytes) takes two SHA-256 blocks, not three.
    fn derive(&self, key: &ServerKey, label: &[u8], superseded: &RefreshToken) -> [u8; 32] {
        key.mac(&[label, &self.0, superseded.0.as_bytes()])
    }

    /// The secret of the refresh token that supersedes `superseded` in this rotation.
    pub(crate) fn refresh_secret(&self, key: &ServerKey, superseded: &RefreshToken) -> [u8; 32] {
        self.derive(key, b"rotated rt\0", superseded)
    }

    /// The secret of the access token this rotation answers with.
    pub(crate) fn access_secret(&self, key: &ServerKey, superseded: &RefreshToken) -> [u8; 32] {
        self.derive(key, b"rotated at\0", superseded)
    }
}

impl fmt::Debug for RotationSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RotationSeed(<redacted>)")
    }
}

/// As bytes: an array would be 32 elements, each a call of its own in the wasm.
impl Serialize for RotationSeed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for RotationSeed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = RotationSeed;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("32 bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<RotationSeed, E> {
                bytes
                    .try_into()
                    .map(RotationSeed)
                    .map_err(|_| E::invalid_length(bytes.len(), &self))
            }
        }
        d.deserialize_bytes(Bytes)
    }
}

impl SecretDigest {
    /// Whether `secret` hashes to this digest, compared in constant time.
    ///
    /// ```
    /// # use edgegrant::{ClientSecret, SecretDigest};
    /// let stored: SecretDigest = ClientSecret::presented("s3cr3t").digest();
    /// assert!(stored.matches(&ClientSecret::presented("s3cr3t")));
    /// assert!(!stored.matches(&ClientSecret::presented("s3cr3T")));
    /// ```
    pub fn matches(&self, secret: &ClientSecret) -> bool {
        self.is(&secret.digest())
    }

    /// Whether two digests are equal, compared in constant time.
    pub(crate) fn is(&self, other: &SecretDigest) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl RegistrationTokenDigest {
    /// Whether two digests are equal, compared in constant time.
    pub(crate) fn is(&self, other: &RegistrationTokenDigest) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

/// SHA-256 then URL-safe base64 without padding: the S256 transform of RFC 7636 §4.2.
pub(crate) fn s256(text: &str) -> String {
    Base64UrlUnpadded::encode_string(&sha256(text.as_bytes()))
}

/// Constant-time equality of two strings (lengths may differ, which is not secret here).
pub(crate) fn ct_str_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}
