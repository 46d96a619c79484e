//! What the core asks the host to store: one record type per stored object, and the keys
//! they live under. Records hold digests and facts, never a secret in plain text.

use crate::prelude::*;
use alloc::borrow::Cow;
use core::fmt;
use core::str::FromStr;
use serde::{Deserialize, Serialize};

use crate::config::App;
use crate::credentials::{
    AccessToken, AccessTokenDigest, AssertionDigest, AttempterDigest, AuthorizationCode,
    CodeDigest, RefreshToken, RefreshTokenDigest, RegistrationTokenDigest, RotationSeed, ServerKey,
};
use crate::grant_type::GrantTypes;
use crate::ids::{AccountId, AppKey, GrantId, KeyThumbprint, RedirectUri, Subject, Uid};
use crate::jose::ClientKey;
use crate::partition::Partition;
use crate::pkce::CodeChallenge;
use crate::props::SealedProps;
use crate::scope::ScopeSet;
use crate::time::UnixTime;

pub(crate) mod view;

/// The access the authorization request asked for, fixed in the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenAccessType {
    /// A short-lived access token only.
    Online,
    /// A short-lived access token and a refresh token.
    Offline,
    /// The app's long-lived default: a non-expiring access token if minted before the
    /// long-lived cutoff, a short-lived one from then on.
    Legacy,
}

/// Where an authorization code stands. Expiry is not a state: it follows from `expires_at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CodeState {
    /// Issued after consent, not yet exchanged.
    Issued,
    /// Exchanged once; the grant it produced is revoked if anyone tries again.
    Redeemed {
        /// The grant the exchange created.
        grant: GrantId,
    },
}

/// An authorization code, stored under the digest of the code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeRecord {
    /// The app the code was issued to.
    pub app: AppKey,
    /// The consenting user's account.
    pub account_id: AccountId,
    /// The consenting user's uid.
    pub uid: Uid,
    /// The `redirect_uri` of the authorization request, which the exchange must repeat exactly.
    pub redirect_uri: Option<RedirectUri>,
    /// The PKCE challenge, if the request carried one.
    pub challenge: Option<CodeChallenge>,
    /// The granted scopes.
    pub scopes: ScopeSet,
    /// What the exchange yields.
    pub access_type: TokenAccessType,
    /// The user's link epoch at consent; an unlink since then voids the code.
    pub link_epoch: u64,
    /// The code is refused from this instant on.
    pub expires_at: UnixTime,
    /// Issued or redeemed.
    pub state: CodeState,
    /// The resources the tokens may be for (RFC 8707); empty when none was named.
    pub resources: Resources,
    /// The key the authorization request bound the code to (`dpop_jkt`, RFC 9449 §10): its
    /// exchange must come with a proof of that key. `None` before format 13.
    pub bound_to: Option<KeyThumbprint>,
    /// The props the host gave with the user at consent, sealed (see [`SealedProps`]), for the
    /// grant the code is exchanged for. `None`: none (and every code stored before format 14).
    pub props: Option<SealedProps>,
}

/// Resource identifiers (RFC 8707), sorted, each once; stored as one space-separated string
/// (identifiers hold no space: they are checked as visible ASCII), so a record carries them at
/// the cost of a string. Empty: none named.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Resources(String);

impl Resources {
    /// The set of `names` (any order, repeats allowed).
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Resources {
        let mut sorted: Vec<&str> = Vec::new();
        for name in names {
            if let Err(at) = sorted.binary_search(&name) {
                sorted.insert(at, name);
            }
        }
        Resources(sorted.join(" "))
    }

    /// Whether none is named.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each identifier, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.split(' ').filter(|name| !name.is_empty())
    }

    /// Whether `name` is one of them.
    pub fn contains(&self, name: &str) -> bool {
        self.iter().any(|r| r == name)
    }

    /// What these name, a token or a consent naming none being for the API served here
    /// (`here`, the issuer's origin; none in the reference profile).
    pub(crate) fn or_here(&self, here: Option<&str>) -> Resources {
        match (self.is_empty(), here) {
            (true, Some(here)) => Resources::from_names([here]),
            _ => self.clone(),
        }
    }

    /// Whether every one of `other` is one of these.
    pub fn covers(&self, other: &Resources) -> bool {
        other.iter().all(|r| self.contains(r))
    }
}

