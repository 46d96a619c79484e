//! The one vocabulary between core and host: what comes in ([`Input`]), what the core answers
//! ([`Step`]), and what the host stores and shows ([`Transaction`], [`Outcome`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::credentials::AuthorizationCode;
use crate::ids::{AccountId, AppKey, GrantId, RedirectUri, User};
use crate::pkce::ChallengeMethod;
use crate::records::{Record, RecordKey, TokenAccessType, Versioned};
use crate::scope::ScopeSet;
use crate::time::UnixTime;

/// An HTTP request as the host received it. Header names are compared case-insensitively.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// Every header, in order, repeated names included.
    pub headers: Vec<(String, String)>,
    /// The body bytes (the host caps them at [`Policy::max_input_bytes`](crate::Policy)).
    #[serde(default, with = "serde_bytes")]
    pub body: Vec<u8>,
    /// The URL's query string, without `?` (only the token endpoint reads it; see
    /// [`Policy::token_parameters_in_query`](crate::Policy)).
    #[serde(default)]
    pub query: String,
}

impl HttpRequest {
    /// The values of every header named `name` (case-insensitive).
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body or any header value is larger than `limit` bytes.
    pub(crate) fn exceeds(&self, limit: usize) -> bool {
        self.body.len() > limit
            || self.query.len() > limit
            || self.headers.iter().any(|(n, v)| n.len() + v.len() > limit)
    }
}

/// The user's answer on the consent page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The user clicked Allow.
    Allow,
    /// The user clicked Deny.
    Deny,
}

/// Who ended an app's access for a user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unlinker {
    /// The user, on the connected-apps page.
    User,
    /// A team admin, on the team-apps page.
    TeamAdmin,
}

/// Everything the core reacts to: HTTP requests on its endpoints and host events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Input {
    /// `GET /oauth2/authorize?<query>`; `user` is the signed-in user, if any.
    Authorize {
        /// The raw query string, without the leading `?`.
        query: String,
        /// The signed-in user; with one, the core checks whether consent was already given.
        user: Option<User>,
    },
    /// The user's decision on the consent page for the authorization request `query`.
    /// The core validates the request again: the consent form is not trusted.
    Consent {
        /// The same raw query string the consent page was shown for.
        query: String,
        /// The signed-in user who decided.
        user: User,
        /// Allow or deny.
        decision: Decision,
    },
    /// `POST /oauth2/token`.
    Token {
        /// The request.
        request: HttpRequest,
    },
    /// `POST /2/auth/token/revoke` with a bearer token.
    Revoke {
        /// The request.
        request: HttpRequest,
    },
    /// A call to one of the host's API endpoints: check the bearer token and the endpoint's
    /// Required Scope.
    ApiCall {
        /// The endpoint path as declared in the configuration, e.g. `/2/users/get_current_account`.
        endpoint: String,
        /// The request (only its headers are read).
        request: HttpRequest,
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

impl Input {
    /// The HTTP request this input carries (token, revoke and API calls), for hosts that fill
    /// in its body separately (the wasm bindings pass the body bytes beside the JSON).
    pub fn request_mut(&mut self) -> Option<&mut HttpRequest> {
        match self {
            Input::Token { request }
            | Input::Revoke { request }
            | Input::ApiCall { request, .. } => Some(request),
            Input::Authorize { .. } | Input::Consent { .. } | Input::Unlink { .. } => None,
        }
    }
}

/// The records a host has loaded for the current request, by key. A key mapped to `None` was
/// looked up and is absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Records(BTreeMap<RecordKey, Option<Versioned>>);

impl Records {
    /// No records loaded yet: the first call of every request.
    pub fn new() -> Self {
        Records::default()
    }

    /// Adds what the store holds under `key` (`None` when absent).
    pub fn insert(&mut self, key: RecordKey, value: Option<Versioned>) {
        self.0.insert(key, value);
    }

    /// Adds every record of `more` (a later load replaces an earlier one under the same key).
    pub fn extend(&mut self, more: Records) {
        self.0.extend(more.0);
    }

    /// What was loaded under `key`: `None` if not loaded, `Some(None)` if loaded and absent.
    pub fn get(&self, key: &RecordKey) -> Option<Option<&Versioned>> {
        self.0.get(key).map(Option::as_ref)
    }

    /// Every loaded key.
    pub fn keys(&self) -> impl Iterator<Item = &RecordKey> {
        self.0.keys()
    }
}

/// What a key must hold for a transaction to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "expect", content = "version", rename_all = "snake_case")]
pub enum Expect {
    /// Nothing is stored under the key.
    Absent,
    /// The record is stored at exactly this version.
    Version(u64),
}

/// One conditional write: `record` is stored under `key` only if the key holds what `expect`
/// says; the store then sets the version to the old version + 1 (or 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Put {
    /// Where.
    pub key: RecordKey,
    /// The condition: what the key held when the core read it.
    pub expect: Expect,
    /// The new record.
    pub record: Record,
    /// When the host may delete the record to reclaim space (`None`: keep it).
    pub purge_after: Option<UnixTime>,
}

