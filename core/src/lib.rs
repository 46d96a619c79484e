//! # edgegrant — a sans-IO OAuth 2.0 authorization server core
//!
//! The authorization-code, access-token and refresh-token state machines of an OAuth 2.0
//! provider (RFC 6749, 6750, 7636, 7009-style revocation, the RFC 9700 security BCP) as pure
//! transitions. The core never reads a clock, draws randomness, or touches a socket or a disk:
//! the host passes the time and the entropy in, loads the records the core names, and applies
//! the writes it returns. That keeps it safe on edge runtimes that keep no memory between
//! requests, and makes every behaviour reproducible from its inputs. It is `no_std`: it needs
//! an allocator (`alloc`) and nothing else of the platform, so it embeds where std is missing
//! or unwanted (its own wasm modules are built without std).
//!
//! ## The calling contract
//!
//! One value per request, [`Request`], and one way in: after it starts, the host reports what
//! came of each [`Step`] as one [`Event`], and gets the next step back, owned. For every HTTP
//! request to the core's endpoints, and for every host event ([`Input::Unlink`],
//! [`Input::Attempts`]):
//!
//! 1. Read the clock once (`now`), draw [`ENTROPY_LEN`] random bytes once, and call
//!    [`Request::start`]`(config, input, now, entropy)`. It parses the request, authenticates
//!    the client, hashes the credential once, and gives the first step.
//! 2. Act on the step, report with [`Request::advance`], and go on until it is `Respond` or
//!    `Serve`:
//!    - [`Step::Read`]: load every key named **in one batch** and report them all as
//!      [`Event::Read`] (an absent key as `None`).
//!    - [`Step::Write`]: apply the [`Transaction`] **all-or-nothing**: every [`Put`] only if
//!      its key holds what its [`Expect`] says (absent, or exactly that version), each applied
//!      put storing its bytes at version + 1 with its purge time. If it applied, report
//!      [`Event::Committed`] and emit its audit events; if any condition failed, apply
//!      nothing and report [`Event::Conflicted`]: the request reads again and decides from the
//!      state that won the race (for a code redeemed by a racing host, `invalid_grant`), and
//!      answers `503` once it lost [`Policy::max_attempts`] times.
//!    - [`Step::Respond`]: send [`Reply::response`] as it is — status, headers, body — and
//!      emit [`Reply::audit`]'s events as it is sent (the few answers that wrote nothing to
//!      carry their event: a defect, a rotation's retry answered from a racing retry's write).
//!      The [`Reply::outcome`] says what happened, and why if it was refused ([`Refusal`]).
//!    - [`Step::Serve`]: the API call is authorized; answer it with the endpoint's handler
//!      for the [`Principal`], and set [`Authorized::headers`] on the handler's response.
//!    - [`Step::Verify`] (only for a client registered with keys, `private_key_jwt`): verify
//!      [`Verify::signature`] over [`Verify::message`] with [`Verify::key`] (a JWK) and
//!      [`Verify::alg`] — WebCrypto's `importKey("jwk", …)` and `verify` — and report
//!      [`Event::Verified`]. Everything else about the client assertion is the core's.
//!    - [`Step::Fetch`] (only with [`DocumentPolicy`] on): `GET` the client's metadata document
//!      or the JWK set its `jwks_uri` names at [`Fetch::url`] — https only, never to a private, loopback or link-local address
//!      (check the address connected to), no redirect followed, at most [`Fetch::max_bytes`],
//!      within [`Fetch::timeout_ms`] — and report [`Event::Fetched`] (status, `Cache-Control`,
//!      body) or [`Event::FetchFailed`]. The core checks what came and keeps it in the app's
//!      record (a [`Step::Write`] follows); a returning client within its cache lifetime costs
//!      no fetch.
//!
//!    If the store fails (an exception, a timeout: anything but a failed condition) while a
//!    read or a write is pending, report [`Event::Unavailable`]: the core answers `503` with
//!    `Retry-After`, on the endpoint's channel. A record the store returns that the core cannot
//!    read is a storage fault, answered the same way ([`Refusal::StorageFault`] names its key
//!    for the host's log): found so when it arrives (not a record of its key's type), or when
//!    the request reads the damaged part (the records a bearer check reads are read in place,
//!    each field checked as it is used).
//! 3. A request asks for at most [`Request::max_steps`]`(config)` reads and writes before it
//!    answers, whatever the store holds and however the races go; a host needs no bound of its
//!    own. (An unlink sweeps what it ended a page at a time, at most
//!    [`SWEEP_PAGES_PER_REQUEST`] pages per request; see "Purge times".)
//!
//! `Err(`[`Misuse`]`)` from `advance` means the host broke this contract (an event that does
//! not answer the step, a key it was not asked for, one missing); the request is left as it
//! was. Protocol errors — a bad code, a wrong secret, an expired token — are replies (RFC 6749
//! §5.2 JSON, RFC 6750 challenges, redirects with `error`), never `Err`. No input, however
//! hostile, makes the core panic.
//!
//! Every decision is the core's: routing by path and method, size limits, the consent form's
//! origin check, automatic re-authorization, the answer to storage contention, and every
//! response with its headers, pages included (from the host's templates, [`PageTemplates`]).
//! A host supplies the clock, the entropy, the storage, the signed-in user, the page templates
//! and the API handlers; two hosts on this crate behave alike.
//!
//! A decision may write more than one transaction (a failure counted against several
//! attempters: one per count); the host applies each [`Step::Write`] as it comes, and
//! [`Event::Committed`] moves on to the next.
//!
//! ## Partitions: one store or many
//!
//! Every record lives in a [`Partition`] (its key names it: [`RecordKey::partition`], the text
//! before the key's `/`), and **a transaction never crosses partitions**
//! ([`Transaction::partition`]). An account is a partition — its links, codes, grants and
//! tokens — and so is each attempter's count of failed checks. A host on one store ignores all
//! this. A host on many (one Durable Object per partition, a sharded database with the
//! partition as distribution key) routes each request by [`partition_of`]`(config, input)`, a
//! pure function of the input that reads nothing: every credential carries its partition
//! sealed under the [`ServerKey`] (`sl.<route>.<secret>`), which that function opens. It runs
//! the request where that partition lives; only the failure count of a client authentication
//! that failed lies elsewhere (read and written alone: a correct secret reads no count), and,
//! in the whole build, a stored app's record, a used assertion and an identity provider's key
//! set fetched from its `jwks_uri` (each in a partition of its own, read beside the request's
//! records, written alone).
//! Partitions are derived under the server key, so they tell no one who the user is; a
//! credential whose route is garbled or forged names no partition and is refused without any
//! read, before it reaches any store or object.
//!
//! ## Purge times
//!
//! Every [`Put`] says when its record may be deleted ([`Put::purge_after`]; `None`: keep it).
//! A host deletes records whose purge time has passed, from an index, whenever it likes (a
//! periodic job, an alarm): no answer a client sees depends on whether it did. Codes and
//! access tokens go one lifetime after they expire (so a late client is told "expired"), a
//! redeemed code an access token's lifetime after its expiry (reuse detection), a revoked or
//! unlinked grant with its refresh token and any long-lived token once its last access token
//! has expired, and the unlinked link with them, failure counts when their window ends. Live
//! offline grants, their refresh tokens and the links that hold a consent are kept.
//!
//! No record a request reads grows with the grants its user holds. The grants that never end by
//! themselves (offline, long-lived) are their link's *members*, one [`MemberRecord`] each at
//! consecutive places the link counts ([`RecordKey::Member`]); the link itself holds three
//! numbers, not a list. An unlink ends them all at once (the link's epoch) in its first
//! transaction, then sweeps the members a page at a time, giving each member, its grant and its
//! tokens a purge time — at most [`SWEEP_PAGES_PER_REQUEST`] pages per request; the rest, like
//! that of a host that stops midway, is left for the pair's next unlink.
//!
//! Records cross as opaque bytes: the host stores key → (version, bytes, purge time) and never
//! needs to read one. The store must offer conditional writes across several keys (Durable
//! Objects, SQLite, any SQL database, the in-memory store of the tests). An eventually
//! consistent store such as Workers KV cannot hold codes, grants or links: two edges could both
//! redeem one code.
//!
//! ## Profiles
//!
//! [`Profile::Reference`] (the default) is SPEC.md's service, exactly. [`Profile::Standards`]
//! adds, under a configured [`Issuer`], what standards-based clients expect to find: the
//! authorization server metadata (RFC 8414) at the issuer's well-known path, computed from the
//! configuration and readable from any origin, and `iss` on every authorization response that
//! goes back to the client, success or error, query or fragment (RFC 9207); revocation at
//! `/oauth2/revoke` (RFC 7009) and introspection at `/oauth2/introspect` (RFC 7662), which
//! authenticate the client as the token endpoint does; resource indicators (RFC 8707: codes
//! and grants carry the resources consented to, access tokens their audience, and the bearer
//! check refuses a token for another resource); and the protected-resource metadata of the API
//! served beside it (RFC 9728), named by `resource_metadata` in every bearer challenge; and
//! refresh-token [`Rotation`] (RFC 9700 §4.14.2) for refreshes made without a client secret (or
//! every one): a retry of a rotated refresh inside its window gets the same answer — derived
//! again from a [`RotationSeed`] in the grant, since only digests are stored; the retry writes
//! the grant back unchanged so that its `refresh_token_retried` event is on record, or, when
//! another retry of the same rotation won that write, answers from it with the event on
//! [`Reply::audit`] — and a superseded token at any other time revokes its grant.
//! The metadata reads no record (its partition is `None`); revocation and introspection route
//! to the token's partition.
//!
//! Standard clients get what they ask for there: scope names are any RFC 6749 §3.3 scope
//! token (the reference profile keeps SPEC.md's dotted form), [`OFFLINE_ACCESS`] asks for a
//! refresh token, PKCE takes S256 alone, and `prompt=consent` asks again. With
//! [`Standards::clients`] ([`UnannouncedClients`]), clients nobody configured come in: they
//! register themselves (RFC 7591 at `/oauth2/register`, managed by RFC 7592 at
//! `/oauth2/register/<client_id>`) or are named by a Client ID Metadata Document (a
//! `client_id` that is an https URL, fetched through [`Step::Fetch`] and kept for its cache
//! lifetime), and their apps are [`AppRecord`]s in the store, each in a partition of its own,
//! read in the same batch as a request's first records (a stored app costs no round trip of its
//! own), renewed by use and expiring, with their tokens, when unused.
//!
//! All of that is the crate's `unannounced` feature, on by default. A build without it serves
//! configured apps only: [`Config::new`] refuses a configuration naming `profile.clients`,
//! [`Config::unannounced`] is always `None`, a stored app's record is neither read nor written,
//! and a `Fetched` or `Verified` event is out of turn — so the compiler leaves registration,
//! documents, client assertions and stored apps out (the npm package's `configured-apps`
//! module, 15 KiB smaller gzipped). Everything else behaves as in the whole build without
//! `profile.clients`.
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
//! Revoking ends the grant in one write; unlinking bumps the epoch in one write. Either also
//! moves the account's *ledger* on, a generation every short-lived access token records when
//! minted. A bearer check reads the token with the ledger: while the two match, nothing of the
//! account has ended since, and the token alone decides; otherwise it reads the grant and link
//! as well. A handful of records, however many tokens exist.
//!
//! A grant acts for a [`Subject`]: a person's account (every grant a code or a consent makes),
//! or the client itself. A person's grant stands by its link; a client's own has no link and
//! ends by revocation or with the client. The principal of an API call, introspection's `sub`
//! and the audit events name the subject, so a host can tell a machine from a person.
//!
//! ## Layers
//!
//! The modules stand in layers, and a module imports only from its own layer or those below
//! it, with no two modules importing each other (`tests/tests/layers.rs` checks both, from the
//! `crate::` paths of every file). From the bottom:
//!
//! 1. `prelude`, `time`, `ids`, `scope`, `grant_type`, `wire`, `jose`, `credentials`, `pages` — what std's prelude gave (the crate is `no_std`); values, the grant types, their wire forms, client assertions and keys, secrets and digests, page templates
//! 2. `config`, `partition`, `pkce`, `refusal`, `props` — the configuration, where records live, PKCE, why a request is refused, a grant's props sealed
//! 3. `records` — what is stored, under which keys
//! 4. `machines`, `client_metadata` — the state machines: pure transitions on records and time; client metadata (RFC 7591 §2) read and checked
//! 5. `step` — the calling contract's vocabulary: inputs, steps, transactions, audit events
//! 6. `routes`, `cors`, `dpop`, `endpoints::discovery` — the route table, and what is answered from it alone; DPoP proofs read and checked against their request, and the server's nonces
//! 7. `ending`, `ctx`, `documents` — how a request ends; one request's loaded records and its decisions; client metadata documents and key sets fetched and kept
//! 8. `endpoints`, `render` — parse and decide per endpoint family; the one map of endings to HTTP
//! 9. `request`, `client` — the two ways in: a server request, the PKCE client
//!
//! ## Example: the loop, with a map as the store
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//! use edgegrant::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Arc::new(Config::new(ConfigDocument {
//!     apps: vec![App {
//!         key: AppKey::new("app1")?,
//!         name: "Example".into(),
//!         secret_digest: Some(ClientSecret::presented("secret1").digest()),
//!         redirect_uris: vec![RedirectUri::new("https://app.example/cb")?],
//!         permissions: Permissions::Scoped { scopes: ScopeSet::parse("account_info.read")? },
//!         default_token_type: DefaultTokenType::ShortLived,
//!         implicit_allowed: false,
//!     }],
//!     // 32 random bytes, kept like any secret (here a fixed one, for the example).
//!     server_key: Some(ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")?),
//!     ..ConfigDocument::default()
//! })?);
//! let mut store: BTreeMap<RecordKey, Stored> = BTreeMap::new();
//! let user = User { account_id: AccountId::new("dbid:alice")?, uid: Uid::new("1")?, name: None, props: None };
//! // The consent page's form, posted by the signed-in user.
//! let mut form = HttpRequest::new("POST", "/oauth2/authorize", "");
//! form.headers.push(("Sec-Fetch-Site".into(), "same-origin".into()));
//! form.body = b"decision=allow&query=client_id%3Dapp1%26response_type%3Dcode%26state%3Dxyz".to_vec();
//! let input = Input::Http { request: form, user: Some(user) };
//! let (mut request, mut step) =
//!     Request::start(config, input, UnixTime(1_700_000_000), Entropy::new([7; ENTROPY_LEN]));
//! let reply = loop {
//!     let event = match step {
//!         Step::Read(keys) => Event::Read(
//!             keys.into_iter().map(|key| { let found = store.get(&key).cloned(); (key, found) }).collect(),
//!         ),
//!         Step::Write(transaction) => {
//!             // A real store checks every `expect` first, atomically.
//!             for put in transaction.puts {
//!                 let version = store.get(&put.key).map_or(1, |s| s.version + 1);
//!                 store.insert(put.key, Stored { version, bytes: put.bytes });
//!             }
//!             Event::Committed
//!         }
//!         Step::Respond(reply) => break reply,
//!         Step::Serve(_) => unreachable!("not an API call"),
//!         Step::Fetch(_) => unreachable!("no client metadata documents configured"),
//!         Step::Verify(_) => unreachable!("no client registered with keys"),
//!     };
//!     step = request.advance(event)?;
//! };
//! // No redirect_uri was registered in the request: the page shows the code.
//! assert!(matches!(reply.outcome, Outcome::DisplayCode { .. }));
//! assert_eq!(reply.response.status, 200);
//! assert_eq!(reply.response.header("X-Frame-Options"), Some("DENY"));
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
// No input may panic the core: no unwrap, expect, panic or unchecked indexing anywhere in it —
// strings included (`get`, `strip_prefix`, `split_at_checked`): a string slice's panic message
// writes the string with `Debug`, which alone linked 3.6 KiB gzipped of escaping and Unicode
// tables into the wasm module. (`str::split_at` has no lint; the module's size budget catches it.)
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::string_slice
)]
// The core needs memory and nothing else of the platform: it is `no_std` with `alloc`, so that
// the wasm modules, built without std, carry none of std's panic machinery (its hook and
// payloads: 1.55 KiB of the server's, gzipped). Its own unit tests have std.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

