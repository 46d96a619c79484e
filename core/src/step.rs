//! The one vocabulary between core and host: what comes in ([`Input`]), what the host does next
//! ([`Step`]), what it stores ([`Transaction`]) and what it sends ([`Reply`]).

use crate::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::config::ScopesJson;

use crate::credentials::AuthorizationCode;
use crate::ids::{AccountId, AppKey, GrantId, RedirectUri, Subject, Uid, User};
use crate::jose::SigningAlg;
use crate::machines::attempts::Attempter;
use crate::partition::Partition;
use crate::pkce::ChallengeMethod;
use crate::records::{AuthMethod, RecordKey, Resources, Stored, TokenAccessType};
use crate::refusal::{Defect, Refusal};
use crate::scope::ScopeSet;
use crate::time::{Seconds, UnixTime};
use crate::wire::http::{HttpRequest, HttpResponse};
use crate::wire::json::JsonObject;

/// Who ended an app's access for a user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unlinker {
    /// The user, on the connected-apps page.
    User,
    /// A team admin, on the team-apps page.
    TeamAdmin,
}

/// Everything the core reacts to: an HTTP request, or a host event.
// An input is built once per request and moved into it: boxing the request to even the
// variants out would cost every request an allocation, and change the hosts' own code.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// An HTTP request to one of the core's endpoints: `GET /oauth2/authorize`, the consent
    /// form (`POST /oauth2/authorize`), `POST /oauth2/token`, `/2/auth/token/revoke` and the
    /// API endpoints the configuration declares. Any other path is answered 404.
    Http {
        /// The request.
        request: HttpRequest,
        /// The user the host's sign-in recognizes in this request (its session), if any. Only
        /// the authorization endpoint reads it.
        user: Option<User>,
    },
    /// A credential check of the host's own (its sign-in form), limited per account name and
    /// source: [`AttemptStep::Reserve`] before the check counts it as a failure up front —
    /// atomically, so checks running at once cannot pass the limit together — unless one of
    /// `attempters` is at its limit; [`AttemptStep::Succeeded`] after a correct check takes
    /// that reservation back. An account name is counted per source when a source is given,
    /// so no one elsewhere can lock its owner out. Ends in [`Outcome::AttemptsAllowed`], or
    /// refused with [`Refusal::TooManyAttempts`] (or [`Refusal::MalformedAttempter`]).
    ///
    /// Each attempter's count is a partition of its own: a check counted against several is
    /// written as one transaction per count, one after the other.
    Attempts {
        /// Whom the check is counted against (the account name tried, the source).
        attempters: Vec<Attempter>,
        /// Before the check, or after a correct one.
        step: AttemptStep,
    },
    /// The user or a team admin unlinked the app: every token of this app and user ends.
    Unlink {
        /// The app.
        app: AppKey,
        /// The user's account.
        account_id: AccountId,
        /// Who unlinked.
        by: Unlinker,
    },
}

/// What a key must hold for a transaction to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Nothing is stored under the key.
    Absent,
    /// The record is stored at exactly this version.
    Version(u64),
}

/// One conditional write: `bytes` are stored under `key` only if the key holds what `expect`
/// says; the store then sets the version to the old version + 1 (or 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Put {
    /// Where.
    pub key: RecordKey,
    /// The condition: what the key held when the core read it.
    pub expect: Expect,
    /// The record, encoded ([`Record::encode`](crate::Record::encode)); opaque to the host.
    pub bytes: Vec<u8>,
    /// When the host may delete the record to reclaim space (`None`: keep it).
    pub purge_after: Option<UnixTime>,
}

/// Writes the host applies all-or-nothing. All of them lie in one [`Partition`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transaction {
    /// The conditional writes.
    pub puts: Vec<Put>,
    /// What happened, for the host's audit log; emit only once the writes applied.
    pub audit: Vec<AuditEvent>,
}

impl Transaction {
    /// The partition every put of the transaction lies in: a host on many machines applies it
    /// where that partition lives.
    pub fn partition(&self) -> Option<Partition> {
        self.puts.first().map(|put| put.key.partition())
    }
}