/// One grant: the tokens that one consent produced, ended together by one revocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRecord {
    /// The app the tokens belong to.
    pub app: AppKey,
    /// Whom the tokens act for: a person's account, or the app itself.
    pub subject: Subject,
    /// The person's uid; `None` for a grant to the app itself.
    pub uid: Option<Uid>,
    /// The scopes granted.
    pub scopes: ScopeSet,
    /// The user's link epoch when the grant was made; an unlink bumps the epoch and ends it.
    pub link_epoch: u64,
    /// Whether the code carried a PKCE challenge: then its refresh token may be used with
    /// `client_id` alone.
    pub pkce: bool,
    /// Set when the grant was revoked (revoke endpoint or code reuse).
    pub revoked_at: Option<UnixTime>,
    /// The digest of its current refresh token, if it has one: a revocation purges it with the
    /// grant, and a token of the grant that is not this one was superseded by a rotation.
    pub refresh_token: Option<RefreshTokenDigest>,
    /// The digest of its access token if that one never expires (a legacy long-lived token):
    /// a revocation purges it with the grant. Short-lived ones purge themselves on expiry.
    pub long_lived_token: Option<AccessTokenDigest>,
    /// The resources consented to (RFC 8707): a refresh may narrow to some of them.
    pub resources: Resources,
    /// Its last refresh-token rotation, if its refresh token ever rotated: what a retry of
    /// that refresh needs. Boxed: most grants never rotate, and every record moves through
    /// the host's loads at the size of the largest.
    pub rotation: Option<Box<LastRotation>>,
    /// For a grant that never ends by itself (offline, long-lived), its place among its link's
    /// members ([`MemberRecord`]): a revocation purges that record with the grant.
    pub member: Option<u64>,
    /// Under an idle lifetime ([`Policy::refresh_idle_lifetime`](crate::Policy)), when the
    /// grant ends unless its refresh token is used before: each use moves it on.
    pub idle_until: Option<UnixTime>,
    /// The key its refresh token is bound to (DPoP, RFC 9449 §5: a public client's that
    /// presented a proof when the grant was made): every refresh must come with a proof of it.
    /// `None` before format 13.
    pub refresh_bound_to: Option<KeyThumbprint>,
    /// The props the host gave with the user when the grant was made, sealed (see
    /// [`SealedProps`]); every access token minted under the grant carries them. `None`: none
    /// (and every grant stored before format 14).
    pub props: Option<SealedProps>,
}

/// A grant's last refresh-token rotation (standards profile).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRotation {
    /// The token it superseded: presented again within the retry window (and before its
    /// successor is used) it gets the same answer; at any other time it revokes the grant.
    pub superseded: RefreshTokenDigest,
    /// When it happened.
    pub at: UnixTime,
    /// What its tokens were derived from, with the superseded token.
    pub seed: RotationSeed,
}

/// An access token, stored under its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenRecord {
    /// The grant it belongs to.
    pub grant: GrantId,
    /// The app (copied from the grant so the second read can be batched).
    pub app: AppKey,
    /// Whom it acts for (copied from the grant likewise).
    pub subject: Subject,
    /// The scopes it carries (the grant's, or fewer after a narrowing refresh).
    pub scopes: ScopeSet,
    /// `None` for a legacy long-lived token.
    pub expires_at: Option<UnixTime>,
    /// The resources it is for (RFC 8707 audience); empty: any this server protects.
    pub audience: Resources,
    /// The generation of its account's [`LedgerRecord`] it was minted at: while the ledger
    /// stands there, nothing of the account has ended since, and a bearer check needs no other
    /// record. `None` for a long-lived token and for one stored before format 8.
    pub generation: Option<u64>,
    /// The user's uid (copied from the grant, for a check decided on the token alone); `None`
    /// for a token stored before format 8.
    pub uid: Option<Uid>,
    /// The client that exchanged another token of the grant for this one (RFC 8693), to whom it
    /// was issued; `None`: issued to the app (and for every token stored before format 12).
    pub exchanged_by: Option<AppKey>,
    /// Whether that client named itself the actor (its own token as `actor_token`):
    /// introspection's `act`.
    pub acting: bool,
    /// The key it is bound to (DPoP, RFC 9449 §6: `cnf.jkt`): good only with a proof of that
    /// key. `None`: a bearer token (and every token stored before format 13).
    pub bound_to: Option<KeyThumbprint>,
    /// The grant's props, sealed (see [`SealedProps`]): handed to the API handler with the
    /// principal. `None`: none (and every token stored before format 14).
    pub props: Option<SealedProps>,
}

/// An account's ledger: a generation that moves on with everything that ends access in the
/// account's partition (a grant revoked, an unlink, a new link), in the same transaction.
///
/// An access token records the generation it was minted at; while the ledger is still there,
/// nothing of its account has ended since, so its grant and link stand as they stood when it
/// was minted, and a bearer check decides on the token alone. Any other generation (or no
/// ledger) sends the check to the grant and the link, as before. A mint reads the ledger
/// before the grant and link it mints under, so that an end committing between the two reads
/// is seen by one of them (see `machines::ledger`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRecord {
    /// Moved on by every end; a new ledger starts at a random one, so that a ledger made again
    /// after a purge never vouches for the tokens of an earlier one.
    pub generation: u64,
    /// Until when it is kept: past the expiry of the last token minted at its generation (its
    /// purge time).
    pub kept_until: UnixTime,
}

/// A refresh token, stored under its digest. It never expires by time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshTokenRecord {
    /// The grant it belongs to.
    pub grant: GrantId,
    /// The app it was issued to.
    pub app: AppKey,
    /// Whom it acts for (copied from the grant).
    pub subject: Subject,
}