impl Put {
    /// Creates a record under a key that must be empty (a fresh credential: a collision means the
    /// entropy was not random, and the write must fail rather than overwrite).
    pub(crate) fn create(key: RecordKey, record: Record, purge_after: Option<UnixTime>) -> Put {
        Put {
            key,
            expect: Expect::Absent,
            record,
            purge_after,
        }
    }

    /// Replaces the record read at `version` (`None`: read as absent).
    pub(crate) fn replace(key: RecordKey, version: Option<u64>, record: Record) -> Put {
        Put {
            key,
            expect: version.map_or(Expect::Absent, Expect::Version),
            record,
            purge_after: None,
        }
    }

    /// The same write, with a time after which the host may delete the record.
    pub(crate) fn purgeable_after(self, at: UnixTime) -> Put {
        Put {
            purge_after: Some(at),
            ..self
        }
    }
}

/// Writes the host applies all-or-nothing: if any `expect` fails, none is applied, the host
/// reloads and calls again, and the core decides afresh from what won the race.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transaction {
    /// The conditional writes.
    pub puts: Vec<Put>,
    /// What happened, for the host's audit log; emitted only once the writes applied.
    pub audit: Vec<AuditEvent>,
}

/// An HTTP response the host sends as is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers (may be left out when a host feeds a response to the client machine).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body (JSON for every endpoint of the core).
    pub body: String,
}

impl HttpResponse {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the consent page must show, and whether it may be skipped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The signed-in user already granted this app all these scopes: the host may send
    /// [`Input::Consent`] with [`Decision::Allow`] without asking again.
    pub already_granted: bool,
}

/// A user-facing error page. Shown instead of redirecting, because the redirect target cannot
/// be trusted or does not exist (RFC 6749 §4.1.2.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorPage {
    /// An RFC 6749 error code (`invalid_request`, `access_denied`, …).
    pub error: String,
    /// A sentence for the user.
    pub description: String,
}

/// The principal an API call acts for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The calling app.
    pub app: AppKey,
    /// The user's account.
    pub account_id: AccountId,
    /// The user's uid.
    pub uid: crate::Uid,
    /// The scopes the token carries.
    pub scopes: ScopeSet,
    /// When the token expires (`None`: a legacy long-lived token).
    pub expires_at: Option<UnixTime>,
}

/// What the host does once any transaction is applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Outcome {
    /// Send this response as is (token endpoint, revoke, API errors).
    Http(HttpResponse),
    /// Redirect the browser: `302 Found`, `Location: <this>`, `Cache-Control: no-store`.
    Redirect(String),
    /// Render the consent page (after signing the user in, if the host had no user).
    Consent(ConsentPrompt),
    /// No `redirect_uri` was given: show this code to the user to paste into the app.
    DisplayCode {
        /// The app it was issued to.
        app: AppKey,
        /// The code.
        #[serde(with = "exposed_code")]
        code: AuthorizationCode,
    },
    /// Render an error page (status 400) and do not redirect.
    ErrorPage(ErrorPage),
    /// The API call may proceed on behalf of this principal.
    Authorized(Principal),
    /// The unlink is done; every token of that app and user has ended.
    Unlinked,
}

mod exposed_code {
    use crate::credentials::AuthorizationCode;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(code: &AuthorizationCode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(code.expose())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<AuthorizationCode, D::Error> {
        String::deserialize(d).map(AuthorizationCode::presented)
    }
}

/// What the host must do next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Load these keys in one batch (absent ones as `None`), add them to the records and call
    /// [`handle`](crate::handle) again with the same input, time and entropy.
    NeedRecords {
        /// The keys to load.
        keys: Vec<RecordKey>,
    },
    /// Apply `transaction` all-or-nothing. If it applied, emit its audit events and carry out
    /// `outcome`; if a condition failed, start the request over with fresh records.
    Commit {
        /// The writes.
        transaction: Transaction,
        /// What to do once they are applied.
        outcome: Outcome,
    },
    /// Nothing to store: carry out `outcome`.
    Respond {
        /// What to do.
        outcome: Outcome,
    },
}

/// Audit events: what changed, for the host's log. They never carry a secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
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
        /// The user.
        account_id: AccountId,
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
        /// The user.
        account_id: AccountId,
        /// The grant.
        grant: GrantId,
    },
    /// An authorization code was presented again: the grant it produced is revoked.
    CodeReused {
        /// The app.
        app: AppKey,
        /// The user.
        account_id: AccountId,
        /// The revoked grant.
        grant: GrantId,
    },
    /// The app revoked a token through the revoke endpoint: its whole grant ended.
    GrantRevoked {
        /// The app.
        app: AppKey,
        /// The user.
        account_id: AccountId,
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
}

/// The host broke the calling contract. Protocol errors are never this: they are responses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misuse {
    /// The records hold a key this request never asked for (records from another request, or a
    /// different time or entropy between the calls of one request).
    #[error("record {0} was supplied but not asked for")]
    UnrequestedRecord(String),
    /// The store returned a record of another type than its key names.
    #[error("record under {0} has the wrong type")]
    WrongRecordType(String),
    /// An API call for an endpoint the configuration does not declare.
    #[error("API endpoint \"{0}\" has no Required Scope in the configuration")]
    UnknownEndpoint(String),
}