/// What the consent page shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsentPrompt {
    /// The requesting app.
    pub app: AppKey,
    /// Its display name.
    pub app_name: String,
    /// The scopes requested.
    pub scopes: ScopeSet,
    /// The access requested.
    pub access_type: TokenAccessType,
    /// Where the user will be sent afterwards; `None` means the code will be displayed.
    pub redirect_uri: Option<RedirectUri>,
    /// The resources (RFC 8707) the tokens will be for — the API served here when the request
    /// named none (standards profile); empty in the reference profile.
    pub resources: Resources,
    /// Whether the app registered itself or is named by a metadata document (standards
    /// profile, `profile.clients`): its name is its own claim, which nobody checked.
    pub unverified: bool,
}

/// Where a credential check of the host's own stands ([`Input::Attempts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptStep {
    /// Before the check: may it go ahead? If so it is counted as a failure now, and stays
    /// counted unless the check succeeds.
    Reserve,
    /// After a correct check: the reservation is taken back.
    Succeeded,
}

/// The principal an authorized API call acts for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The calling app.
    pub app: AppKey,
    /// Whom the call acts for: a person's account, or the app itself (a machine acting on
    /// its own behalf), so that a handler can tell the two apart.
    pub subject: Subject,
    /// The person's uid; `None` when the subject is the app itself.
    pub uid: Option<Uid>,
    /// The scopes the token carries.
    pub scopes: ScopeSet,
    /// When the token expires (`None`: a legacy long-lived token).
    pub expires_at: Option<UnixTime>,
    /// The grant's props, opened: what the host gave with the user when the grant was made
    /// ([`User::props`](crate::User)); `None` where it gave none.
    pub props: Option<String>,
}

/// An authorized API call: whom it acts for, and the headers the host's answer must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorized {
    /// The principal the call acts for.
    pub principal: Principal,
    /// Headers for the handler's response, set over any it wrote itself:
    /// `Cache-Control: no-store` and `X-Content-Type-Options: nosniff` always, and the CORS
    /// headers when the call came from a web origin the token's app registered.
    pub headers: Vec<(String, String)>,
}

/// What a request came to, typed: hosts send [`Reply::response`] and may log this; tests
/// assert it.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The authorization request needs a signed-in user: the sign-in page, which returns to
    /// `return_to` afterwards.
    SignIn {
        /// Where to send the user once signed in (a path on this host).
        return_to: String,
    },
    /// The consent page.
    Consent(ConsentPrompt),
    /// Back to the app's redirect URI with a code (or, legacy implicit, a token).
    Redirect(String),
    /// No `redirect_uri` was given: the page shows the code to paste into the app.
    DisplayCode {
        /// The app it was issued to.
        app: AppKey,
        /// The code.
        code: AuthorizationCode,
    },
    /// The token endpoint issued tokens (the response body holds them).
    Tokens,
    /// The presented token's grant was revoked.
    Revoked,
    /// The unlink is done; every token of that app and user has ended.
    Unlinked,
    /// A CORS preflight from a registered app's origin was allowed.
    Preflight,
    /// No attempter of an [`Input::Attempts`] is at its limit: the host may check.
    AttemptsAllowed,
    /// The authorization server metadata (RFC 8414; standards profile).
    Metadata,
    /// An introspection answer (RFC 7662; standards profile), active or not.
    Introspected,
    /// A client registered itself (RFC 7591: `201`), or read or replaced its registration
    /// (RFC 7592: `200`), with its client information.
    Registered,
    /// A registered client deleted its registration (RFC 7592: `204`).
    Unregistered,
    /// The request was refused, for this reason.
    Refused(Refusal),
}

impl Outcome {
    /// The outcome's name in `snake_case` (`tokens`, `refused`, …).
    pub fn name(&self) -> &'static str {
        self.named()
    }
}

