//! Partitions: how the records divide so that a store can spread over many machines.
//!
//! Every record lives in one partition, and every transaction the core asks for stays within
//! one. A user's account is a partition: its links, codes, grants and tokens, everything one
//! consent, exchange, refresh, bearer check, revocation or unlink touches. The count of failed
//! attempts of one attempter is a partition of its own, since it is shared by every account an
//! attacker tries; the token endpoint reads such a count beside the code it exchanges (reads may
//! cross partitions), but writes it alone.
//!
//! Partitions are derived under the [`ServerKey`], so no one without it can compute a user's
//! partition from an account id, or confirm a guessed account id from a partition.
//!
//! A credential carries its partition sealed, so a host can route a request from the request
//! alone ([`partition_of`]) while the credential tells nobody else anything: a code or refresh
//! token is `<route>.<secret>`, an access token `sl.<route>.<secret>`, the secret 43 URL-safe
//! characters (256 bits of entropy) and the route 32: the partition masked by a keyed function
//! of the secret (so two credentials of one user share no visible part, across apps or not)
//! and a 96-bit tag over the partition and the secret. A route that fails its tag names no
//! partition, so a forged credential is refused before any record or object is reached; and
//! the digest under which a credential is stored covers the whole of it.

use base64ct::{Base64UrlUnpadded, Encoding as _};
use std::fmt;
use subtle::ConstantTimeEq as _;

use crate::config::Config;
use crate::credentials::{AccessToken, AttempterDigest, ServerKey};
use crate::endpoints::token_admin;
use crate::ids::AccountId;
use crate::step::Input;
use crate::wire::bearer::bearer_token;
use crate::wire::form::Params;
use crate::wire::http::HttpRequest;

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
        Partition::prefix(&key.mac(&[b"edgegrant credential mask\0", secret])).0
    }

    /// The tag over this partition and `secret` in the route of a credential.
    fn tag(self, key: &ServerKey, secret: &[u8; 32]) -> [u8; Partition::BYTES] {
        Partition::prefix(&key.mac(&[b"edgegrant credential tag\0", &self.0, secret])).0
    }

    /// The visible form of a credential of this partition with `secret`: `<route>.<secret>`.
    pub(crate) fn seal(self, key: &ServerKey, secret: &[u8; 32]) -> String {
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
        format!(
            "{}.{}",
            Base64UrlUnpadded::encode_string(&route),
            Base64UrlUnpadded::encode_string(secret)
        )
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

impl std::str::FromStr for Partition {
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

/// The partition a request is routed to: where every record it reads and writes lives, but for
/// the counts of failed attempts (of an [`Input::Attempts`] with one attempter, that count's
/// partition). A pure function of the input, cheap (two HMACs to open a credential's route; no
/// secret digested, no client authenticated): a stateless front routes by it and the
/// partition's owner runs the [`Request`](crate::Request).
///
/// `None`: the request is answered without records of any account (a refusal decided from the
/// request alone, a sign-in page, a preflight), and may run anywhere. A credential whose route
/// is garbled, forged or another key's is `None` too: the core refuses it without reading, so a
/// front that runs `None` requests itself reaches no partition for it.
///
/// It equals [`Request::partition`](crate::Request::partition) of the same input whenever that
/// is `Some`.
///
/// ```
/// # use edgegrant::*;
/// # let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
/// # let config = Config::new(ConfigDocument { server_key: Some(key), ..Default::default() }).unwrap();
/// let unlink = Input::Unlink { app: AppKey::new("demo-app").unwrap(), account_id: AccountId::new("dbid:alice").unwrap(), by: Unlinker::User };
/// let alice = partition_of(&config, &unlink).unwrap();
/// assert_eq!(alice, Partition::of_account(config.server_key(), &AccountId::new("dbid:alice").unwrap()));
///
/// // A token this server never minted reaches no partition (it is refused without a read).
/// let mut call = HttpRequest::new("POST", "/2/users/get_current_account", "");
/// let forged = format!("sl.{}.{}", "A".repeat(32), "s".repeat(43));
/// call.headers.push(("Authorization".into(), format!("Bearer {forged}")));
/// assert_eq!(partition_of(&config, &Input::Http { request: call, user: None }), None);
/// ```
pub fn partition_of(config: &Config, input: &Input) -> Option<Partition> {
    let (request, user) = match input {
        Input::Unlink { account_id, .. } => {
            return Some(Partition::of_account(config.server_key(), account_id))
        }
        Input::Attempts { attempters, .. } => {
            return match attempters.as_slice() {
                [one] => Some(one.partition(config.server_key())),
                _ => None,
            }
        }
        Input::Http { request, user } => (request, user),
    };
    let key = config.server_key();
    match request.path.as_str() {
        "/oauth2/authorize" => user
            .as_ref()
            .map(|u| Partition::of_account(key, &u.account_id)),
        "/oauth2/token" => {
            let params = token_params(config, request);
            let credential = match params.one("grant_type") {
                Ok(Some("authorization_code")) => params.one("code"),
                Ok(Some("refresh_token")) => params.one("refresh_token"),
                _ => return None,
            };
            Partition::of_credential(key, credential.ok()??)
        }
        token_admin::REVOCATION_PATH | token_admin::INTROSPECTION_PATH
            if config.issuer().is_some() =>
        {
            let params = token_params(config, request);
            let token = params.one("token").ok()??;
            Partition::of_credential(
                key,
                token.strip_prefix(AccessToken::PREFIX).unwrap_or(token),
            )
        }
        _ => bearer_token(request)
            .ok()?
            .strip_prefix(AccessToken::PREFIX)
            .and_then(|token| Partition::of_credential(key, token)),
    }
}

/// The parameters of a request to the token endpoint or one sharing its rules (revocation,
/// introspection): the body, or the query when the body is empty and the policy allows it.
/// Only read for routing: the endpoint itself refuses what it must.
fn token_params<'r>(config: &Config, request: &'r HttpRequest) -> Params<'r> {
    if request.body.is_empty() && config.policy().token_parameters_in_query {
        Params::parse(request.query.as_bytes())
    } else {
        Params::parse(&request.body)
    }
}
