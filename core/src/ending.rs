//! How a request ends, before it is written out: one value per ending, decided by an endpoint
//! and written out by [`render`](crate::render), the one map to HTTP. A request's path to the
//! wire is Decision (writes and an ending) → [`Ending`] → [`Step`](crate::Step).

use crate::config::CalledEndpoint;
use crate::cors::Preflight;
use crate::credentials::{
    AccessToken, AuthorizationCode, ClientSecret, RefreshToken, RegistrationToken,
};
use crate::endpoints::discovery::Metadata;
use crate::ids::{AccountId, AppKey, GrantId, KeyThumbprint, Subject, Uid, User};
use crate::prelude::*;
use crate::records::{AppRecord, Resources};
use crate::refusal::Refusal;
use crate::routes::Endpoint;
use crate::scope::ScopeSet;
use crate::step::{ConsentPrompt, Principal};
use crate::time::{Seconds, UnixTime};
use crate::wire::redirect::ReplyTo;

/// Where a refusal goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// An error page: no redirect target can be trusted (RFC 6749 §4.1.2.1).
    Page,
    /// Back to the app's redirect URI, with `error` (RFC 6749 §4.1.2.1, §4.2.2.1).
    Redirect(ReplyTo),
    /// An RFC 6749 §5.2 JSON error; `basic` when the client tried HTTP Basic.
    Token { basic: bool },
    /// An RFC 6750 bearer challenge with the reference service's JSON body; at an API endpoint,
    /// with the scope it requires, which the standards profile names in a 401's challenge (MCP
    /// asks it: a client learns what to ask for before it has a token), and its own metadata's
    /// URL (RFC 9728 §5.1: the metadata of the resource the client called).
    Bearer(Option<CalledEndpoint>),
    /// The same for a token presented under the `DPoP` scheme: the refusal on the `DPoP`
    /// challenge (RFC 9449 §7.1).
    Dpop(Option<CalledEndpoint>),
    /// A bare status (unknown path, wrong method, contention).
    Plain,
}

/// The token endpoint's success body (RFC 6749 §5.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TokenBody {
    pub access_token: AccessToken,
    pub expires_in: Option<Seconds>,
    pub refresh_token: Option<RefreshToken>,
    /// The token's scopes, where the answer names them (RFC 6749 §5.1: always after an
    /// exchange; after a refresh only when they differ from the scopes asked for).
    pub scope: Option<ScopeSet>,
    /// The reference service's extra fields of an exchange: account_id, uid.
    pub person: Option<(AccountId, Uid)>,
    /// A rotation's retry answered with no write of its own to carry its event: its app,
    /// subject and grant, for the reply's `refresh_token_retried`
    /// ([`Reply::audit`](crate::Reply::audit)).
    pub retried: Option<(AppKey, Subject, GrantId)>,
    /// A token exchange's answer (RFC 8693 §2.2.1): it names the type of the token issued.
    pub exchanged: bool,
    /// Its access token is bound to the key of the request's DPoP proof (`token_type: DPoP`).
    pub bound: bool,
}

/// How a request ends, before it is written out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    Refused(Refusal, Via),
    SignIn {
        return_to: String,
    },
    /// Boxed: the largest ending by far.
    Consent(Box<ConsentPage>),
    Redirect(String),
    DisplayCode {
        app: AppKey,
        app_name: String,
        code: AuthorizationCode,
    },
    Tokens(Box<TokenBody>),
    /// A revocation is done.
    Revoked(Revocation),
    Unlinked,
    Serve(Principal),
    /// A CORS preflight that is allowed.
    Preflight(Preflight),
    /// The host's credential check may go ahead.
    AttemptsAllowed,
    /// A request to the authorization server metadata (standards profile).
    Metadata(Metadata),
    /// A method the endpoint does not take: 405, with what it takes.
    WrongMethod(Endpoint),
    /// RFC 7662: a live token's content, or `None` (inactive).
    Introspection(Option<Box<Introspected>>),
    /// RFC 7591: a client registered; RFC 7592: its information read or replaced.
    Registered(Box<Registered>),
    /// RFC 7592: a registered client deleted.
    Unregistered,
}

/// A client just registered (RFC 7591 §3.2.1): its record, and the credentials minted for it,
/// which the answer hands over once and nothing keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Registered {
    pub record: AppRecord,
    pub secret: Option<ClientSecret>,
    pub token: RegistrationToken,
    /// Registered now (`201`), or read or replaced (`200`).
    pub created: bool,
}

/// What introspection tells of a live token (RFC 7662 §2.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Introspected {
    pub app: AppKey,
    /// Whom it acts for: its `sub` (RFC 7662 §2.2) is the person's account id, or the
    /// client's own id.
    pub subject: Subject,
    pub scopes: ScopeSet,
    pub expires_at: Option<UnixTime>,
    /// An access token (`token_type: bearer`), or a refresh token.
    pub access_token: bool,
    /// The resources it is for (RFC 8707); empty: none named.
    pub audience: Resources,
    /// The client an exchanged token was issued to (RFC 8693), its `client_id` then, and
    /// whether it acts (`act`).
    pub exchanged_by: Option<(AppKey, bool)>,
    /// The key a bound access token is good with (DPoP: `cnf.jkt`).
    pub bound_to: Option<KeyThumbprint>,
}

/// The consent page's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConsentPage {
    pub prompt: ConsentPrompt,
    /// The authorization request's query, for the form's hidden field.
    pub query: String,
    pub user: User,
}

/// Which revocation is done: each endpoint answers in its own form, with one outcome
/// ([`Outcome::Revoked`](crate::Outcome::Revoked)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Revocation {
    /// The reference endpoint: the grant of a token of this app ended (body `null`).
    Grant(AppKey),
    /// RFC 7009: done, or nothing to do — the answer is the same (empty body).
    Standard,
}