/// How a request ended: what to send, and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// What happened.
    pub outcome: Outcome,
    /// The complete response, headers included: send it as it is.
    pub response: HttpResponse,
    /// Events of the answer itself, for the host's audit log, emitted as it is sent: empty
    /// but for a defect ([`AuditEvent::Defect`]) and a rotation's retry answered from the write
    /// of another retry that raced it ([`AuditEvent::RefreshTokenRetried`]), neither of which
    /// wrote anything that could carry its event.
    pub audit: Vec<AuditEvent>,
}

impl Reply {
    /// The reason, if the request was refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.outcome {
            Outcome::Refused(refusal) => Some(refusal),
            _ => None,
        }
    }

    /// What the credential check of an [`Input::Attempts`] may do, as this reply to it says.
    pub fn attempt_verdict(&self) -> AttemptVerdict {
        match &self.outcome {
            Outcome::AttemptsAllowed => AttemptVerdict::Allowed,
            Outcome::Refused(Refusal::TooManyAttempts(_)) => {
                AttemptVerdict::Limited(self.retry_after().unwrap_or(Seconds(1)))
            }
            Outcome::Refused(Refusal::MalformedAttempter) => AttemptVerdict::Malformed,
            // Anything else is the store failing: no one's limit.
            _ => AttemptVerdict::Unavailable(self.retry_after().unwrap_or(Seconds(1))),
        }
    }

    /// How long the client is told to wait before it tries again (`Retry-After`), if it is.
    pub fn retry_after(&self) -> Option<Seconds> {
        self.refusal().and_then(Refusal::retry_after)
    }
}

/// What a credential check of the host's own ([`Input::Attempts`]) may do, as its reply says
/// ([`Reply::attempt_verdict`]): the one reading of that reply, for every host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptVerdict {
    /// Go ahead with the check ([`AttemptStep::Reserve`]), or the reservation is taken back
    /// ([`AttemptStep::Succeeded`]).
    Allowed,
    /// An attempter is at its limit: refuse the sign-in without checking it (429), and say to
    /// come back after this long.
    Limited(Seconds),
    /// The store failed or stayed contended, which is no one's limit: answer 503 and say to
    /// retry after this long.
    Unavailable(Seconds),
    /// The attempters themselves were refused ([`Refusal::MalformedAttempter`]: a name no one
    /// can have typed): answer as to a wrong credential; nothing was counted.
    Malformed,
}

impl AttemptVerdict {
    /// Its name in `snake_case` (`allowed`, `limited`, `unavailable`, `malformed`).
    pub fn name(&self) -> &'static str {
        self.named()
    }

    /// How long to wait before trying again, if waiting is what it takes.
    pub fn retry_after(&self) -> Option<Seconds> {
        match self {
            AttemptVerdict::Limited(wait) | AttemptVerdict::Unavailable(wait) => Some(*wait),
            AttemptVerdict::Allowed | AttemptVerdict::Malformed => None,
        }
    }
}

/// What the host must do next for a [`Request`](crate::Request). Owned: the host may keep it,
/// move its parts into its store's calls, and answer with the [`Event`] that came of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Read these keys in one batch and report every one of them, found or absent, as
    /// [`Event::Read`].
    Read(Vec<RecordKey>),
    /// Apply this transaction all-or-nothing, then report [`Event::Committed`] — and emit its
    /// audit events — or, if any condition failed, [`Event::Conflicted`].
    Write(Transaction),
    /// Send this reply. The request is over.
    Respond(Reply),
    /// The API call is authorized: answer it with the endpoint's handler, for this principal,
    /// putting these headers on the handler's response. The request is over.
    Serve(Authorized),
    /// Verify this signature of a client assertion (`private_key_jwt`) with the client's
    /// public key — WebCrypto's `importKey("jwk", …)` and `verify` do it — and report
    /// [`Event::Verified`]. Only for clients registered with keys.
    Verify(Verify),
    /// Fetch this client's metadata document — guarded against SSRF, no redirect followed,
    /// within its size and time — and report [`Event::Fetched`] or [`Event::FetchFailed`]. Only
    /// where [`profile.clients.documents`](crate::DocumentPolicy) is on.
    Fetch(Fetch),
}

