//! Partitions: how the records divide so that a store can spread over many machines.
//!
//! Every record lives in one partition, and every transaction the core asks for stays within
//! one. A user's account is a partition: its links, codes, grants and tokens, everything one
//! consent, exchange, refresh, bearer check, revocation or unlink touches. The count of failed
//! attempts of one attempter is a partition of its own, since it is shared by every account an
//! attacker tries; the token endpoint reads such a count beside the code it exchanges (reads may
//! cross partitions), but writes it alone. So is a stored app's record, the record of a used
//! client or identity assertion, and an identity provider's key set fetched from its `jwks_uri`,
//! each read beside the request's records and written alone.
//!
//! Partitions are derived under the [`ServerKey`], so no one without it can compute a user's
//! partition from an account id, or confirm a guessed account id from a partition.
//!
//! A credential carries its partition sealed, so a host can route a request from the request
//! alone ([`partition_of`](crate::partition_of)) while the credential tells nobody else anything: a code or refresh
//! token is `<route>.<secret>`, an access token `sl.<route>.<secret>`, the secret 43 URL-safe
//! characters (256 bits of entropy) and the route 32: the partition masked by a keyed function
//! of the secret (so two credentials of one user share no visible part, across apps or not)
//! and a 96-bit tag over the partition and the secret. A route that fails its tag names no
//! partition, so a forged credential is refused before any record or object is reached; and
//! the digest under which a credential is stored is of its secret, looked up only in the
//! partition its checked route names.

use crate::prelude::*;
use base64ct::{Base64UrlUnpadded, Encoding as _};
use core::fmt;
use subtle::ConstantTimeEq as _;

use crate::credentials::{
    AccessToken, AssertionDigest, AttempterDigest, AuthorizationCode, RefreshToken, ServerKey,
};
use crate::ids::{AccountId, AppKey};

/// Which partition a record lives in: 96 bits, shown as 16 URL-safe base64 characters.
///
/// ```
/// # use edgegrant::{AccountId, Partition, ServerKey};
/// let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
/// let alice = Partition::of_account(&key, &AccountId::new("dbid:alice").unwrap());
/// assert_eq!(alice.to_string().len(), 16);
/// assert_eq!(alice.to_string().parse::<Partition>(), Ok(alice));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition([u8; Partition::BYTES]);

/// The bytes of a credential's route: the masked partition, then the tag.
const ROUTE_BYTES: usize = 2 * Partition::BYTES;
/// The length of a credential's route in text.
const ROUTE_LEN: usize = 32;
/// The length of a credential's secret in text (32 bytes).
const SECRET_LEN: usize = 43;

impl Partition {
    const BYTES: usize = 12;
    /// The length of its text form.
    pub const TEXT_LEN: usize = 16;

    /// The partition of an account's records: HMAC-SHA256 under the server key of the account
    /// id, with a label no other derivation shares.
    pub fn of_account(key: &ServerKey, account: &AccountId) -> Partition {
        Partition::prefix(&key.mac(&[
            b"edgegrant partition of account\0",
            account.as_str().as_bytes(),
        ]))
    }

    /// The partition of a stored app (a client that registered itself): its own, since every
    /// user's requests read it, derived under the server key like an account's.
    pub fn of_app(key: &ServerKey, app: &AppKey) -> Partition {
        Partition::prefix(&key.mac(&[b"edgegrant partition of app\0", app.as_str().as_bytes()]))
    }

    /// The partition of the key set of the identity provider `issuer` (fetched from its
    /// `jwks_uri`): its own, under `key`.
    pub fn of_provider(key: &ServerKey, issuer: &str) -> Partition {
        Partition::prefix(&key.mac(&[b"edgegrant partition of provider\0", issuer.as_bytes()]))
    }

    /// The partition of a used client assertion: its own, from the digest it is stored under.
    pub(crate) fn of_assertion(digest: &AssertionDigest) -> Partition {
        Partition::prefix(digest.as_bytes())
    }

    /// The partition of one attempter's count: its own, from the digest it is stored under.
    pub(crate) fn of_attempter(digest: &AttempterDigest) -> Partition {
        Partition::prefix(digest.as_bytes())
    }

    fn prefix(bytes: &[u8]) -> Partition {
        let mut out = [0u8; Partition::BYTES];
        for (o, b) in out.iter_mut().zip(bytes) {
            *o = *b;
        }
        Partition(out)
    }

    /// What the partition is masked with in the route of a credential with `secret`.
    fn mask(key: &ServerKey, secret: &[u8; 32]) -> [u8; Partition::BYTES] {
        Partition::prefix(&key.mac(&[b"route mask\0", secret])).0
    }