/// Gives an enum `NAMES` (every variant's name, in order) and `named(&self)`, from one table of
/// every variant: its match has no wildcard, so a new variant does not compile until it is
/// named, and the names hosts in other languages see (the package's generated TypeScript
/// types) cannot fall behind the type.
macro_rules! names {
    ($(#[$doc:meta])* $ty:ident: $($variant:ident => $name:literal,)*) => {
        impl $ty {
            $(#[$doc])*
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            fn named(&self) -> &'static str {
                match self {
                    $($ty::$variant { .. } => $name,)*
                }
            }
        }
    };
}

pub mod client;
mod client_metadata;
mod config;
mod cors;
mod credentials;
mod ctx;
mod documents;
mod dpop;
mod ending;
mod endpoints;
mod grant_type;
mod ids;
mod jose;
mod machines;
mod pages;
mod partition;
mod pkce;
mod prelude;
mod props;
mod records;
mod refusal;
mod render;
mod request;
mod routes;
mod scope;
mod step;
mod time;
mod wire;

pub use config::{
    ApiEndpoint, App, AttemptLimits, ClientCredentials, Config, ConfigDocument, ConfigError,
    DefaultTokenType, DocumentPolicy, Dpop, DpopNonces, DpopRequired, IdentityAssertions,
    IdentityProvider, Issuer, Permissions, Policy, Profile, ProviderAccount, ProviderKeys,
    RegistrationPolicy, Resource, ResourceServer, RotatedClients, Rotation, Standards,
    TokenExchange, UnannouncedClients, UnannouncedRefresh, CONFIG_TYPESCRIPT,
    DEFAULT_SCOPE_DESCRIPTIONS,
};
pub use credentials::{
    AccessToken, AccessTokenDigest, AssertionDigest, AttempterDigest, AuthorizationCode,
    ClientSecret, CodeDigest, Entropy, RefreshToken, RefreshTokenDigest, RegistrationToken,
    RegistrationTokenDigest, RotationSeed, SecretDigest, ServerKey, ENTROPY_LEN,
};
pub use documents::{KEYS_REFETCH_AFTER, KEY_SET_MAX_BYTES};
pub use dpop::{resource_server_proof, ResourceProof};
pub use endpoints::api::{bearer_token_of, presented_token_of};
pub use endpoints::discovery::{protected_resource_metadata, protected_resource_metadata_url};
pub use grant_type::{GrantType, GrantTypes};
pub use ids::{
    AccountId, AppKey, GrantId, InvalidId, KeyThumbprint, RedirectUri, Subject, Uid, User,
};
pub use jose::{ClientKey, SigningAlg};
pub use machines::attempts::{Attempter, MAX_ATTEMPTERS};
pub use pages::{PageTemplates, DEFAULT_CODE, DEFAULT_CONSENT, DEFAULT_ERROR, DEFAULT_SIGN_IN};
pub use partition::{BadPartition, Partition};
pub use pkce::{ChallengeMethod, CodeChallenge, CodeVerifier};
pub use props::SealedProps;
pub use records::{
    AboutClient, AccessTokenRecord, AppRecord, AttemptsRecord, AuthMethod, BadRecord, BadRecordKey,
    ClientKeys, CodeRecord, CodeState, DocumentClient, GrantRecord, LastRotation, LedgerRecord,
    LinkRecord, MemberRecord, Provenance, Record, RecordKey, RefreshTokenRecord, Registration,
    RemoteKeys, Resources, Stored, TokenAccessType, FORMAT as RECORD_FORMAT,
};
pub use refusal::{Defect, DocumentFault, DpopFault, Refusal, UnusableDocument};
pub use render::PAGE_HEADERS;
pub use render::{resource_server_challenge, Challenges};
pub use request::{Request, SWEEP_PAGES_PER_REQUEST};
pub use routes::{named_client, partition_of};
pub use scope::{LegacyAccess, Scope, ScopeSet, OFFLINE_ACCESS, TEAM_AUDITING_SCOPES, USER_SCOPES};
pub use step::{
    AttemptStep, AttemptVerdict, AuditEvent, Authorized, ConsentPrompt, Event, Expect, Fetch,
    FetchFailure, Fetched, Input, Misuse, Outcome, Principal, Put, Reply, Step, Transaction,
    Unlinker, Verify,
};
pub use time::{Seconds, UnixTime};
pub use wire::http::{HttpRequest, HttpResponse};