/// A signature to verify (RFC 7515 §5.2): `signature` over the bytes of `message` under `key`,
/// with `alg` (ES256: ECDSA P-256 and SHA-256, the signature `r ‖ s`; RS256: RSASSA-PKCS1-v1_5
/// and SHA-256).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verify {
    /// The algorithm.
    pub alg: SigningAlg,
    /// The public key, as JWK JSON.
    pub key: String,
    /// What was signed: the assertion's `<header>.<payload>`.
    pub message: String,
    /// The signature.
    pub signature: Vec<u8>,
}

/// A client's metadata document to fetch (draft-ietf-oauth-client-id-metadata-document §4): a
/// `GET` of `url`.
///
/// The host refuses ([`FetchFailure::Refused`]) any URL that is not https or whose host
/// resolves to a special-use address (RFC 6890: private, loopback, link-local, the cloud
/// metadata address), checking the address it connects to; follows no redirect (a `3xx` is
/// reported as it came); stops reading past `max_bytes` ([`FetchFailure::TooLarge`]) and
/// gives up after `timeout_ms` ([`FetchFailure::Timeout`]). The package's `fetchDocument`
/// does all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    /// The document's URL: the client's `client_id`.
    pub url: String,
    /// The most bytes of body to read.
    pub max_bytes: u32,
    /// How long the whole fetch may take, in milliseconds.
    pub timeout_ms: u32,
}

/// What a [`Step::Fetch`] got: the status, the `Cache-Control` header and the body (of a
/// `200`; any other status may come without one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The HTTP status.
    pub status: u16,
    /// The `Cache-Control` header, if there was one (repeated ones joined by `, `).
    pub cache_control: Option<String>,
    /// The body, at most [`Fetch::max_bytes`].
    pub body: Vec<u8>,
}

/// Why a [`Step::Fetch`] got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchFailure {
    /// The host would not fetch it: not https, or a special-use address.
    Refused,
    /// The body was larger than [`Fetch::max_bytes`].
    TooLarge,
    /// The fetch took longer than [`Fetch::timeout_ms`].
    Timeout,
    /// No answer: no connection, a DNS or TLS error.
    Unreachable,
}

names! {
    /// Every failure's name, as hosts in other languages report it.
    FetchFailure:
    Refused => "refused",
    TooLarge => "too_large",
    Timeout => "timeout",
    Unreachable => "unreachable",
}

impl FetchFailure {
    /// The failure named `name` (one of [`FetchFailure::NAMES`]).
    pub fn from_name(name: &str) -> Option<FetchFailure> {
        [
            FetchFailure::Refused,
            FetchFailure::TooLarge,
            FetchFailure::Timeout,
            FetchFailure::Unreachable,
        ]
        .into_iter()
        .find(|failure| failure.named() == name)
    }
}

/// What came of the last [`Step`]: the one way the host reports to a
/// [`Request`](crate::Request) ([`Request::advance`](crate::Request::advance)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// What the store holds under each key of the last [`Step::Read`], every key once, in any
    /// order: the record at its version, or `None` when the key is absent.
    Read(Vec<(RecordKey, Option<Stored>)>),
    /// The transaction of the last [`Step::Write`] applied.
    Committed,
    /// The transaction of the last [`Step::Write`] did not apply: a condition failed because a
    /// racing request changed the same records.
    Conflicted,
    /// The store failed while the last read or write was pending (an error, a timeout — not a
    /// failed condition, which is [`Event::Conflicted`]).
    Unavailable,
    /// What the last [`Step::Fetch`] got.
    Fetched(Fetched),
    /// The last [`Step::Fetch`] got no answer.
    FetchFailed(FetchFailure),
    /// Whether the signature of the last [`Step::Verify`] holds.
    Verified(bool),
}