/// The standing link between one user and one app.
///
/// Its epoch is what keeps an unlinked user's old tokens dead: an unlink moves it on, and the
/// unlinked link is purged with the grants it ended. Without a link nothing issued stands, and
/// a new link starts at a random epoch, so a link made again cannot revive an earlier one's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// Bumped by every unlink; codes and grants of an older epoch are void.
    pub epoch: u64,
    /// The scopes the user has consented to since the last unlink (for re-authorization).
    pub granted: ScopeSet,
    /// Whether the user has consented to offline access (refresh tokens) since the last unlink:
    /// an offline request after online consent asks again, since it lets the app act while the
    /// user is away.
    pub offline: bool,
    /// Links written before format 7 listed here the live grants that never end by
    /// themselves; an unlink still purges those. Newer grants are [`MemberRecord`]s: the
    /// link stays the same size however many grants its user holds.
    pub grants: Vec<GrantId>,
    /// The resources (RFC 8707) the user has consented to since the last unlink, a consent
    /// naming none counted as one for the API served here (the issuer's origin): automatic
    /// re-authorization covers only these.
    pub resources: Resources,
    /// The place of the next grant that never ends by itself among the link's members
    /// ([`RecordKey::Member`]). A new link starts where its epoch does (random), so its members
    /// never meet a purged earlier link's.
    pub members: u64,
    /// Members below this place are swept: an unlink's bounded steps gave them, their grants
    /// and their tokens a purge time.
    pub swept: u64,
    /// Members below this place belong to an epoch an unlink ended: they are to be swept.
    pub sweep_to: u64,
    /// The redirect URI the user last consented to send the answer to (none when the code was
    /// shown): a client nobody verified is re-authorized without asking only to this one.
    pub redirect_uri: Option<RedirectUri>,
}

/// One grant that never ends by itself (offline, long-lived), at its place among its link's
/// members: what an unlink walks, a page at a time, instead of a list in the link that every
/// bearer check would read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    /// The grant.
    pub grant: GrantId,
}

/// Failed credential checks counted against one attempter in the current window: the window
/// opened with the first failure, and the count resets once it has passed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptsRecord {
    /// When the window opened.
    pub window_start: UnixTime,
    /// Failures since then.
    pub failures: u32,
}

/// A client that registered itself (RFC 7591): its app, as every endpoint uses it, and what
/// its registration recorded. Stored under [`RecordKey::App`], in the app's own partition, and
/// purged once unused for the configured lifetime
/// ([`UnannouncedClients::unused_lifetime`](crate::UnannouncedClients)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppRecord {
    /// When it was last used as written (an authorization, an exchange or a refresh; written
    /// when half the unused lifetime has passed): it expires a lifetime after. First since
    /// format 9, so that a bearer check reads it without the registration behind it.
    pub used_at: UnixTime,
    /// The app: its key, the name it gave (asserted, not verified), its secret's digest (none
    /// for a public client), redirect URIs, scopes and token type.
    pub app: App,
    /// How it came to be known, and what it registered.
    pub provenance: Provenance,
}

/// A stored app's record as formats before 9 laid it out: its last use after the rest.
#[derive(Deserialize)]
struct AppRecordBefore9 {
    app: App,
    provenance: Provenance,
    used_at: UnixTime,
}

impl AppRecord {
    /// The keys its client assertions must be signed with, when it authenticates by them
    /// (`private_key_jwt`); `None` for a client with a secret or none.
    pub fn assertion_keys(&self) -> Option<&ClientKeys> {
        let (method, keys) = match &self.provenance {
            Provenance::Registered(r) => (r.auth_method, &r.keys),
            Provenance::Document(d) => (d.auth_method, &d.keys),
        };
        (method == AuthMethod::PrivateKeyJwt).then_some(keys)
    }

    /// The grant types it registered or its document lists, as kept.
    pub fn grant_types(&self) -> GrantTypes {
        match &self.provenance {
            Provenance::Registered(r) => r.grant_types,
            Provenance::Document(d) => d.grant_types,
        }
    }

    /// The same app with its key set replaced (a fetched `jwks_uri`'s).
    pub fn with_keys(&self, keys: ClientKeys) -> AppRecord {
        let mut record = self.clone();
        match &mut record.provenance {
            Provenance::Registered(r) => r.keys = keys,
            Provenance::Document(d) => d.keys = keys,
        }
        record
    }
}

/// The public keys of a client that authenticates by `private_key_jwt`: given by value (its
/// `jwks`) or by reference (its `jwks_uri`, fetched through [`Step::Fetch`](crate::Step) when
/// first needed, kept for its `Cache-Control` lifetime within
/// [`DocumentPolicy`](crate::DocumentPolicy)'s bounds, and fetched again early — at most once
/// in [`KEYS_REFETCH_AFTER`](crate::KEYS_REFETCH_AFTER) — when an assertion names a key it lacks,
/// as a client that rotated its keys does). Empty by value for a client without keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientKeys {
    /// Its `jwks`, as registered.
    Inline(Vec<ClientKey>),
    /// Its `jwks_uri`, and what was fetched from it.
    Remote(RemoteKeys),
}

impl ClientKeys {
    /// No keys (a client with a secret, or public).
    pub fn none() -> ClientKeys {
        ClientKeys::Inline(Vec::new())
    }

    /// The keys at hand: registered, or fetched last (none before the first fetch).
    pub fn keys(&self) -> &[ClientKey] {
        match self {
            ClientKeys::Inline(keys) => keys,
            ClientKeys::Remote(remote) => &remote.keys,
        }
    }

    /// These keys, but for a `jwks_uri` that `earlier` named too: what was fetched from it
    /// then (a document fetched again, a registration updated, keep a key set still fresh).
    pub fn carried_from(self, earlier: Option<&ClientKeys>) -> ClientKeys {
        match (self, earlier) {
            (ClientKeys::Remote(now), Some(ClientKeys::Remote(then))) if now.url == then.url => {
                ClientKeys::Remote(then.clone())
            }
            (keys, _) => keys,
        }
    }
}

