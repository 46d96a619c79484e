//! # edgegrant — a sans-IO OAuth 2.0 authorization server core
//!
//! The authorization-code, access-token and refresh-token state machines of an OAuth 2.0
//! provider (RFC 6749, 6750, 7636, 7009-style revocation, the RFC 9700 security BCP) as pure
//! transitions. The core never reads a clock, draws randomness, or touches a socket or a disk:
//! the host passes the time and the entropy in, loads the records the core names, and applies
//! the writes it returns. That keeps it safe on edge runtimes that keep no memory between
//! requests, and makes every behaviour reproducible from its inputs.
//!
//! ## The calling contract
//!
//! One function, [`handle`]. For every request or host event the host runs this loop:
//!
//! 1. Read the clock once (`now`), draw [`ENTROPY_LEN`] random bytes once, start with empty
//!    [`Records`].
//! 2. Call [`handle`]`(config, input, now, entropy, records)` and act on the [`Step`]:
//!    - [`Step::NeedRecords`]: load every key named, **in one batch**, insert each (absent keys as
//!      `None`) into the records, and call [`handle`] again with the *same* input, `now` and
//!      entropy. A request needs at most three such rounds.
//!    - [`Step::Commit`]: apply the [`Transaction`] **all-or-nothing**: every [`Put`] only if its
//!      key holds what its [`Expect`] says (absent, or exactly that version), each applied put
//!      storing the record at version + 1. If it applied, emit its audit events and carry out the
//!      [`Outcome`]. If any condition failed, apply nothing and start over at 1 with fresh
//!      records: the core then decides from the state that won the race (for a code redeemed by
//!      a racing host, that is `invalid_grant`). Retry a bounded number of times.
//!    - [`Step::Respond`]: nothing to store; carry out the [`Outcome`].
//! 3. Carry out the outcome: send [`Outcome::Http`] as is; send [`Outcome::Redirect`] as `302`
//!    with `Cache-Control: no-store`; render [`Outcome::Consent`], [`Outcome::DisplayCode`] and
//!    [`Outcome::ErrorPage`] as pages; serve the API call for [`Outcome::Authorized`].
//!
//! Protocol errors — a bad code, a wrong secret, an expired token — are never `Err`: they are
//! responses (RFC 6749 §5.2 JSON, RFC 6750 challenges, redirects with `error`). `Err(`[`Misuse`]`)`
//! means the host broke this contract (records it was not asked for, a record of the wrong type,
//! an undeclared API endpoint). No input, however hostile, makes the core panic.
//!
//! The store must offer conditional writes across several keys (Durable Objects, SQLite, any
//! SQL database, the in-memory store of the tests). An eventually consistent store such as
//! Workers KV cannot hold codes, grants or links: two edges could both redeem one code.
//!
//! ## The client side
//!
//! [`client`] holds the other half of the flow: a PKCE client machine for public clients, in the
//! same style (the host passes state, input, time and entropy; the machine answers with the
//! next state and one step: navigate, send this request, attach this header, authorize again).
//!
//! ## Records and why revocation is cheap
//!
//! Every secret is stored only as its SHA-256 digest, under a key derived from it. Tokens point at
//! their *grant* (what one consent produced); grants record the *link epoch* of their user and app.
//! Revoking ends the grant in one write; unlinking bumps the epoch in one write. A bearer check
//! reads the token, then its grant and link: three records however many tokens exist.
//!
//! ## Example: the loop, with a map as the store
//!
//! ```
//! use std::collections::BTreeMap;
//! use edgegrant::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::new(ConfigDocument {
//!     apps: vec![App {
//!         key: AppKey::new("app1")?,
//!         name: "Example".into(),
//!         secret_digest: Some(ClientSecret::presented("secret1").digest()),
//!         redirect_uris: vec![RedirectUri::new("https://app.example/cb")?],
//!         permissions: Permissions::Scoped { scopes: ScopeSet::parse("account_info.read")? },
//!         default_token_type: DefaultTokenType::ShortLived,
//!         implicit_allowed: false,
//!     }],
//!     ..ConfigDocument::default()
//! })?;
//! let mut store: BTreeMap<RecordKey, Versioned> = BTreeMap::new();
//! let user = User { account_id: AccountId::new("dbid:alice")?, uid: Uid::new("1")? };
//! let input = Input::Consent {
//!     query: "client_id=app1&response_type=code&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&state=xyz".into(),
//!     user,
//!     decision: Decision::Allow,
//! };
//! let (now, entropy) = (UnixTime(1_700_000_000), Entropy::new([7; ENTROPY_LEN]));
//! let mut records = Records::new();
//! let outcome = loop {
//!     match handle(&config, &input, now, &entropy, &records)? {
//!         Step::NeedRecords { keys } => {
//!             for key in keys {
//!                 let value = store.get(&key).cloned();
//!                 records.insert(key, value);
//!             }
//!         }
//!         Step::Commit { transaction, outcome } => {
//!             // A real store checks every `expect` first, atomically.
//!             for put in transaction.puts {
//!                 let version = store.get(&put.key).map_or(1, |v| v.version + 1);
//!                 store.insert(put.key, Versioned { version, record: put.record });
//!             }
//!             break outcome;
//!         }
//!         Step::Respond { outcome } => break outcome,
//!     }
//! };
//! let Outcome::Redirect(location) = outcome else { panic!("expected a redirect") };
//! assert!(location.starts_with("https://app.example/cb?code="));
//! assert!(location.ends_with("&state=xyz"));
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
// No input may panic the core: no unwrap, expect, panic or unchecked indexing anywhere in it.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod client;
mod config;
mod credentials;
mod ctx;
mod endpoints;
mod ids;
mod machines;
mod pkce;
mod records;
mod scope;
mod step;
mod time;
mod wire;