/// Audit events: what changed, for the host's log. They never carry a secret.
///
/// Their JSON form (`{"event": "code_issued", "app": …}`) is [`AuditEvent::to_json_value`];
/// the serde implementation writes the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditEvent {
    /// A user consented and an authorization code was issued.
    CodeIssued {
        /// The app.
        app: AppKey,
        /// The user.
        account_id: AccountId,
        /// The granted scopes.
        scopes: ScopeSet,
        /// The access requested.
        access_type: TokenAccessType,
        /// The PKCE method, if any.
        pkce: Option<ChallengeMethod>,
        /// When the code expires.
        expires_at: UnixTime,
    },
    /// Tokens were issued: by a code exchange or (legacy) directly after consent.
    TokensIssued {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The new grant.
        grant: GrantId,
        /// Whether a refresh token was issued.
        refresh_token: bool,
        /// When the access token expires (`None`: long-lived).
        access_expires_at: Option<UnixTime>,
    },
    /// A refresh token was used to mint a new access token.
    AccessTokenRefreshed {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The grant.
        grant: GrantId,
    },
    /// A refresh rotated the refresh token (standards profile): a new access token and a new
    /// refresh token, the one presented superseded.
    RefreshTokenRotated {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The grant.
        grant: GrantId,
    },
    /// A retry of a rotation inside its window got that rotation's answer again (standards
    /// profile): the superseded token was presented twice — a lost answer, or a thief
    /// racing the client. Watch for it.
    RefreshTokenRetried {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The grant.
        grant: GrantId,
    },
    /// A superseded refresh token was presented outside its retry window: the grant is
    /// revoked.
    RefreshTokenReused {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The revoked grant.
        grant: GrantId,
    },
    /// A new grant took a user past the bound on live grants with one app
    /// ([`Policy::live_grants_per_link`](crate::Policy)): the oldest is revoked.
    GrantEvicted {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The revoked grant.
        grant: GrantId,
    },
    /// An authorization code was presented again: the grant it produced is revoked.
    CodeReused {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The revoked grant.
        grant: GrantId,
    },
    /// The app revoked a token through the revoke endpoint: its whole grant ended.
    GrantRevoked {
        /// The app.
        app: AppKey,
        /// Whom the grant acts for.
        subject: Subject,
        /// The revoked grant.
        grant: GrantId,
    },
    /// The app was unlinked for the user: every token of that pair ended.
    Unlinked {
        /// The app.
        app: AppKey,
        /// The user.
        account_id: AccountId,
        /// Who unlinked.
        by: Unlinker,
    },
    /// A client registered itself (RFC 7591).
    ClientRegistered {
        /// Its new app key.
        app: AppKey,
        /// How it authenticates at the token endpoint.
        auth_method: AuthMethod,
    },
    /// A registered client replaced its metadata (RFC 7592).
    ClientUpdated {
        /// The app.
        app: AppKey,
    },
    /// A registered client deleted its registration (RFC 7592); its grants ended with it.
    ClientDeleted {
        /// The app.
        app: AppKey,
    },
    /// The core broke one of its own invariants and answered `500`
    /// ([`Refusal::Defect`](crate::Refusal::Defect)): a bug to report, not load.
    Defect {
        /// Which invariant.
        defect: Defect,
    },
    /// A client's metadata document or key set could not be fetched or used: the URL is not
    /// fetched again before its backoff ends, and the failure counted against the source.
    /// The client was told only that it could not be used; here is what happened.
    FetchFailed {
        /// The client.
        app: AppKey,
        /// The URL fetched.
        url: String,
        /// What happened: the remote status (`status 500`), the kind of failure
        /// (`timeout`, `unreachable`, `address_refused`, `too_large`, `not_json`,
        /// `wrong_client_id`), or why the metadata is unusable (`invalid: …`).
        detail: String,
    },
}