/// A client's `jwks_uri` and the key set last fetched from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteKeys {
    /// The https URL of its JWK set.
    pub url: String,
    /// Its usable keys, as last fetched.
    pub keys: Vec<ClientKey>,
    /// When they were fetched; `None`: never yet.
    pub fetched_at: Option<UnixTime>,
    /// Until when they may be used without fetching again.
    pub fresh_until: UnixTime,
}

/// How a stored app came to be known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Provenance {
    /// By dynamic client registration (RFC 7591).
    Registered(Registration),
    /// By the metadata document its key names (a Client ID Metadata Document), fetched and
    /// kept here as a cache.
    Document(DocumentClient),
}

/// What a client's metadata document said beside what its [`App`] holds, and how long it is
/// kept before it is fetched again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentClient {
    /// When it was fetched.
    pub fetched_at: UnixTime,
    /// Until when it may be used as fetched: its `Cache-Control` lifetime within
    /// [`DocumentPolicy`](crate::DocumentPolicy)'s bounds. An authorization or a token request
    /// after it fetches the document again; a bearer check, a revocation or an introspection
    /// goes on with the copy.
    pub fresh_until: UnixTime,
    /// The grant types it lists that this server has for it: with `refresh_token`, it gets a
    /// refresh token on every code flow. (A `bool`, whether it listed `refresh_token`, up to
    /// format 11: the same byte.)
    pub grant_types: GrantTypes,
    /// `native` or `web`.
    pub native: bool,
    /// The informational URLs and texts it gave: shown as asserted, never followed by the core.
    pub about: AboutClient,
    /// How it authenticates: `none`, or `private_key_jwt` with [`keys`](Self::keys).
    pub auth_method: AuthMethod,
    /// Its public keys (its `jwks` or `jwks_uri`), for `private_key_jwt`.
    pub keys: ClientKeys,
}

/// What a client registered (RFC 7591 §2), as the registration answered it, beside what its
/// [`App`] holds (name, redirect URIs, scopes, secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// When it registered (`client_id_issued_at`).
    pub issued_at: UnixTime,
    /// The digest of its registration access token (RFC 7592).
    pub token: RegistrationTokenDigest,
    /// How it authenticates at the token endpoint.
    pub auth_method: AuthMethod,
    /// The grant types it registered that this server has for it: with `refresh_token`, it
    /// gets a refresh token on every code flow; with `client_credentials` and no
    /// `authorization_code`, it is a machine with no redirect URIs. (A `bool`, whether it
    /// registered `refresh_token`, up to format 11: the same byte.)
    pub grant_types: GrantTypes,
    /// `native` or `web` (OpenID Connect Registration §2; MCP clients send it).
    pub native: bool,
    /// The informational URLs and texts it gave: shown as asserted, never followed by the core.
    pub about: AboutClient,
    /// Its public keys, for [`AuthMethod::PrivateKeyJwt`] (its `jwks` or `jwks_uri`).
    pub keys: ClientKeys,
}

/// The `token_endpoint_auth_method` of a registered client (RFC 7591 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthMethod {
    /// A public client: `client_id` alone, with PKCE.
    None,
    /// Its secret in the Basic `Authorization` header.
    ClientSecretBasic,
    /// Its secret in the form body.
    ClientSecretPost,
    /// A JWT it signed with one of its keys (RFC 7523 §2.2), with PKCE.
    PrivateKeyJwt,
}

impl AuthMethod {
    /// The method's registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// How much the method proves of the client: nothing (`none`), a secret it was handed
    /// (`client_secret_*`), or a signature by a key only it holds (`private_key_jwt`). A
    /// registration may move up this order, never down (RFC 7592 §2.2 updates).
    pub fn strength(self) -> u8 {
        match self {
            AuthMethod::None => 0,
            AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost => 1,
            AuthMethod::PrivateKeyJwt => 2,
        }
    }

    /// Whether the client holds a secret the server minted.
    pub fn uses_secret(self) -> bool {
        matches!(
            self,
            AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost
        )
    }
}

/// Metadata a client gave about itself (RFC 7591 §2), kept to be answered back (§3.2.1) and
/// shown as the client's own claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AboutClient {
    /// `client_uri`.
    pub client_uri: Option<String>,
    /// `logo_uri`.
    pub logo_uri: Option<String>,
    /// `tos_uri`.
    pub tos_uri: Option<String>,
    /// `policy_uri`.
    pub policy_uri: Option<String>,
    /// `contacts`.
    pub contacts: Vec<String>,
    /// `software_id`.
    pub software_id: Option<String>,
    /// `software_version`.
    pub software_version: Option<String>,
}