    /// The tag over this partition and `secret` in the route of a credential. Its label is
    /// short so that the message (54 bytes) fits one SHA-256 block after the keyed pad, as the
    /// mask's does: every bearer check computes both.
    fn tag(self, key: &ServerKey, secret: &[u8; 32]) -> [u8; Partition::BYTES] {
        Partition::prefix(&key.mac(&[b"route tag\0", &self.0, secret])).0
    }

    /// A new authorization code of this partition with `secret`.
    pub(crate) fn code(self, key: &ServerKey, secret: &[u8; 32]) -> AuthorizationCode {
        AuthorizationCode::minted(self.seal(key, secret, ""))
    }

    /// A new access token of this partition with `secret`.
    pub(crate) fn access_token(self, key: &ServerKey, secret: &[u8; 32]) -> AccessToken {
        AccessToken::minted(self.seal(key, secret, AccessToken::PREFIX))
    }

    /// A new refresh token of this partition with `secret`.
    pub(crate) fn refresh_token(self, key: &ServerKey, secret: &[u8; 32]) -> RefreshToken {
        RefreshToken::minted(self.seal(key, secret, ""))
    }

    /// The visible form of a credential of this partition with `secret`:
    /// `<prefix><route>.<secret>`, written into one string of its final length.
    fn seal(self, key: &ServerKey, secret: &[u8; 32], prefix: &str) -> String {
        let mut route = [0u8; ROUTE_BYTES];
        let (masked, tag) = route.split_at_mut(Partition::BYTES);
        for ((m, p), k) in masked
            .iter_mut()
            .zip(self.0)
            .zip(Partition::mask(key, secret))
        {
            *m = p ^ k;
        }
        tag.copy_from_slice(&self.tag(key, secret));
        let (mut route_text, mut secret_text) = ([0u8; ROUTE_LEN], [0u8; SECRET_LEN]);
        let mut sealed = String::with_capacity(prefix.len() + ROUTE_LEN + 1 + SECRET_LEN);
        sealed.push_str(prefix);
        // Each buffer is exactly as long as its encoding: neither encode can fail.
        sealed.push_str(Base64UrlUnpadded::encode(&route, &mut route_text).unwrap_or_default());
        sealed.push('.');
        sealed.push_str(Base64UrlUnpadded::encode(secret, &mut secret_text).unwrap_or_default());
        sealed
    }

    /// Opens the route of a presented credential (`<route>.<secret>`, after any prefix): its
    /// partition, or `None` for anything this core did not mint under `key` (garbled, forged,
    /// or of another deployment), which is refused without a read.
    pub(crate) fn of_credential(key: &ServerKey, text: &str) -> Option<Partition> {
        let (route_text, secret_text) = text.split_once('.')?;
        if route_text.len() != ROUTE_LEN || secret_text.len() != SECRET_LEN {
            return None;
        }
        let mut route = [0u8; ROUTE_BYTES];
        let mut secret = [0u8; 32];
        Base64UrlUnpadded::decode(route_text, &mut route).ok()?;
        Base64UrlUnpadded::decode(secret_text, &mut secret).ok()?;
        let (masked, tag) = route.split_at(Partition::BYTES);
        let mut partition = Partition([0u8; Partition::BYTES]);
        for ((p, m), k) in partition
            .0
            .iter_mut()
            .zip(masked)
            .zip(Partition::mask(key, &secret))
        {
            *p = m ^ k;
        }
        bool::from(partition.tag(key, &secret).ct_eq(tag)).then_some(partition)
    }
}

impl Partition {
    /// Its text appended to `out` (as `Display` writes it).
    pub(crate) fn push_text(self, out: &mut String) {
        crate::credentials::push_base64(out, &self.0);
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buffer = [0u8; Partition::TEXT_LEN];
        match Base64UrlUnpadded::encode(&self.0, &mut buffer) {
            Ok(text) => f.write_str(text),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl fmt::Debug for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Partition({self})")
    }
}

/// Text that is not a partition (16 URL-safe base64 characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a partition")]
pub struct BadPartition;

impl core::str::FromStr for Partition {
    type Err = BadPartition;
    fn from_str(text: &str) -> Result<Partition, BadPartition> {
        if text.len() != Partition::TEXT_LEN {
            return Err(BadPartition);
        }
        let mut bytes = [0u8; Partition::BYTES];
        match Base64UrlUnpadded::decode(text, &mut bytes) {
            Ok(decoded) if decoded.len() == Partition::BYTES => Ok(Partition(bytes)),
            _ => Err(BadPartition),
        }
    }
}