impl AuditEvent {
    /// The event's name, as its JSON form tags it (`code_issued`, `tokens_issued`, …).
    pub fn name(&self) -> &'static str {
        self.named()
    }

    /// The event as a JSON object: `event` (its [`name`](AuditEvent::name)), `app`,
    /// `account_id`, then the event's own fields; times are Unix seconds, an absent one `null`.
    /// What its `Serialize` implementation writes.
    pub fn to_json_value(&self) -> Value {
        // Infallible: every key is a string.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The event's JSON form as compact text, written without serde: exactly what
    /// `serde_json::to_string` writes through its `Serialize` implementation (the wasm module
    /// writes audit events this way, and links no serializer of maps for them).
    pub fn to_json(&self) -> String {
        let mut out = JsonObject::new();
        for (key, member) in self.members() {
            out = match member {
                Member::Text(text) => out.string(key, text),
                Member::Number(number) => out.number(key, number),
                Member::Flag(flag) => out.boolean(key, flag),
                Member::Scopes(scopes) => out.strings(key, scopes.iter()),
                Member::MaybeText(None) | Member::MaybeNumber(None) => out.json(key, "null"),
                Member::MaybeText(Some(text)) => out.string(key, text),
                Member::MaybeNumber(Some(number)) => out.number(key, number),
                Member::Client => out.string(key, "client"),
            };
        }
        out.finish()
    }

    /// The members of the event's JSON form, in order: `event`, `app`, `account_id` where it
    /// names a user, then its own. One list for both writers (`to_json` and `Serialize`).
    fn members(&self) -> Vec<(&'static str, Member<'_>)> {
        let (app, subject) = match self {
            AuditEvent::CodeIssued {
                app, account_id, ..
            }
            | AuditEvent::Unlinked {
                app, account_id, ..
            } => (app, Some(Member::Text(account_id.as_str()))),
            AuditEvent::TokensIssued { app, subject, .. }
            | AuditEvent::AccessTokenRefreshed { app, subject, .. }
            | AuditEvent::RefreshTokenRotated { app, subject, .. }
            | AuditEvent::RefreshTokenRetried { app, subject, .. }
            | AuditEvent::RefreshTokenReused { app, subject, .. }
            | AuditEvent::CodeReused { app, subject, .. }
            | AuditEvent::GrantEvicted { app, subject, .. }
            | AuditEvent::GrantRevoked { app, subject, .. } => (
                app,
                Some(match subject {
                    Subject::Account(account_id) => Member::Text(account_id.as_str()),
                    Subject::Client => Member::Client,
                }),
            ),
            AuditEvent::ClientRegistered { app, .. }
            | AuditEvent::ClientUpdated { app }
            | AuditEvent::ClientDeleted { app }
            | AuditEvent::FetchFailed { app, .. } => (app, None),
            AuditEvent::Defect { defect } => {
                return vec![
                    ("event", Member::Text(self.name())),
                    ("defect", Member::Text(defect.name())),
                ]
            }
        };
        let mut members = Vec::with_capacity(7);
        members.push(("event", Member::Text(self.name())));
        members.push(("app", Member::Text(app.as_str())));
        // A person's account as `account_id`; a grant to the app itself as `"subject": "client"`.
        match subject {
            Some(Member::Client) => members.push(("subject", Member::Text("client"))),
            Some(account_id) => members.push(("account_id", account_id)),
            None => {}
        }
        match self {
            AuditEvent::CodeIssued {
                scopes,
                access_type,
                pkce,
                expires_at,
                ..
            } => {
                let access_type = match access_type {
                    TokenAccessType::Online => "online",
                    TokenAccessType::Offline => "offline",
                    TokenAccessType::Legacy => "legacy",
                };
                members.push(("scopes", Member::Scopes(scopes)));
                members.push(("access_type", Member::Text(access_type)));
                members.push(("pkce", Member::MaybeText(pkce.map(ChallengeMethod::as_str))));
                members.push(("expires_at", Member::Number(expires_at.0)));
            }
            AuditEvent::TokensIssued {
                grant,
                refresh_token,
                access_expires_at,
                ..
            } => {
                members.push(("grant", Member::Text(grant.as_str())));
                members.push(("refresh_token", Member::Flag(*refresh_token)));
                members.push((
                    "access_expires_at",
                    Member::MaybeNumber(access_expires_at.map(|t| t.0)),
                ));
            }
            AuditEvent::AccessTokenRefreshed { grant, .. }
            | AuditEvent::RefreshTokenRotated { grant, .. }
            | AuditEvent::RefreshTokenRetried { grant, .. }
            | AuditEvent::RefreshTokenReused { grant, .. }
            | AuditEvent::CodeReused { grant, .. }
            | AuditEvent::GrantEvicted { grant, .. }
            | AuditEvent::GrantRevoked { grant, .. } => {
                members.push(("grant", Member::Text(grant.as_str())));
            }
            AuditEvent::Unlinked { by, .. } => {
                let by = match by {
                    Unlinker::User => "user",
                    Unlinker::TeamAdmin => "team_admin",
                };
                members.push(("by", Member::Text(by)));
            }
            AuditEvent::ClientRegistered { auth_method, .. } => {
                members.push(("auth_method", Member::Text(auth_method.as_str())));
            }
            AuditEvent::ClientUpdated { .. } | AuditEvent::ClientDeleted { .. } => {}
            AuditEvent::Defect { .. } => {}
            AuditEvent::FetchFailed { url, detail, .. } => {
                members.push(("url", Member::Text(url)));
                members.push(("detail", Member::Text(detail)));
            }
        }
        members
    }
}