/// Any stored record.
///
/// Stored as postcard (positional): a field or variant may never be reordered or removed, and
/// a new field needs a new [`FORMAT`] with an explicit upgrade of the old one.
///
/// Format 2 added the grant's token digests in the release that put every key in a
/// partition; records of format 1 sit under keys of the older shape that nothing reads, so
/// there is nothing to upgrade: they are refused as [`BadRecord`]. Format 3 added the link's
/// list of grants; a link of format 2 is read with an empty list (its grants still end with an
/// unlink, by the epoch, but are not purged by it). Format 4 added the resources of codes and
/// grants and the audience of access tokens (RFC 8707); older ones read with none. Format 5
/// added the grant's last rotation; older grants read as never rotated. Format 6 added the
/// link's resources; an older link reads with none, so a request naming a resource (or, in
/// the standards profile, the API here) asks for consent once more. Format 7 added the link's
/// member places, the grant's own and its idle deadline (and the member record): an older link
/// reads with its places at 0 (its listed grants are still purged by an unlink, from the
/// list), an older grant with neither. Format 8 added the access token's generation and uid
/// (and the ledger): an older token reads with neither, and its bearer checks read its grant
/// and link as before. Format 9 moved a stored app's last use to the front of its record (a
/// bearer check reads only that); an older app's record is decoded as it was laid out and
/// encoded anew when read. Format 10 added the link's consented redirect URI; an older link
/// reads with none, so a client nobody verified asks for consent once more. Format 11 made whom a
/// grant and its tokens act for explicit ([`Subject`]: a person's account, or the app itself);
/// an older grant or token was a person's, and reads so. Format 12 added the access token's
/// exchanging client and whether it acts (RFC 8693); an older token was issued to its app.
/// Format 13 added the key a code, a grant's refresh token and an access token are bound to
/// (DPoP, RFC 9449); an older one is bound to none. Format 14 added the sealed props of a code,
/// a grant and an access token; an older one has none.
/// (Keying the partitions under the server key moved every
/// account's records to keys nothing of the older releases named, as format 2 did: no format
/// changed, older records are never read and are purged at their times.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    /// Under [`RecordKey::Code`].
    Code(CodeRecord),
    /// Under [`RecordKey::AccessToken`].
    AccessToken(AccessTokenRecord),
    /// Under [`RecordKey::RefreshToken`].
    RefreshToken(RefreshTokenRecord),
    /// Under [`RecordKey::Grant`].
    Grant(GrantRecord),
    /// Under [`RecordKey::Link`].
    Link(LinkRecord),
    /// Under [`RecordKey::Attempts`].
    Attempts(AttemptsRecord),
    /// Under [`RecordKey::Member`].
    Member(MemberRecord),
    /// Under [`RecordKey::App`].
    #[serde(with = "only_unannounced")]
    App(AppRecord),
    /// Under [`RecordKey::Assertion`].
    Assertion(AssertionRecord),
    /// Under [`RecordKey::Ledger`].
    Ledger(LedgerRecord),
    /// Under [`RecordKey::ProviderKeys`]: an identity provider's key set as last fetched.
    #[serde(with = "only_unannounced")]
    ProviderKeys(RemoteKeys),
}

/// A record of the whole build only (a stored app's, an identity provider's keys) in
/// [`Record`]'s codec. A build without clients that arrive unannounced stores none and never
/// asks for one: it refuses to read or write one, so that it links neither codec.
mod only_unannounced {
    use serde::{de, ser, Deserialize, Deserializer, Serialize, Serializer};

    const NOT_HERE: &str = "a record of the whole build, in the build for configured apps";

    pub fn serialize<T: Serialize, S: Serializer>(record: &T, to: S) -> Result<S::Ok, S::Error> {
        if !cfg!(feature = "unannounced") {
            return Err(ser::Error::custom(NOT_HERE));
        }
        record.serialize(to)
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        from: D,
    ) -> Result<T, D::Error> {
        if !cfg!(feature = "unannounced") {
            return Err(de::Error::custom(NOT_HERE));
        }
        T::deserialize(from)
    }
}

/// A client assertion that was used: kept until it expires, so that it is used once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssertionRecord {
    /// Its `exp`: from then on it is refused anyway, and the record is purged.
    pub expires_at: UnixTime,
}

/// The format of stored records: the first byte of every [`Record::encode`].
pub const FORMAT: u8 = 14;

/// The postcard tags of the variants (their index, one byte) whose record gained last fields
/// since a format: each an empty list, an empty string or `None`, all one zero byte, so zero
/// bytes appended read an older record as the new.
const CODE_TAG: u8 = 0;
pub(crate) const ACCESS_TOKEN_TAG: u8 = 1;
const REFRESH_TOKEN_TAG: u8 = 2;
pub(crate) const GRANT_TAG: u8 = 3;
pub(crate) const LINK_TAG: u8 = 4;
pub(crate) const APP_TAG: u8 = 7;

/// How many trailing fields a record of `format` with this tag lacks.
fn missing_trailing_fields(format: u8, tag: u8) -> usize {
    // Format 3 added the link's grants; format 4 the code's, grant's and access token's
    // resources; format 5 the grant's last rotation; format 6 the link's resources; format 7
    // the link's three member places, the grant's own and its idle deadline; format 8 the
    // access token's generation and uid; format 10 the link's consented redirect URI; format
    // 12 the access token's exchanging client and whether it acts; format 13 the code's,
    // grant's and access token's key binding (DPoP); format 14 their sealed props.
    let added_since = |formats: &[u8]| formats.iter().filter(|&&f| format < f).count();
    match tag {
        LINK_TAG => added_since(&[3, 6, 7, 7, 7, 10]),
        CODE_TAG => added_since(&[4, 13, 14]),
        ACCESS_TOKEN_TAG => added_since(&[4, 8, 8, 12, 12, 13, 14]),
        GRANT_TAG => added_since(&[4, 5, 7, 7, 13, 14]),
        _ => 0,
    }
}

