//! Partitions: how the records divide so that a store can spread over many machines.
//!
//! Every record lives in one partition, and every transaction the core asks for stays within
//! one. A user's account is a partition: its links, codes, grants and tokens, everything one
//! consent, exchange, refresh, bearer check, revocation or unlink touches. The count of failed
//! attempts of one attempter is a partition of its own, since it is shared by every account an
//! attacker tries; the token endpoint reads such a count beside the code it exchanges (reads may
//! cross partitions), but writes it alone.
//!
//! A credential carries its partition in its visible form, so a host can route a request from
//! the request alone ([`partition_of`]): a code or refresh token is `<partition>.<secret>`, an
//! access token `sl.<partition>.<secret>`, the partition 16 URL-safe characters and the secret
//! 43 (256 bits). The digest under which the credential is stored covers the whole of it, so a
//! forged partition part names a key that does not exist.

use base64ct::{Base64UrlUnpadded, Encoding as _};
use std::fmt;

use crate::config::Config;
use crate::credentials::{sha256, AccessToken, AttempterDigest};
use crate::endpoints::token_admin;
use crate::ids::AccountId;
use crate::step::Input;
use crate::wire::bearer::bearer_token;
use crate::wire::form::Params;
use crate::wire::http::HttpRequest;

/// Which partition a record lives in: 96 bits, shown as 16 URL-safe base64 characters.
///
/// ```
/// # use edgegrant::{AccountId, Partition};
/// let alice = Partition::of_account(&AccountId::new("dbid:alice").unwrap());
/// assert_eq!(alice.to_string().len(), 16);
/// assert_eq!(alice.to_string().parse::<Partition>(), Ok(alice));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition([u8; Partition::BYTES]);

impl Partition {
    const BYTES: usize = 12;
    /// The length of its text form.
    pub const TEXT_LEN: usize = 16;

    /// The partition of an account's records. Derived from the account id alone (no key: the
    /// account id is no secret, the client is told it), with a label no other derivation shares.
    pub fn of_account(account: &AccountId) -> Partition {
        const LABEL: &[u8] = b"edgegrant partition of account\0";
        let mut joined = Vec::with_capacity(LABEL.len() + account.as_str().len());
        joined.extend_from_slice(LABEL);
        joined.extend_from_slice(account.as_str().as_bytes());
        Partition::prefix(&sha256(&joined))
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

    /// Reads the partition part of a presented credential (`<partition>.<secret>`, after any
    /// prefix, the secret 43 URL-safe characters): `None` for anything not of the shape this
    /// core mints, which is refused without a read.
    pub(crate) fn of_credential(text: &str) -> Option<Partition> {
        let (partition, secret) = text.split_once('.')?;
        let minted = secret.len() == 43
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !minted {
            return None;
        }
        partition.parse().ok()
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
/// partition). A pure
/// function of the input, cheap (no secret is hashed, no client authenticated): a stateless
/// front routes by it and the partition's owner runs the [`Request`](crate::Request).
///
/// `None`: the request is answered without records of any account (a refusal decided from the
/// request alone, a sign-in page, a preflight), and may run anywhere. A credential whose
/// partition part is garbled is `None` too: the core refuses it without reading.
///
/// It equals [`Request::partition`](crate::Request::partition) of the same input whenever that
/// is `Some`.
///
/// ```
/// # use edgegrant::*;
/// # let config = Config::new(ConfigDocument::default()).unwrap();
/// let mut call = HttpRequest::new("POST", "/2/users/get_current_account", "");
/// let token = format!("sl.AAAAAAAAAAAAAAAA.{}", "s".repeat(43));
/// call.headers.push(("Authorization".into(), format!("Bearer {token}")));
/// let input = Input::Http { request: call, user: None };
/// assert_eq!(partition_of(&config, &input).map(|p| p.to_string()).as_deref(), Some("AAAAAAAAAAAAAAAA"));
/// ```
pub fn partition_of(config: &Config, input: &Input) -> Option<Partition> {
    let (request, user) = match input {
        Input::Unlink { account_id, .. } => return Some(Partition::of_account(account_id)),
        Input::Attempts { attempters, .. } => {
            return match attempters.as_slice() {
                [one] => Some(one.partition()),
                _ => None,
            }
        }
        Input::Http { request, user } => (request, user),
    };
    match request.path.as_str() {
        "/oauth2/authorize" => user.as_ref().map(|u| Partition::of_account(&u.account_id)),
        "/oauth2/token" => {
            let params = token_params(config, request);
            let credential = match params.one("grant_type") {
                Ok(Some("authorization_code")) => params.one("code"),
                Ok(Some("refresh_token")) => params.one("refresh_token"),
                _ => return None,
            };
            Partition::of_credential(credential.ok()??)
        }
        token_admin::REVOCATION_PATH | token_admin::INTROSPECTION_PATH
            if config.issuer().is_some() =>
        {
            let params = token_params(config, request);
            let token = params.one("token").ok()??;
            Partition::of_credential(token.strip_prefix(AccessToken::PREFIX).unwrap_or(token))
        }
        _ => bearer_token(request)
            .ok()?
            .strip_prefix(AccessToken::PREFIX)
            .and_then(Partition::of_credential),
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