/// One member of an audit event's JSON form: only strings, whole numbers, booleans, lists of
/// scopes and `null` (no float formatting is linked).
enum Member<'a> {
    Text(&'a str),
    MaybeText(Option<&'a str>),
    Number(u64),
    MaybeNumber(Option<u64>),
    Flag(bool),
    Scopes(&'a ScopeSet),
    /// A grant's subject when it is the app itself (written as `"subject": "client"`).
    Client,
}

/// The event's JSON form, keys in the order of the serde derive it replaced.
impl Serialize for AuditEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let members = self.members();
        let mut out = s.serialize_map(Some(members.len()))?;
        for (key, member) in members {
            match member {
                Member::Text(text) => out.serialize_entry(key, text)?,
                Member::MaybeText(text) => out.serialize_entry(key, &text)?,
                Member::Number(number) => out.serialize_entry(key, &number)?,
                Member::MaybeNumber(number) => out.serialize_entry(key, &number)?,
                Member::Flag(flag) => out.serialize_entry(key, &flag)?,
                Member::Scopes(scopes) => out.serialize_entry(key, &ScopesJson(scopes))?,
                Member::Client => out.serialize_entry(key, "client")?,
            }
        }
        out.end()
    }
}

/// The host broke the calling contract. Protocol errors are never this: they are replies; and
/// a stored record the core cannot read is a storage fault, answered as one
/// ([`Refusal::StorageFault`]). The request is left as it was: the host may report again,
/// correctly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// A record was reported under a key the last [`Step::Read`] did not name, or twice.
    #[error("record {0} was reported but not asked for, or twice")]
    UnrequestedRecord(String),
    /// A key the last [`Step::Read`] named was not reported.
    #[error("record {0} was asked for but not reported")]
    MissingRecord(String),
    /// The event does not answer the last step: a read reported while a write was pending, a
    /// commit while a read was, anything once the request is over.
    #[error("the {0} event does not answer the pending step")]
    OutOfTurn(&'static str),
}

names! {
    /// Every outcome's name, in declaration order (the package's TypeScript types are generated from it).
    Outcome:
    SignIn => "sign_in",
    Consent => "consent",
    Redirect => "redirect",
    DisplayCode => "display_code",
    Tokens => "tokens",
    Revoked => "revoked",
    Unlinked => "unlinked",
    Preflight => "preflight",
    AttemptsAllowed => "attempts_allowed",
    Metadata => "metadata",
    Introspected => "introspected",
    Registered => "registered",
    Unregistered => "unregistered",
    Refused => "refused",
}

names! {
    /// Every verdict's name, in declaration order.
    AttemptVerdict:
    Allowed => "allowed",
    Limited => "limited",
    Unavailable => "unavailable",
    Malformed => "malformed",
}