/// Writes the body of a grant, access token or refresh token of a format before 11 as format 11
/// lays it out: every such record was a person's, so the variant tag of [`Subject::Account`]
/// (0) goes before the account id, and a grant's uid becomes `Some` (1). Found by the lengths
/// of the strings before them, the rest copied as it is (no decoder of the older layout is
/// linked). `None` if those strings are not there.
fn with_subject(tag: u8, body: &[u8], out: &mut Vec<u8>) -> Option<()> {
    // Before the account: a grant's app; a token's grant id and app.
    let account_at = view::texts_len(body, if tag == GRANT_TAG { 1 } else { 2 })?;
    let (before, rest) = body.split_at(account_at);
    out.extend_from_slice(before);
    out.push(0);
    if tag == GRANT_TAG {
        let uid_at = view::texts_len(rest, 1)?;
        let (account, rest) = rest.split_at(uid_at);
        out.extend_from_slice(account);
        out.push(1);
        out.extend_from_slice(rest);
    } else {
        out.extend_from_slice(rest);
    }
    Some(())
}

impl Record {
    /// The record in its stored form: opaque bytes for the host, which stores them beside the
    /// key, the version and the purge time and never needs to read them. The first byte is
    /// the [`FORMAT`].
    pub fn encode(&self) -> Vec<u8> {
        // Room for a typical record up front (most are under 160 bytes): growing costs more
        // than encoding.
        let mut bytes = Vec::with_capacity(160);
        bytes.push(FORMAT);
        // Serializing these types to a growing Vec cannot fail.
        postcard::to_extend(self, bytes).unwrap_or_default()
    }

    /// Reads a record from its stored form.
    pub fn decode(bytes: &[u8]) -> Result<Record, BadRecord> {
        let current = Record::upgraded(bytes).ok_or(BadRecord)?;
        match postcard::take_from_bytes(current.get(1..).unwrap_or_default()) {
            Ok((record, [])) => Ok(record),
            _ => Err(BadRecord),
        }
    }

    /// A record's stored form in the current [`FORMAT`]: as it is; for formats 2 to 8 a stored
    /// app's record with its last use moved to the front (decoded as it was laid out, encoded
    /// anew); and for formats 2 to 13 any other record with each trailing field its format
    /// lacked (see `missing_trailing_fields`) appended, one zero byte each, and (before 11) a
    /// grant's or token's account read as its subject (see `with_subject`). `None` for any other format,
    /// or an older record that does not decode.
    pub(crate) fn upgraded(bytes: &[u8]) -> Option<Cow<'_, [u8]>> {
        match bytes.split_first()? {
            (&FORMAT, _) => Some(Cow::Borrowed(bytes)),
            (2..=8, [APP_TAG, laid_out @ ..]) if cfg!(feature = "unannounced") => {
                let Ok((before, [])) = postcard::take_from_bytes::<AppRecordBefore9>(laid_out)
                else {
                    return None;
                };
                let record = Record::App(AppRecord {
                    used_at: before.used_at,
                    app: before.app,
                    provenance: before.provenance,
                });
                Some(Cow::Owned(record.encode()))
            }
            (&format @ 2..=13, [tag, body @ ..]) => {
                let missing = missing_trailing_fields(format, *tag);
                let mut upgraded = Vec::with_capacity(bytes.len() + missing + 2);
                upgraded.extend_from_slice(&[FORMAT, *tag]);
                match *tag {
                    GRANT_TAG | ACCESS_TOKEN_TAG | REFRESH_TOKEN_TAG if format < 11 => {
                        with_subject(*tag, body, &mut upgraded)?;
                    }
                    _ => upgraded.extend_from_slice(body),
                }
                upgraded.resize(upgraded.len() + missing, 0);
                Some(Cow::Owned(upgraded))
            }
            _ => None,
        }
    }

    /// Whether this record may live under `key` (each key names the type of its record).
    pub fn fits(&self, key: &RecordKey) -> bool {
        matches!(
            (self, key),
            (Record::Code(_), RecordKey::Code(..))
                | (Record::AccessToken(_), RecordKey::AccessToken(..))
                | (Record::RefreshToken(_), RecordKey::RefreshToken(..))
                | (Record::Grant(_), RecordKey::Grant(..))
                | (Record::Link(_), RecordKey::Link(..))
                | (Record::Attempts(_), RecordKey::Attempts(..))
                | (Record::Member(_), RecordKey::Member(..))
                | (Record::App(_), RecordKey::App(..))
                | (Record::Assertion(_), RecordKey::Assertion(..))
                | (Record::Ledger(_), RecordKey::Ledger(..))
                | (Record::ProviderKeys(_), RecordKey::ProviderKeys(..))
        )
    }
}

/// Bytes that are not a record of this core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the stored bytes are not a record")]
pub struct BadRecord;

/// A record as the store holds it: the version it is at (versions start at 1; every applied put
/// adds one) and its bytes ([`Record::encode`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// The store's version of the record.
    pub version: u64,
    /// The record's bytes.
    pub bytes: Vec<u8>,
}