pub use config::{App, Config, ConfigDocument, ConfigError, DefaultTokenType, Permissions, Policy};
pub use credentials::{
    AccessToken, AccessTokenDigest, AuthorizationCode, ClientSecret, CodeDigest, Entropy,
    RefreshToken, RefreshTokenDigest, SecretDigest, ENTROPY_LEN,
};
pub use ids::{AccountId, AppKey, GrantId, InvalidId, RedirectUri, Uid, User};
pub use pkce::{ChallengeMethod, CodeChallenge, CodeVerifier};
pub use records::{
    AccessTokenRecord, BadRecordKey, CodeRecord, CodeState, GrantRecord, LinkRecord, Record,
    RecordKey, RefreshTokenRecord, TokenAccessType, Versioned,
};
pub use scope::{LegacyAccess, Scope, ScopeSet, TEAM_AUDITING_SCOPES, USER_SCOPES};
pub use step::{
    AuditEvent, ConsentPrompt, Decision, ErrorPage, Expect, HttpRequest, HttpResponse, Input,
    Misuse, Outcome, Principal, Put, Records, Step, Transaction, Unlinker,
};
pub use time::{Seconds, UnixTime};

/// Decides what the host does next for `input`, given the time, fresh entropy and the records
/// loaded so far. See the [crate documentation](crate) for the calling contract.
///
/// Pure: the same arguments always give the same step.
pub fn handle(
    config: &Config,
    input: &Input,
    now: UnixTime,
    entropy: &Entropy,
    records: &Records,
) -> Result<Step, Misuse> {
    let mut ctx = ctx::Ctx::new(config, now, entropy, records);
    let flow = match input {
        Input::Authorize { query, user } => {
            endpoints::authorize::authorize(&mut ctx, query, user.as_ref())
        }
        Input::Consent {
            query,
            user,
            decision,
        } => endpoints::authorize::consent(&mut ctx, query, user, *decision),
        Input::Token { request } => endpoints::token::token(&mut ctx, request),
        Input::Revoke { request } => endpoints::api::revoke(&mut ctx, request),
        Input::ApiCall { endpoint, request } => {
            endpoints::api::api_call(&mut ctx, endpoint, request)
        }
        Input::Unlink {
            app,
            account_id,
            by,
        } => endpoints::unlink::unlink(&mut ctx, app, account_id, *by),
    };
    ctx.finish(flow)
}