names! {
    /// Every event's name, in declaration order.
    AuditEvent:
    CodeIssued => "code_issued",
    TokensIssued => "tokens_issued",
    AccessTokenRefreshed => "access_token_refreshed",
    RefreshTokenRotated => "refresh_token_rotated",
    RefreshTokenRetried => "refresh_token_retried",
    RefreshTokenReused => "refresh_token_reused",
    CodeReused => "code_reused",
    GrantEvicted => "grant_evicted",
    GrantRevoked => "grant_revoked",
    Unlinked => "unlinked",
    ClientRegistered => "client_registered",
    ClientUpdated => "client_updated",
    FetchFailed => "fetch_failed",
    Defect => "defect",
    ClientDeleted => "client_deleted",
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event() -> impl Strategy<Value = AuditEvent> {
        let app =
            "[A-Za-z0-9._-]{1,16}".prop_map(|k| AppKey::new(k).unwrap_or_else(|_| unreachable!()));
        // Visible ASCII: quotes and backslashes, which JSON escapes, included.
        let account = "[!-~]{1,24}".prop_filter_map("an account id", |a| AccountId::new(a).ok());
        let grant = "[A-Za-z0-9_-]{1,16}".prop_filter_map("a grant id", |g| GrantId::parse(&g));
        let scopes = prop::collection::vec("[a-z_.]{1,10}", 0..4)
            .prop_map(|names| ScopeSet::parse(&names.join(" ")).unwrap_or_default());
        let access_type = prop_oneof![
            Just(TokenAccessType::Online),
            Just(TokenAccessType::Offline),
            Just(TokenAccessType::Legacy)
        ];
        let pkce = prop::option::of(prop_oneof![
            Just(ChallengeMethod::Plain),
            Just(ChallengeMethod::S256)
        ]);
        let by = prop_oneof![Just(Unlinker::User), Just(Unlinker::TeamAdmin)];
        let method = prop_oneof![
            Just(AuthMethod::None),
            Just(AuthMethod::ClientSecretBasic),
            Just(AuthMethod::ClientSecretPost),
            Just(AuthMethod::PrivateKeyJwt)
        ];
        (
            (app, account, grant, scopes, access_type, pkce),
            (
                any::<u64>(),
                prop::option::of(any::<u64>()),
                any::<bool>(),
                by,
                method,
                0..13u8,
            ),
        )
            .prop_map(|(user, rest)| one_of_each(user, rest))
    }

    type User = (
        AppKey,
        AccountId,
        GrantId,
        ScopeSet,
        TokenAccessType,
        Option<ChallengeMethod>,
    );
    type Rest = (u64, Option<u64>, bool, Unlinker, AuthMethod, u8);

    /// The event of kind `which` (every kind, by its place in the enum), from these values.
    #[rustfmt::skip]
    fn one_of_each(
        (app, account_id, grant, scopes, access_type, pkce): User,
        (at, maybe_at, flag, by, auth_method, which): Rest,
    ) -> AuditEvent {
        // Every other grant's subject is the app itself.
        let subject = if flag { Subject::Account(account_id.clone()) } else { Subject::Client };
        match which {
            0 => AuditEvent::CodeIssued { app, account_id, scopes, access_type, pkce, expires_at: UnixTime(at) },
            1 => AuditEvent::TokensIssued { app, subject, grant, refresh_token: flag, access_expires_at: maybe_at.map(UnixTime) },
            2 => AuditEvent::AccessTokenRefreshed { app, subject, grant },
            3 => AuditEvent::RefreshTokenRotated { app, subject, grant },
            4 => AuditEvent::RefreshTokenRetried { app, subject, grant },
            5 => AuditEvent::RefreshTokenReused { app, subject, grant },
            6 => AuditEvent::GrantEvicted { app, subject, grant },
            7 => AuditEvent::CodeReused { app, subject, grant },
            8 => AuditEvent::GrantRevoked { app, subject, grant },
            9 => AuditEvent::Unlinked { app, account_id, by },
            10 => AuditEvent::ClientRegistered { app, auth_method },
            11 => AuditEvent::ClientUpdated { app },
            _ => AuditEvent::ClientDeleted { app },
        }
    }

    proptest! {
        /// Both writers of an event's JSON form agree byte for byte, for every kind of event
        /// (the wasm module writes `to_json`; native hosts serialize with serde).
        #[test]
        fn to_json_writes_what_serde_writes(event in event()) {
            prop_assert_eq!(event.to_json(), serde_json::to_string(&event).unwrap_or_default());
        }
    }
}