impl Stored {
    /// The record, decoded (hosts never need this; tests and tools do).
    pub fn record(&self) -> Result<Record, BadRecord> {
        Record::decode(&self.bytes)
    }
}

/// Where a record lives: in which [`Partition`], under which name. Its text form,
/// `<partition>/<kind>:<name>` (`code:…`, `access:…`, `refresh:…`, `grant:…`,
/// `link:<app>:<account>`, `member:<place>:<app>:<account>`, `attempts:…`, `app:<app>`,
/// `ledger:`; a document client's `<app>` with `:` and `%` escaped as `%3A` and `%25`), is the
/// storage key; a host that spreads its records over many machines splits it at the `/` and
/// routes by [`partition`](Self::partition).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordKey {
    /// An authorization code, by digest, in its account's partition.
    Code(Partition, CodeDigest),
    /// An access token, by digest, in its account's partition.
    AccessToken(Partition, AccessTokenDigest),
    /// A refresh token, by digest, in its account's partition.
    RefreshToken(Partition, RefreshTokenDigest),
    /// A grant, by id, in its account's partition.
    Grant(Partition, GrantId),
    /// The link of one user and one app, in the user's partition (see [`RecordKey::link`]).
    Link(Partition, AppKey, AccountId),
    /// The failed attempts counted against one attempter, by digest: a partition of its own.
    Attempts(AttempterDigest),
    /// A grant of the link of one user and one app, by its place among the link's members, in
    /// the user's partition (see [`RecordKey::member`]).
    Member(Partition, AppKey, AccountId, u64),
    /// A stored app (a client that registered itself), in a partition of its own (see
    /// [`RecordKey::app`]).
    App(Partition, AppKey),
    /// A client assertion used (`private_key_jwt`), by digest: a partition of its own.
    Assertion(AssertionDigest),
    /// The ledger of the account whose partition this is (one per account: the partition is
    /// the account's).
    Ledger(Partition),
    /// An identity provider's fetched key set, in a partition of its own (see
    /// [`Partition::of_provider`]).
    ProviderKeys(Partition),
}

impl RecordKey {
    /// Where the record of a code as presented would be stored: `None` if it is not a code
    /// this server minted under `key` (its route garbled or forged), so nothing is read for it.
    pub fn of_code(key: &ServerKey, presented: &str) -> Option<RecordKey> {
        let partition = Partition::of_credential(key, presented)?;
        Some(RecordKey::Code(
            partition,
            AuthorizationCode::digest_of(presented),
        ))
    }

    /// Where the record of an access token as presented would be stored (see
    /// [`of_code`](Self::of_code)).
    pub fn of_access_token(key: &ServerKey, presented: &str) -> Option<RecordKey> {
        let route = presented.strip_prefix(AccessToken::PREFIX)?;
        let partition = Partition::of_credential(key, route)?;
        Some(RecordKey::AccessToken(
            partition,
            AccessToken::digest_of(presented),
        ))
    }

    /// Where the record of a refresh token as presented would be stored (see
    /// [`of_code`](Self::of_code)).
    pub fn of_refresh_token(key: &ServerKey, presented: &str) -> Option<RecordKey> {
        let partition = Partition::of_credential(key, presented)?;
        Some(RecordKey::RefreshToken(
            partition,
            RefreshToken::digest_of(presented),
        ))
    }

    /// The key of the link of `app` and `account`, in the account's partition under `key`.
    pub fn link(key: &ServerKey, app: AppKey, account: AccountId) -> RecordKey {
        RecordKey::Link(Partition::of_account(key, &account), app, account)
    }

    /// The key of the member at `place` of the link of `app` and `account`.
    pub fn member(key: &ServerKey, app: AppKey, account: AccountId, place: u64) -> RecordKey {
        RecordKey::Member(Partition::of_account(key, &account), app, account, place)
    }

    /// The key of the stored app `app`, in its own partition under `key`.
    pub fn app(key: &ServerKey, app: AppKey) -> RecordKey {
        RecordKey::App(Partition::of_app(key, &app), app)
    }

    /// The partition the record lives in.
    pub fn partition(&self) -> Partition {
        match self {
            RecordKey::Code(p, _)
            | RecordKey::AccessToken(p, _)
            | RecordKey::RefreshToken(p, _)
            | RecordKey::Grant(p, _)
            | RecordKey::Link(p, ..)
            | RecordKey::Member(p, ..)
            | RecordKey::App(p, _)
            | RecordKey::Ledger(p)
            | RecordKey::ProviderKeys(p) => *p,
            RecordKey::Attempts(digest) => Partition::of_attempter(digest),
            RecordKey::Assertion(digest) => Partition::of_assertion(digest),
        }
    }
}

impl RecordKey {
    /// Its text, the storage key (as `Display` writes it), appended to `out` piece by piece:
    /// every read and write step carries its keys so, and the formatting machinery had cost a
    /// bearer check in wasm a tenth of the module's time.
    ///
    /// ```
    /// # use edgegrant::{AccountId, Partition, RecordKey, ServerKey};
    /// let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
    /// let ledger = RecordKey::Ledger(Partition::of_account(&key, &AccountId::new("dbid:alice").unwrap()));
    /// let mut text = String::from("key: ");
    /// ledger.write_to(&mut text);
    /// assert_eq!(text, format!("key: {ledger}"));
    /// ```
    pub fn write_to(&self, out: &mut String) {
        self.partition().push_text(out);
        out.push('/');
        match self {
            RecordKey::Code(_, digest) => {
                out.push_str("code:");
                digest.push_base64(out);
            }
            RecordKey::AccessToken(_, digest) => {
                out.push_str("access:");
                digest.push_base64(out);
            }
            RecordKey::RefreshToken(_, digest) => {
                out.push_str("refresh:");
                digest.push_base64(out);
            }
            RecordKey::Grant(_, id) => {
                out.push_str("grant:");
                out.push_str(id.as_str());
            }
            RecordKey::Link(_, app, account) => {
                out.push_str("link:");
                out.push_str(&escaped(app));
                out.push(':');
                out.push_str(account.as_str());
            }
            RecordKey::Attempts(digest) => {
                out.push_str("attempts:");
                digest.push_base64(out);
            }
            RecordKey::Member(_, app, account, place) => {
                out.push_str("member:");
                out.push_str(&place.to_string());
                out.push(':');
                out.push_str(&escaped(app));
                out.push(':');
                out.push_str(account.as_str());
            }
            RecordKey::App(_, app) => {
                out.push_str("app:");
                out.push_str(&escaped(app));
            }
            RecordKey::Assertion(digest) => {
                out.push_str("assertion:");
                digest.push_base64(out);
            }
            RecordKey::Ledger(_) => out.push_str("ledger:"),
            RecordKey::ProviderKeys(_) => out.push_str("provider-keys:"),
        }
    }
}

impl fmt::Display for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::with_capacity(80);
        self.write_to(&mut text);
        f.write_str(&text)
    }
}

/// An app key as a storage key holds it: a document client's URL with its `:` (the separator
/// of a key's parts) and `%` escaped as `%3A` and `%25`; any other key as it is.
fn escaped(app: &AppKey) -> alloc::borrow::Cow<'_, str> {
    let text = app.as_str();
    if text.contains([':', '%']) {
        text.replace('%', "%25").replace(':', "%3A").into()
    } else {
        text.into()
    }
}

/// The app key [`escaped`] wrote as `text`, if it wrote exactly that (only `%3A` and `%25`).
fn unescaped(text: &str) -> Option<AppKey> {
    let mut out = String::with_capacity(text.len());
    let mut parts = text.split('%');
    out.push_str(parts.next().unwrap_or_default());
    for part in parts {
        let (unescaped, rest) = match part.as_bytes() {
            [b'3', b'A', ..] => (':', part.get(2..)?),
            [b'2', b'5', ..] => ('%', part.get(2..)?),
            _ => return None,
        };
        out.push(unescaped);
        out.push_str(rest);
    }
    // A raw `:` is a separator, never part of the key.
    (!text.contains(':')).then_some(())?;
    AppKey::new(out).ok()
}

/// A storage key that is not one of the forms [`RecordKey`] writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a record key: \"{0}\"")]
pub struct BadRecordKey(pub String);

impl FromStr for RecordKey {
    type Err = BadRecordKey;
    fn from_str(text: &str) -> Result<Self, BadRecordKey> {
        let bad = || BadRecordKey(text.to_owned());
        let (partition, name) = text.split_once('/').ok_or_else(bad)?;
        let p: Partition = partition.parse().map_err(|_| bad())?;
        let (kind, rest) = name.split_once(':').ok_or_else(bad)?;
        let key = match kind {
            "code" => CodeDigest::from_base64(rest).map(|d| RecordKey::Code(p, d)),
            "access" => AccessTokenDigest::from_base64(rest).map(|d| RecordKey::AccessToken(p, d)),
            "refresh" => {
                RefreshTokenDigest::from_base64(rest).map(|d| RecordKey::RefreshToken(p, d))
            }
            "attempts" => AttempterDigest::from_base64(rest).map(RecordKey::Attempts),
            "assertion" => AssertionDigest::from_base64(rest).map(RecordKey::Assertion),
            "grant" => GrantId::parse(rest).map(|id| RecordKey::Grant(p, id)),
            "app" => unescaped(rest).map(|app| RecordKey::App(p, app)),
            "ledger" => rest.is_empty().then_some(RecordKey::Ledger(p)),
            "provider-keys" => rest.is_empty().then_some(RecordKey::ProviderKeys(p)),
            "link" => rest.split_once(':').and_then(|(app, account)| {
                Some(RecordKey::Link(
                    p,
                    unescaped(app)?,
                    AccountId::new(account).ok()?,
                ))
            }),
            "member" => rest.split_once(':').and_then(|(place, rest)| {
                let (app, account) = rest.split_once(':')?;
                // The place as written, byte for byte (no sign, no leading zero).
                let number: u64 = place.parse().ok()?;
                (number.to_string() == place).then_some(())?;
                Some(RecordKey::Member(
                    p,
                    unescaped(app)?,
                    AccountId::new(account).ok()?,
                    number,
                ))
            }),
            _ => None,
        };
        // A derived partition must be the one written: the text is the key, byte for byte. (An
        // account's partition is derived under the server key, which a key's text alone cannot
        // check; the explorer checks it for every record written.)
        key.filter(|key| key.partition() == p).ok_or_else(bad)
    }
}

impl Serialize for RecordKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RecordKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}
