//! The core against a reference model: random sequences of operations by two users on two apps
//! (the public PKCE app and the confidential app), with the clock moved in jumps that land on
//! the expiry boundaries, interleaved with garbage input. After every operation every issued
//! credential is checked against the model.
//!
//! Invariants: (1) a code yields tokens at most once; (2) an access token is accepted exactly
//! while it is unexpired and its grant is neither revoked (revoke endpoint, code reuse) nor
//! unlinked, a refresh token works exactly while its grant stands, a code is redeemable exactly
//! while unused, unexpired and not unlinked; (3) `refresh_token` appears in a code exchange's
//! response iff offline was requested, never in a refresh response; (4) the core never panics
//! nor answers `Err(Misuse)`; (5) every token response is `bearer`, its access token starts with
//! `sl.`, and it names the consenting user.
//!
//! Covered (SPEC.md):
//! - "What the service does" 2–6 and "Access modes": code flow online and offline, PKCE for the
//!   public app, the app secret for the confidential one.
//! - "Token response (code exchange)": `token_type` bearer, `account_id`/`uid` of the consenting
//!   user, `scope`, `expires_in`, and `refresh_token` exactly when offline was requested.
//! - "Token response (refresh grant)": no `refresh_token`; the existing one stays valid.
//! - "States and transitions", every row: a code is used once and expires (600 s, valid while
//!   `now < expires_at`); any further exchange of a used code fails (and, by the right client,
//!   revokes what the code produced); an access token expires (14 400 s) or is revoked by the
//!   revoke endpoint or by an unlink of the user or a team admin; a refresh token stays active
//!   when used, works only for its own app and secret, ends with revocation or unlink, and never
//!   expires by time.
//! - Endpoints 1–5: authorization (a signed-in user's re-authorization of what they granted
//!   completes at once with a code, any other request shows the consent page, no user the
//!   sign-in page), code exchange (secret in the body or as HTTP Basic, `code_verifier`, the
//!   `redirect_uri` consistency rule), refresh, API calls with their Required Scope, revoke (the
//!   whole grant: the token, its refresh token and every access token refreshed from it).
//! - "Authentication" 1, 3–6, and "Credentials and artifacts": codes, access tokens and refresh
//!   tokens are not interchangeable, and a credential changed by one character is worthless.
//! - "Errors" 1–4: 401 for an invalid, expired or revoked token (403 for a missing scope), each
//!   with its exact reason ([`Refusal`]); a wrong app or secret fails a refresh; reuse, expiry
//!   or `redirect_uri` inconsistency never yields tokens.
//! - The calling contract (crate docs): no input, however hostile, panics the core or makes it
//!   answer `Err(Misuse)`, and a refused request writes nothing (garbage writes only when it
//!   happens to be a well-formed re-authorization of what the user granted).
//!
//! The simulated store never purges, so a redeemed code can be reused (and revoke its grant) at
//! any later time.

use std::sync::Arc;

use edgegrant::*;
use edgegrant_tests::explorer::http_input;
use edgegrant_tests::*;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

/// Proptest cases per run.
const CASES: u32 = 256;
/// The longest operation sequence.
const MAX_OPS: usize = 40;
/// The default code lifetime (Policy::code_ttl).
const CODE_TTL: u64 = 600;
/// The default access-token lifetime (Policy::access_token_ttl).
const ACCESS_TTL: u64 = 14_400;
/// The `state` of every authorization request.
const STATE: &str = "st8";
/// A well-formed verifier that does not match [`CHALLENGE`].
const OTHER_VERIFIER: &str = "wrongVerifier-0123456789-abcdefghijklmnopqrstuvwxyz";
/// Not the confidential app's secret.
const WRONG_SECRET: &str = "conf-secret-0123456788";
/// The two users.
const USERS: usize = 2;

// ---- the world the operations act on ----------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AppId {
    Pkce,
    Conf,
}

impl AppId {
    fn key(self) -> &'static str {
        match self {
            AppId::Pkce => PKCE_APP,
            AppId::Conf => CONF_APP,
        }
    }

    fn app_key(self) -> AppKey {
        AppKey::new(self.key()).unwrap()
    }

    fn redirect(self) -> &'static str {
        match self {
            AppId::Pkce => PKCE_REDIRECT,
            AppId::Conf => CONF_REDIRECT,
        }
    }

    fn index(self) -> usize {
        match self {
            AppId::Pkce => 0,
            AppId::Conf => 1,
        }
    }

    fn other(self) -> AppId {
        match self {
            AppId::Pkce => AppId::Conf,
            AppId::Conf => AppId::Pkce,
        }
    }

    /// The scopes configured for the app, sorted.
    fn scopes(self) -> &'static [&'static str] {
        match self {
            AppId::Pkce => &["account_info.read", "files.metadata.read"],
            AppId::Conf => &[
                "account_info.read",
                "files.content.read",
                "files.content.write",
            ],
        }
    }

    /// How the app's real client proves itself at the token endpoint, as body parameters:
    /// `client_id` and the secret, or `client_id` alone (then PKCE or the grant must do).
    fn body_credentials(self) -> Vec<(&'static str, &'static str)> {
        match self {
            AppId::Pkce => vec![("client_id", PKCE_APP)],
            AppId::Conf => vec![("client_id", CONF_APP), ("client_secret", CONF_SECRET)],
        }
    }

    /// The verifier the app's real client sends with a code (the confidential app uses none).
    fn verifier(self) -> Option<&'static str> {
        (self == AppId::Pkce).then_some(VERIFIER)
    }

    /// Basic credentials: the confidential app's real ones, the public app with an empty password.
    fn basic(self) -> String {
        match self {
            AppId::Pkce => basic_header(PKCE_APP, ""),
            AppId::Conf => basic_header(CONF_APP, CONF_SECRET),
        }
    }
}

/// `token_access_type` of an authorization request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Online,
    Offline,
    /// Omitted: the app's default, short-lived (online).
    Omitted,
}

impl Access {
    fn token_access_type(self) -> TokenAccessType {
        match self {
            Access::Offline => TokenAccessType::Offline,
            Access::Online | Access::Omitted => TokenAccessType::Online,
        }
    }
}

/// An API endpoint of the fixture configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    GetAccount,
    ListFolder,
    Upload,
}

impl Endpoint {
    fn path(self) -> &'static str {
        match self {
            Endpoint::GetAccount => GET_ACCOUNT,
            Endpoint::ListFolder => LIST_FOLDER,
            Endpoint::Upload => UPLOAD,
        }
    }

    fn required_scope(self) -> &'static str {
        match self {
            Endpoint::GetAccount => "account_info.read",
            Endpoint::ListFolder => "files.metadata.read",
            Endpoint::Upload => "files.content.write",
        }
    }
}

/// How a client presents a code at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ExchangeHow {
    /// The code's own app, credentials in the body, the right verifier and `redirect_uri`.
    Correct,
    /// As `Correct`, but the credentials as HTTP Basic (the public app: empty password).
    Basic,
    /// A verifier that does not match (confidential app: a verifier for a challenge-less code).
    WrongVerifier,
    /// `client_id` only: no secret and no verifier.
    NoVerifier,
    /// The other app, with its own real credentials.
    WrongApp,
    /// `redirect_uri` sent when it was not at authorization, or left out when it was.
    WrongRedirect,
    /// A wrong `client_secret` (the public app has none at all).
    WrongSecret,
}

impl ExchangeHow {
    /// Whether the exchange is by the code's own client with everything matching the code.
    fn matches(self) -> bool {
        match self {
            // The public app over Basic has an empty password: it names itself, and its
            // verifier proves it.
            ExchangeHow::Correct | ExchangeHow::Basic => true,
            _ => false,
        }
    }
}

/// How a client presents a refresh token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefreshHow {
    /// The token's own app: `client_id` and secret, or `client_id` alone for the PKCE app.
    Correct,
    /// The token's own app as HTTP Basic (the public app: empty password).
    Basic,
    /// The other app with its own real credentials.
    WrongApp,
    /// `client_id` alone (fine only for a grant that came from PKCE).
    NoSecret,
    /// A wrong `client_secret` (the public app has none at all).
    WrongSecret,
}

impl RefreshHow {
    /// Whether the request authenticates as the app the refresh token belongs to.
    fn authenticates(self, app: AppId) -> bool {
        match self {
            // An empty Basic password is no secret: the PKCE grant refreshes with client_id alone.
            RefreshHow::Correct | RefreshHow::Basic => true,
            RefreshHow::NoSecret => app == AppId::Pkce,
            RefreshHow::WrongApp | RefreshHow::WrongSecret => false,
        }
    }
}

/// Where a wrong credential is presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// As the bearer token of an API call.
    Api,
    /// As the bearer token of the revoke endpoint.
    Revoke,
    /// As the `code` of an exchange by this app's real client.
    Code(AppId),
    /// As the `refresh_token` of a refresh by this app's real client.
    Refresh(AppId),
}

/// Which kind of credential a string is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Code,
    Access,
    Refresh,
}

impl Target {
    fn kind(self) -> Kind {
        match self {
            Target::Api | Target::Revoke => Kind::Access,
            Target::Code(_) => Kind::Code,
            Target::Refresh(_) => Kind::Refresh,
        }
    }
}

/// A one-character change to a credential.
#[derive(Clone, Copy, Debug)]
enum Mutation {
    Append(char),
    DropLast,
    Replace(Index, char),
}

fn mutate(text: &str, mutation: Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    match mutation {
        Mutation::Append(c) => chars.push(c),
        Mutation::DropLast => {
            chars.pop();
        }
        Mutation::Replace(at, c) => {
            let i = at.index(chars.len());
            chars[i] = match (chars[i] == c, c == 'A') {
                (false, _) => c,
                (true, false) => 'A',
                (true, true) => 'B',
            };
        }
    }
    // Every arm changes the text: a credential is never empty, and a replacement differs.
    chars.into_iter().collect()
}

/// Hostile or meaningless input.
#[derive(Clone, Debug)]
enum Garbage {
    /// `GET /oauth2/authorize` with a random or half-valid query.
    Authorize { query: String, user: Option<usize> },
    /// A consent decision for a query naming no registered app.
    Consent {
        query: String,
        user: usize,
        decision: Decision,
    },
    /// A token request with any method, content type, Authorization header and body bytes.
    TokenRaw {
        method: String,
        content_type: Option<String>,
        authorization: Option<String>,
        body: Vec<u8>,
    },
    /// A well-formed token form of known names and values, none of them a real code or token.
    TokenForm {
        pairs: Vec<(String, String)>,
        basic: bool,
    },
    /// An API or revoke call with any Authorization header.
    Bearer { header: String, revoke: bool },
    /// A real credential changed by one character.
    Mutated {
        pick: Index,
        mutation: Mutation,
        target: Target,
    },
    /// A real credential of another kind than the target expects.
    CrossUse { pick: Index, target: Target },
    /// A real access token sent in two Authorization headers.
    DoubledBearer { pick: Index, revoke: bool },
}

#[derive(Clone, Debug)]
enum Op {
    Authorize {
        app: AppId,
        user: usize,
        signed_in: bool,
        access: Access,
        redirect: bool,
    },
    Consent {
        app: AppId,
        user: usize,
        access: Access,
        redirect: bool,
        allow: bool,
    },
    /// Exchange an issued code: any, or the newest one not yet redeemed when `fresh`.
    Exchange {
        code: Index,
        fresh: bool,
        how: ExchangeHow,
    },
    Refresh {
        grant: Index,
        how: RefreshHow,
    },
    Api {
        token: Index,
        endpoint: Endpoint,
    },
    Revoke {
        token: Index,
    },
    Unlink {
        app: AppId,
        user: usize,
        by: Unlinker,
    },
    Advance(u64),
    /// Move the clock to `offset` seconds from the expiry of an issued code or access token.
    AdvanceToExpiry {
        target: Index,
        offset: i8,
    },
    Garbage(Garbage),
}

// ---- the reference model ----------------------------------------------------------------------

#[derive(Debug)]
struct CodeEntry {
    code: String,
    app: AppId,
    user: usize,
    offline: bool,
    redirect: bool,
    expires_at: u64,
    epoch: u64,
    /// The grant its one successful exchange produced.
    grant: Option<usize>,
    /// 200 responses observed for it on the real store.
    successes: u32,
}

#[derive(Debug)]
struct GrantEntry {
    app: AppId,
    user: usize,
    epoch: u64,
    /// Ended by the revoke endpoint or by a reuse of its code.
    revoked: bool,
    refresh: Option<String>,
}

#[derive(Debug)]
struct TokenEntry {
    token: String,
    grant: usize,
    expires_at: u64,
    /// The link epoch of its app and user when it was minted.
    epoch: u64,
}

#[derive(Debug, Default)]
struct Model {
    now: u64,
    /// Unlinks so far, by app and user.
    epochs: [[u64; USERS]; 2],
    /// Consented since the last unlink, by app and user.
    consented: [[bool; USERS]; 2],
    /// Consented to offline access since the last unlink, by app and user (online consent does
    /// not cover a later offline request).
    consented_offline: [[bool; USERS]; 2],
    /// Ever consented (the core then holds a link record), by app and user.
    linked: [[bool; USERS]; 2],
    codes: Vec<CodeEntry>,
    grants: Vec<GrantEntry>,
    tokens: Vec<TokenEntry>,
}

impl Model {
    fn epoch(&self, app: AppId, user: usize) -> u64 {
        self.epochs[app.index()][user]
    }

    fn grant_live(&self, g: usize) -> bool {
        let grant = &self.grants[g];
        !grant.revoked && grant.epoch == self.epoch(grant.app, grant.user)
    }

    fn token_expired(&self, t: usize) -> bool {
        self.now >= self.tokens[t].expires_at
    }

    fn token_live(&self, t: usize) -> bool {
        let token = &self.tokens[t];
        let grant = &self.grants[token.grant];
        !self.token_expired(t)
            && self.grant_live(token.grant)
            && token.epoch == self.epoch(grant.app, grant.user)
    }

    /// Whether the code's own client can still redeem it.
    fn code_redeemable(&self, c: usize) -> bool {
        let code = &self.codes[c];
        code.grant.is_none()
            && self.now < code.expires_at
            && code.epoch == self.epoch(code.app, code.user)
    }

    /// Every credential issued so far, with its kind.
    fn credentials(&self) -> Vec<(Kind, &str)> {
        let codes = self.codes.iter().map(|c| (Kind::Code, c.code.as_str()));
        let access = self.tokens.iter().map(|t| (Kind::Access, t.token.as_str()));
        let refresh = self
            .grants
            .iter()
            .filter_map(|g| g.refresh.as_deref().map(|r| (Kind::Refresh, r)));
        codes.chain(access).chain(refresh).collect()
    }
}

fn pick(index: &Index, len: usize) -> Option<usize> {
    (len > 0).then(|| index.index(len))
}

// ---- requests -----------------------------------------------------------------------------------

fn authorization_query(app: AppId, access: Access, redirect: bool) -> String {
    let mut pairs = vec![("client_id", app.key()), ("response_type", "code")];
    if redirect {
        pairs.push(("redirect_uri", app.redirect()));
    }
    match access {
        Access::Online => pairs.push(("token_access_type", "online")),
        Access::Offline => pairs.push(("token_access_type", "offline")),
        Access::Omitted => {}
    }
    if app == AppId::Pkce {
        pairs.extend([
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
        ]);
    }
    pairs.push(("state", STATE));
    query(&pairs)
}

fn with_authorization(mut request: HttpRequest, value: String) -> HttpRequest {
    request.headers.push(("Authorization".into(), value));
    request
}

/// An exchange of `code`, issued to `app` with or without a `redirect_uri`.
fn exchange_request(code: &str, app: AppId, with_redirect: bool, how: ExchangeHow) -> HttpRequest {
    let mut pairs = vec![("grant_type", "authorization_code"), ("code", code)];
    let mut redirect = with_redirect.then_some(app.redirect());
    let mut basic = None;
    match how {
        ExchangeHow::Correct => {
            pairs.extend(app.body_credentials());
            pairs.extend(app.verifier().map(|v| ("code_verifier", v)));
        }
        ExchangeHow::Basic => {
            basic = Some(app.basic());
            pairs.extend(app.verifier().map(|v| ("code_verifier", v)));
        }
        ExchangeHow::WrongVerifier => {
            pairs.extend(app.body_credentials());
            let verifier = match app {
                AppId::Pkce => OTHER_VERIFIER,
                AppId::Conf => VERIFIER,
            };
            pairs.push(("code_verifier", verifier));
        }
        ExchangeHow::NoVerifier => pairs.push(("client_id", app.key())),
        ExchangeHow::WrongApp => {
            let other = app.other();
            pairs.extend(other.body_credentials());
            pairs.extend(other.verifier().map(|v| ("code_verifier", v)));
            redirect = with_redirect.then_some(other.redirect());
        }
        ExchangeHow::WrongRedirect => {
            pairs.extend(app.body_credentials());
            pairs.extend(app.verifier().map(|v| ("code_verifier", v)));
            redirect = (!with_redirect).then_some(app.redirect());
        }
        ExchangeHow::WrongSecret => {
            pairs.extend([("client_id", app.key()), ("client_secret", WRONG_SECRET)]);
            pairs.extend(app.verifier().map(|v| ("code_verifier", v)));
        }
    }
    pairs.extend(redirect.map(|r| ("redirect_uri", r)));
    let request = form_request(&pairs);
    match basic {
        Some(value) => with_authorization(request, value),
        None => request,
    }
}

/// A refresh with `token`, issued to `app`.
fn refresh_request(token: &str, app: AppId, how: RefreshHow) -> HttpRequest {
    let mut pairs = vec![("grant_type", "refresh_token"), ("refresh_token", token)];
    match how {
        RefreshHow::Correct => pairs.extend(app.body_credentials()),
        RefreshHow::Basic => return with_authorization(form_request(&pairs), app.basic()),
        RefreshHow::WrongApp => pairs.extend(app.other().body_credentials()),
        RefreshHow::NoSecret => pairs.push(("client_id", app.key())),
        RefreshHow::WrongSecret => {
            pairs.extend([("client_id", app.key()), ("client_secret", WRONG_SECRET)]);
        }
    }
    form_request(&pairs)
}

/// A refusal: an error status, never a success, a reason, and (checked by the callers)
/// nothing written.
fn assert_refused(answer: &Answer, what: &str) {
    let response = answer.response();
    assert!(
        matches!(response.status, 400 | 401),
        "{what}: expected a 400 or 401 refusal, got {} {}",
        response.status,
        response.body
    );
    assert!(answer.refusal().is_some(), "{what}: {answer:?}");
}

/// The `data-<name>` attribute of a page.
fn page_data(body: &str, name: &str) -> Option<String> {
    let start = body.find(&format!(" data-{name}=\""))? + name.len() + 8;
    let end = body[start..].find('"')?;
    Some(body[start..start + end].to_owned())
}

/// The error code of an error page (400, HTML, no redirect).
fn page_error(answer: &Answer, what: &str) -> String {
    let response = answer.response();
    assert_eq!(response.status, 400, "{what}: {answer:?}");
    assert_eq!(response.header("Location"), None, "{what}");
    assert_eq!(page_data(&response.body, "page").as_deref(), Some("error"));
    page_data(&response.body, "error").unwrap_or_else(|| panic!("{what}: {}", response.body))
}

/// The `Location` of a 302.
fn location(answer: &Answer, what: &str) -> String {
    let response = answer.response();
    assert_eq!(response.status, 302, "{what}: {answer:?}");
    response
        .header("Location")
        .unwrap_or_else(|| panic!("{what}: no Location"))
        .to_owned()
}

fn authorize_request(query: &str) -> HttpRequest {
    HttpRequest::new("GET", "/oauth2/authorize", query)
}

/// Invariant 5 (and `expires_in`) on any 200 token response.
fn check_bearer_fields(body: &Value) {
    assert_eq!(body["token_type"], "bearer", "{body}");
    let access = body["access_token"].as_str().unwrap_or_default();
    assert!(access.starts_with("sl."), "access_token {access:?}: {body}");
    assert_eq!(body["expires_in"], ACCESS_TTL, "{body}");
}

// ---- the interpreter ----------------------------------------------------------------------------

struct World {
    config: Arc<Config>,
    store: Store,
    seed: u64,
    users: [User; USERS],
    model: Model,
}

impl World {
    fn new() -> Self {
        World {
            config: Arc::new(fixture_config()),
            store: Store::default(),
            seed: 0,
            users: [alice(), bob()],
            model: Model {
                now: T0.0,
                ..Model::default()
            },
        }
    }

    /// Runs `input` to its answer on the real store or on `scratch`, with fresh entropy.
    /// Returns the answer and whether a transaction was applied. Invariant 4: `Err` fails.
    fn exec(&mut self, input: &Input, scratch: Option<&mut Store>) -> (Answer, bool) {
        let (answer, committed, _) = self.exec_audited(input, scratch);
        (answer, committed)
    }

    /// [`Self::exec`], with the audit events of the applied transaction.
    fn exec_audited(
        &mut self,
        input: &Input,
        scratch: Option<&mut Store>,
    ) -> (Answer, bool, Vec<AuditEvent>) {
        self.seed += 1;
        let store = match scratch {
            Some(store) => store,
            None => &mut self.store,
        };
        let now = UnixTime(self.model.now);
        let mut request =
            edgegrant_tests::Request::new(&self.config, input.clone(), now, entropy(self.seed));
        match request.run(store, 16) {
            Ok(Progress::Done {
                answer,
                committed,
                audit,
            }) => (answer, committed, audit),
            Ok(progress) => panic!("{input:?} did not finish: {progress:?}"),
            Err(misuse) => panic!("the core answered Err({misuse}) to {input:?}"),
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Authorize {
                app,
                user,
                signed_in,
                access,
                redirect,
            } => self.authorize(*app, *user, *signed_in, *access, *redirect),
            Op::Consent {
                app,
                user,
                access,
                redirect,
                allow,
            } => self.consent(*app, *user, *access, *redirect, *allow),
            Op::Exchange { code, fresh, how } => {
                let codes = &self.model.codes;
                let c = if *fresh {
                    codes.iter().rposition(|c| c.grant.is_none())
                } else {
                    pick(code, codes.len())
                };
                if let Some(c) = c {
                    self.exchange(c, *how, None);
                }
            }
            Op::Refresh { grant, how } => {
                let with_refresh: Vec<usize> = (0..self.model.grants.len())
                    .filter(|&g| self.model.grants[g].refresh.is_some())
                    .collect();
                if let Some(i) = pick(grant, with_refresh.len()) {
                    self.refresh(with_refresh[i], *how, None);
                }
            }
            Op::Api { token, endpoint } => {
                if let Some(t) = pick(token, self.model.tokens.len()) {
                    self.api(t, *endpoint);
                }
            }
            Op::Revoke { token } => {
                if let Some(t) = pick(token, self.model.tokens.len()) {
                    self.revoke(t);
                }
            }
            Op::Unlink { app, user, by } => self.unlink(*app, *user, *by),
            Op::Advance(seconds) => self.model.now += seconds,
            Op::AdvanceToExpiry { target, offset } => {
                let expiries: Vec<u64> = self
                    .model
                    .codes
                    .iter()
                    .map(|c| c.expires_at)
                    .chain(self.model.tokens.iter().map(|t| t.expires_at))
                    .collect();
                if let Some(i) = pick(target, expiries.len()) {
                    let at = expiries[i].saturating_add_signed(i64::from(*offset));
                    self.model.now = self.model.now.max(at);
                }
            }
            Op::Garbage(garbage) => self.garbage(garbage),
        }
    }

    fn authorize(
        &mut self,
        app: AppId,
        user: usize,
        signed_in: bool,
        access: Access,
        redirect: bool,
    ) {
        let query = authorization_query(app, access, redirect);
        let input = Input::Http {
            request: authorize_request(&query),
            user: signed_in.then(|| self.users[user].clone()),
        };
        let (answer, committed, audit) = self.exec_audited(&input, None);
        let what = format!(
            "authorize {app:?} {access:?} (redirect: {redirect}) for user {user} (signed in: {signed_in})"
        );
        if !signed_in {
            assert!(!committed, "{what}: the sign-in page must not write");
            assert_eq!(
                answer.outcome(),
                &Outcome::SignIn {
                    return_to: format!("/oauth2/authorize?{query}")
                },
                "{what}"
            );
            return;
        }
        let granted = self.model.consented[app.index()][user]
            && (access != Access::Offline || self.model.consented_offline[app.index()][user]);
        if granted {
            // Re-authorization: it completes at once, as the consent page's Allow would.
            self.issued(
                app, user, access, redirect, &answer, committed, &audit, &what,
            );
            return;
        }
        assert!(!committed, "{what}: the consent page must not write");
        let Outcome::Consent(prompt) = answer.outcome() else {
            panic!("{what}: expected the consent page, got {answer:?}");
        };
        assert_eq!(prompt.app, app.app_key());
        assert_eq!(prompt.access_type, access.token_access_type());
        assert_eq!(prompt.scopes.to_string(), app.scopes().join(" "));
        assert_eq!(
            prompt.redirect_uri.as_ref().map(RedirectUri::as_str),
            redirect.then_some(app.redirect())
        );
        assert_eq!(answer.response().status, 200, "{what}");
        assert_eq!(
            page_data(&answer.response().body, "page").as_deref(),
            Some("consent"),
            "{what}"
        );
    }

    fn consent(&mut self, app: AppId, user: usize, access: Access, redirect: bool, allow: bool) {
        let decision = if allow {
            Decision::Allow
        } else {
            Decision::Deny
        };
        let input = Input::Http {
            request: consent_form(&authorization_query(app, access, redirect), decision),
            user: Some(self.users[user].clone()),
        };
        let (answer, committed, audit) = self.exec_audited(&input, None);
        let what = format!(
            "consent {decision:?} to {app:?} {access:?} (redirect: {redirect}) by user {user}"
        );
        if !allow {
            assert!(!committed, "{what}: a denial must not write");
            assert_eq!(
                answer.refusal(),
                Some(&Refusal::AccessDenied),
                "{what}: {answer:?}"
            );
            if redirect {
                let location = location(&answer, &what);
                assert!(
                    location.starts_with(&format!("{}?", app.redirect())),
                    "{location}"
                );
                assert_eq!(
                    redirect_param(&location, "error").as_deref(),
                    Some("access_denied")
                );
                assert_eq!(redirect_param(&location, "code"), None, "{location}");
                assert_eq!(redirect_param(&location, "state").as_deref(), Some(STATE));
            } else {
                assert_eq!(page_error(&answer, &what), "access_denied");
            }
            return;
        }
        self.issued(
            app, user, access, redirect, &answer, committed, &audit, &what,
        );
    }

    /// A code was issued (the consent's Allow, or a re-authorization): the answer carries it,
    /// the write stored it, the audit says so; the model records it and the consent.
    #[allow(clippy::too_many_arguments)]
    fn issued(
        &mut self,
        app: AppId,
        user: usize,
        access: Access,
        redirect: bool,
        answer: &Answer,
        committed: bool,
        audit: &[AuditEvent],
        what: &str,
    ) {
        assert!(committed, "{what}: the code must be stored");
        let [AuditEvent::CodeIssued {
            app: audited_app,
            account_id,
            scopes,
            access_type,
            ..
        }] = audit
        else {
            panic!("{what}: audit {audit:?}")
        };
        assert_eq!(audited_app, &app.app_key(), "{what}");
        assert_eq!(account_id, &self.users[user].account_id, "{what}");
        assert_eq!(scopes.to_string(), app.scopes().join(" "), "{what}");
        assert_eq!(*access_type, access.token_access_type(), "{what}");
        let code = match answer.outcome() {
            Outcome::Redirect(location) if redirect => {
                assert!(
                    location.starts_with(&format!("{}?", app.redirect())),
                    "{location}"
                );
                assert_eq!(answer.response().status, 302, "{what}");
                assert_eq!(redirect_param(location, "state").as_deref(), Some(STATE));
                redirect_param(location, "code").unwrap_or_else(|| panic!("no code: {location}"))
            }
            Outcome::DisplayCode { app: shown, code } if !redirect => {
                assert_eq!(shown, &app.app_key());
                assert_eq!(answer.response().status, 200, "{what}");
                code.expose().to_owned()
            }
            _ => panic!("{what}: expected a code, got {answer:?}"),
        };
        let model = &mut self.model;
        model.codes.push(CodeEntry {
            code,
            app,
            user,
            offline: access == Access::Offline,
            redirect,
            expires_at: model.now + CODE_TTL,
            epoch: model.epoch(app, user),
            grant: None,
            successes: 0,
        });
        model.consented[app.index()][user] = true;
        model.consented_offline[app.index()][user] |= access == Access::Offline;
        model.linked[app.index()][user] = true;
    }

    /// Invariants 3 and 5 on a code exchange's 200 response.
    fn check_exchange_body(&self, c: usize, body: &Value) {
        let code = &self.model.codes[c];
        let user = &self.users[code.user];
        check_bearer_fields(body);
        assert_eq!(body["account_id"], user.account_id.as_str(), "{body}");
        assert_eq!(body["uid"], user.uid.as_str(), "{body}");
        assert_eq!(
            body.get("refresh_token").is_some(),
            code.offline,
            "refresh_token iff offline was requested: {body}"
        );
        let mut scopes: Vec<&str> = body["scope"]
            .as_str()
            .unwrap_or_default()
            .split(' ')
            .collect();
        scopes.sort_unstable();
        assert_eq!(scopes, code.app.scopes(), "{body}");
    }

    /// Exchanges code `c`. On `scratch` (a probe), the model is checked but not updated.
    fn exchange(&mut self, c: usize, how: ExchangeHow, scratch: Option<&mut Store>) {
        let real = scratch.is_none();
        let code = &self.model.codes[c];
        let input = http_input(exchange_request(&code.code, code.app, code.redirect, how));
        let (answer, committed) = self.exec(&input, scratch);
        let response = answer.response().clone();
        let body = (response.status == 200).then(|| json(&response));
        if body.is_some() {
            assert_eq!(answer.outcome(), &Outcome::Tokens);
        }
        if let Some(body) = &body {
            self.check_exchange_body(c, body);
            if real {
                let code = &mut self.model.codes[c];
                code.successes += 1;
                assert!(
                    code.successes <= 1,
                    "code {c} yielded tokens {} times",
                    code.successes
                );
            }
        }
        let code = &self.model.codes[c];
        let what = format!(
            "exchange {how:?} of code {c} {code:?} at {}",
            self.model.now
        );
        match (how.matches(), code.grant) {
            (true, Some(g)) => {
                // Reuse by the right client: refused, and the grant it produced ends.
                assert_eq!(response.status, 400, "{what}: {}", response.body);
                assert_eq!(oauth_error(&response), "invalid_grant", "{what}");
                assert_eq!(answer.refusal(), Some(&Refusal::CodeReused), "{what}");
                assert_eq!(
                    committed, !self.model.grants[g].revoked,
                    "{what}: revocation write"
                );
                if real {
                    self.model.grants[g].revoked = true;
                }
            }
            (true, None) if self.model.code_redeemable(c) => {
                let body = body.unwrap_or_else(|| panic!("{what}: got {}", response.body));
                assert!(committed, "{what}: the redemption must be stored");
                if real {
                    self.redeem(c, &body);
                }
            }
            _ => {
                assert_refused(&answer, &what);
                assert!(!committed, "{what}: a refusal must not write");
            }
        }
    }

    /// The model side of a successful exchange of code `c`.
    fn redeem(&mut self, c: usize, body: &Value) {
        let model = &mut self.model;
        let (app, user, epoch) = {
            let code = &model.codes[c];
            (code.app, code.user, code.epoch)
        };
        let g = model.grants.len();
        model.grants.push(GrantEntry {
            app,
            user,
            epoch,
            revoked: false,
            refresh: body["refresh_token"].as_str().map(str::to_owned),
        });
        model.codes[c].grant = Some(g);
        model.tokens.push(TokenEntry {
            token: body["access_token"].as_str().unwrap().to_owned(),
            grant: g,
            expires_at: model.now + ACCESS_TTL,
            epoch,
        });
    }

    /// Refreshes grant `g`. On `scratch` (a probe), the model is checked but not updated.
    fn refresh(&mut self, g: usize, how: RefreshHow, scratch: Option<&mut Store>) {
        let real = scratch.is_none();
        let grant = &self.model.grants[g];
        let (app, user) = (grant.app, grant.user);
        let token = grant.refresh.clone().expect("an offline grant");
        let input = http_input(refresh_request(&token, app, how));
        let (answer, committed) = self.exec(&input, scratch);
        let response = answer.response().clone();
        let what = format!(
            "refresh {how:?} of grant {g} {:?} at {}",
            self.model.grants[g], self.model.now
        );
        if response.status == 200 {
            let body = json(&response);
            check_bearer_fields(&body);
            assert!(body.get("refresh_token").is_none(), "{what}: {body}");
        }
        if how.authenticates(app) && self.model.grant_live(g) {
            assert_eq!(response.status, 200, "{what}: {}", response.body);
            assert_eq!(answer.outcome(), &Outcome::Tokens, "{what}");
            assert!(committed, "{what}: the new token must be stored");
            if real {
                let token = json(&response)["access_token"].as_str().unwrap().to_owned();
                let model = &mut self.model;
                model.tokens.push(TokenEntry {
                    token,
                    grant: g,
                    expires_at: model.now + ACCESS_TTL,
                    epoch: model.epoch(app, user),
                });
            }
        } else {
            assert_refused(&answer, &what);
            assert!(!committed, "{what}: a refusal must not write");
        }
    }

    /// Why a bearer check refuses token `t`, which the model has dead: the core checks its
    /// expiry first, then its grant's revocation, then the link's epoch.
    fn bearer_refusal(&self, t: usize) -> Refusal {
        let grant = &self.model.grants[self.model.tokens[t].grant];
        if self.model.token_expired(t) {
            Refusal::AccessTokenExpired
        } else if grant.revoked {
            Refusal::AccessTokenRevoked
        } else {
            Refusal::AccessTokenUnlinked
        }
    }

    /// Invariant 2: an API call with token `t` is authorized exactly when the model has it live.
    fn api(&mut self, t: usize, endpoint: Endpoint) {
        let input = http_input(bearer_request(endpoint.path(), &self.model.tokens[t].token));
        let (answer, committed) = self.exec(&input, None);
        assert!(!committed, "an API call must not write");
        let model = &self.model;
        let entry = &model.tokens[t];
        let grant = &model.grants[entry.grant];
        let live = model.token_live(t);
        let has_scope = grant.app.scopes().contains(&endpoint.required_scope());
        let what = format!(
            "{endpoint:?} with token {t} {entry:?} of grant {grant:?} at {} (epoch {})",
            model.now,
            model.epoch(grant.app, grant.user)
        );
        match answer {
            Answer::Serve(Authorized { principal, .. }) => {
                assert!(live, "{what}: authorized, but the model has the token dead");
                assert!(has_scope, "{what}: authorized without the Required Scope");
                let user = &self.users[grant.user];
                assert_eq!(principal.app, grant.app.app_key(), "{what}");
                assert_eq!(
                    principal.subject,
                    Subject::Account(user.account_id.clone()),
                    "{what}"
                );
                assert_eq!(principal.uid.as_ref(), Some(&user.uid), "{what}");
                assert_eq!(
                    principal.expires_at,
                    Some(UnixTime(entry.expires_at)),
                    "{what}"
                );
            }
            Answer::Reply(reply) if live => {
                let response = &reply.response;
                assert!(
                    !has_scope,
                    "{what}: refused a live token: {}",
                    response.body
                );
                assert_eq!(response.status, 403, "{what}: {}", response.body);
                let required = Scope::new(endpoint.required_scope()).unwrap();
                assert_eq!(
                    reply.refusal(),
                    Some(&Refusal::MissingScope(required)),
                    "{what}"
                );
            }
            Answer::Reply(reply) => {
                let response = &reply.response;
                assert_eq!(response.status, 401, "{what}: {}", response.body);
                let tag = if model.token_expired(t) {
                    "expired_access_token"
                } else {
                    "invalid_access_token"
                };
                assert_eq!(api_tag(response), tag, "{what}");
                assert_eq!(reply.refusal(), Some(&self.bearer_refusal(t)), "{what}");
            }
        }
    }

    fn revoke(&mut self, t: usize) {
        let input = http_input(bearer_request(REVOKE, &self.model.tokens[t].token));
        let (answer, committed) = self.exec(&input, None);
        let response = answer.response();
        let live = self.model.token_live(t);
        let what = format!(
            "revoke with token {t} {:?} at {}",
            self.model.tokens[t], self.model.now
        );
        if live {
            assert_eq!(response.status, 200, "{what}: {}", response.body);
            assert_eq!(response.body, "null", "{what}");
            assert_eq!(answer.outcome(), &Outcome::Revoked, "{what}");
            assert!(committed, "{what}: the revocation must be stored");
            let g = self.model.tokens[t].grant;
            self.model.grants[g].revoked = true;
        } else {
            assert_eq!(response.status, 401, "{what}: {}", response.body);
            assert_eq!(answer.refusal(), Some(&self.bearer_refusal(t)), "{what}");
            assert!(!committed, "{what}: a refusal must not write");
        }
    }

    fn unlink(&mut self, app: AppId, user: usize, by: Unlinker) {
        let input = Input::Unlink {
            app: app.app_key(),
            account_id: self.users[user].account_id.clone(),
            by,
        };
        let (answer, committed) = self.exec(&input, None);
        assert_eq!(answer.outcome(), &Outcome::Unlinked);
        assert_eq!(answer.response().status, 200);
        let (a, model) = (app.index(), &mut self.model);
        assert_eq!(
            committed, model.linked[a][user],
            "unlink writes iff the pair was linked"
        );
        model.epochs[a][user] += 1;
        model.consented[a][user] = false;
        model.consented_offline[a][user] = false;
    }

    /// Garbage never authorizes, never yields tokens, never writes, and yields a code only when
    /// it happens to be a well-formed re-authorization of what the signed-in user granted.
    fn garbage(&mut self, garbage: &Garbage) {
        let what = format!("{garbage:?}");
        let (answer, committed) = match garbage {
            Garbage::Authorize { query, user } => {
                let input = Input::Http {
                    request: authorize_request(query),
                    user: user.map(|u| self.users[u].clone()),
                };
                let (answer, committed, audit) = self.exec_audited(&input, None);
                let mut reauthorized = false;
                match answer.outcome() {
                    Outcome::SignIn { return_to } => {
                        assert!(user.is_none(), "{what}: a signed-in user");
                        assert_eq!(return_to, &format!("/oauth2/authorize?{query}"));
                    }
                    Outcome::Consent(_) => assert!(user.is_some(), "{what}: no user"),
                    Outcome::Refused(_) if answer.response().status == 302 => {
                        let location = location(&answer, &what);
                        let error = redirect_param(&location, "error")
                            .or_else(|| fragment_param(&location, "error"));
                        assert!(error.is_some(), "{what}: {location}");
                        assert_eq!(
                            redirect_param(&location, "code"),
                            None,
                            "{what}: {location}"
                        );
                    }
                    Outcome::Refused(_) => {
                        page_error(&answer, &what);
                    }
                    Outcome::Redirect(_) | Outcome::DisplayCode { .. } => {
                        self.garbage_reauthorization(&answer, &audit, *user, &what);
                        reauthorized = true;
                    }
                    _ => panic!("{what}: got {answer:?}"),
                }
                assert_eq!(committed, reauthorized, "{what}: {answer:?}");
                return;
            }
            Garbage::Consent {
                query,
                user,
                decision,
            } => {
                let input = Input::Http {
                    request: consent_form(query, *decision),
                    user: Some(self.users[*user].clone()),
                };
                let (answer, committed) = self.exec(&input, None);
                assert!(
                    matches!(answer.outcome(), Outcome::Refused(_)),
                    "{what}: got {answer:?}"
                );
                page_error(&answer, &what);
                (answer, committed)
            }
            Garbage::TokenRaw {
                method,
                content_type,
                authorization,
                body,
            } => {
                let mut request = HttpRequest::new(method, "/oauth2/token", "");
                request.body = body.clone();
                request.headers.extend(
                    content_type
                        .iter()
                        .map(|c| ("Content-Type".into(), c.clone())),
                );
                request.headers.extend(
                    authorization
                        .iter()
                        .map(|a| ("Authorization".into(), a.clone())),
                );
                let (answer, committed) = self.exec(&http_input(request), None);
                let response = answer.response();
                assert!(
                    matches!(response.status, 400 | 401 | 405),
                    "{what}: got {} {}",
                    response.status,
                    response.body
                );
                assert!(answer.refusal().is_some(), "{what}: {answer:?}");
                (answer, committed)
            }
            Garbage::TokenForm { pairs, basic } => {
                let pairs: Vec<(&str, &str)> = pairs
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let mut request = form_request(&pairs);
                if *basic {
                    request = with_authorization(request, AppId::Conf.basic());
                }
                let (answer, committed) = self.exec(&http_input(request), None);
                assert_refused(&answer, &what);
                (answer, committed)
            }
            Garbage::Bearer { header, revoke } => {
                let request = with_authorization(HttpRequest::new("POST", "", ""), header.clone());
                let (answer, committed) = self.present_bearer(request, *revoke, &what);
                assert!(
                    matches!(
                        answer.refusal(),
                        Some(
                            Refusal::BearerMissing
                                | Refusal::MalformedBearer
                                | Refusal::UnknownAccessToken
                                | Refusal::TooLarge
                        )
                    ),
                    "{what}: {answer:?}"
                );
                (answer, committed)
            }
            Garbage::Mutated {
                pick: index,
                mutation,
                target,
            } => {
                let credentials = self.model.credentials();
                let Some(i) = pick(index, credentials.len()) else {
                    return;
                };
                let presented = mutate(credentials[i].1, *mutation);
                self.present(&presented, *target, &what)
            }
            Garbage::CrossUse {
                pick: index,
                target,
            } => {
                let credentials: Vec<String> = self
                    .model
                    .credentials()
                    .into_iter()
                    .filter(|(kind, _)| *kind != target.kind())
                    .map(|(_, text)| text.to_owned())
                    .collect();
                let Some(i) = pick(index, credentials.len()) else {
                    return;
                };
                self.present(&credentials[i], *target, &what)
            }
            Garbage::DoubledBearer {
                pick: index,
                revoke,
            } => {
                let Some(t) = pick(index, self.model.tokens.len()) else {
                    return;
                };
                let header = format!("Bearer {}", self.model.tokens[t].token);
                let request =
                    with_authorization(bearer_request("", &self.model.tokens[t].token), header);
                let (answer, committed) = self.present_bearer(request, *revoke, &what);
                assert_eq!(answer.refusal(), Some(&Refusal::MalformedBearer), "{what}");
                (answer, committed)
            }
        };
        assert!(!committed, "{what}: garbage must not write, got {answer:?}");
    }

    /// A garbage authorization request that was well-formed, by a signed-in user who had
    /// granted what it asks: re-authorized at once, exactly as the model allows.
    fn garbage_reauthorization(
        &self,
        answer: &Answer,
        audit: &[AuditEvent],
        user: Option<usize>,
        what: &str,
    ) {
        let [AuditEvent::CodeIssued {
            app,
            account_id,
            scopes,
            access_type,
            ..
        }] = audit
        else {
            panic!("{what}: a code without its audit: {audit:?}")
        };
        let app = [AppId::Pkce, AppId::Conf]
            .into_iter()
            .find(|a| a.app_key() == *app)
            .unwrap_or_else(|| panic!("{what}: re-authorized {app}, never consented to"));
        let user = user.unwrap_or_else(|| panic!("{what}: re-authorized without a user"));
        assert_eq!(account_id, &self.users[user].account_id, "{what}");
        assert!(
            self.model.consented[app.index()][user],
            "{what}: re-authorized without consent"
        );
        assert!(
            *access_type != TokenAccessType::Offline
                || self.model.consented_offline[app.index()][user],
            "{what}: offline access re-authorized after online consent only"
        );
        assert!(
            scopes.iter().all(|s| app.scopes().contains(&s)),
            "{what}: {scopes}"
        );
        match answer.outcome() {
            Outcome::Redirect(location) => {
                assert!(location.starts_with(app.redirect()), "{what}: {location}");
                assert_eq!(redirect_param(location, "error"), None, "{what}");
                assert!(redirect_param(location, "code").is_some(), "{what}");
            }
            Outcome::DisplayCode { app: shown, .. } => assert_eq!(shown, &app.app_key()),
            _ => panic!("{what}: {answer:?}"),
        }
    }

    /// Sends a request carrying a bearer credential that must not be accepted, to the account
    /// endpoint or the revoke endpoint.
    fn present_bearer(
        &mut self,
        mut request: HttpRequest,
        revoke: bool,
        what: &str,
    ) -> (Answer, bool) {
        request.path = if revoke { REVOKE } else { GET_ACCOUNT }.to_owned();
        let (answer, committed) = self.exec(&http_input(request), None);
        assert_refused(&answer, what);
        (answer, committed)
    }

    /// Presents `credential` at `target`, with the target's real client credentials: it is no
    /// credential of the kind the target takes.
    fn present(&mut self, credential: &str, target: Target, what: &str) -> (Answer, bool) {
        let (request, unknown) = match target {
            Target::Api | Target::Revoke => {
                let revoke = target == Target::Revoke;
                let (answer, committed) =
                    self.present_bearer(bearer_request("", credential), revoke, what);
                assert_eq!(
                    answer.refusal(),
                    Some(&Refusal::UnknownAccessToken),
                    "{what}"
                );
                return (answer, committed);
            }
            Target::Code(app) => (
                exchange_request(credential, app, true, ExchangeHow::Correct),
                Refusal::UnknownCode,
            ),
            Target::Refresh(app) => (
                refresh_request(credential, app, RefreshHow::Correct),
                Refusal::UnknownRefreshToken,
            ),
        };
        let (answer, committed) = self.exec(&http_input(request), None);
        assert_refused(&answer, what);
        assert_eq!(answer.refusal(), Some(&unknown), "{what}");
        (answer, committed)
    }

    /// After every operation, invariant 2 for every credential issued so far: every access token
    /// (an API call on the real store: it only reads), every refresh token and every code (a
    /// refresh or exchange by the right client on a scratch copy of the store, so the real one
    /// does not change).
    fn check_all(&mut self) {
        for t in 0..self.model.tokens.len() {
            self.api(t, Endpoint::GetAccount);
        }
        let mut scratch = self.store.clone();
        for g in 0..self.model.grants.len() {
            if self.model.grants[g].refresh.is_some() {
                self.refresh(g, RefreshHow::Correct, Some(&mut scratch));
            }
        }
        // After the refreshes: a probe reusing a redeemed code revokes its grant in `scratch`.
        for c in 0..self.model.codes.len() {
            self.exchange(c, ExchangeHow::Correct, Some(&mut scratch));
        }
    }
}

// ---- strategies ---------------------------------------------------------------------------------

fn app() -> impl Strategy<Value = AppId> {
    prop_oneof![Just(AppId::Pkce), Just(AppId::Conf)]
}

fn user() -> impl Strategy<Value = usize> {
    0..USERS
}

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![
        2 => Just(Access::Offline),
        1 => Just(Access::Online),
        1 => Just(Access::Omitted),
    ]
}

fn endpoint() -> impl Strategy<Value = Endpoint> {
    prop_oneof![
        2 => Just(Endpoint::GetAccount),
        1 => Just(Endpoint::ListFolder),
        1 => Just(Endpoint::Upload),
    ]
}

fn exchange_how() -> impl Strategy<Value = ExchangeHow> {
    prop_oneof![
        10 => Just(ExchangeHow::Correct),
        3 => Just(ExchangeHow::Basic),
        1 => Just(ExchangeHow::WrongVerifier),
        1 => Just(ExchangeHow::NoVerifier),
        1 => Just(ExchangeHow::WrongApp),
        1 => Just(ExchangeHow::WrongRedirect),
        1 => Just(ExchangeHow::WrongSecret),
    ]
}

fn refresh_how() -> impl Strategy<Value = RefreshHow> {
    prop_oneof![
        4 => Just(RefreshHow::Correct),
        1 => Just(RefreshHow::Basic),
        1 => Just(RefreshHow::WrongApp),
        1 => Just(RefreshHow::NoSecret),
        1 => Just(RefreshHow::WrongSecret),
    ]
}

/// Clock jumps: onto and around both lifetimes, and arbitrary ones.
fn advance() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => prop::sample::select(vec![
            1,
            CODE_TTL - 1,
            CODE_TTL,
            CODE_TTL + 1,
            ACCESS_TTL - 1,
            ACCESS_TTL,
            ACCESS_TTL + 1,
        ]),
        1 => 0..2 * ACCESS_TTL,
        1 => 0..10 * ACCESS_TTL,
    ]
}

const TOKEN_CHARS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn mutation() -> impl Strategy<Value = Mutation> {
    let chars: Vec<char> = TOKEN_CHARS.chars().collect();
    let character = prop::sample::select(chars);
    prop_oneof![
        character.clone().prop_map(Mutation::Append),
        Just(Mutation::DropLast),
        (any::<Index>(), character).prop_map(|(at, c)| Mutation::Replace(at, c)),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        Just(Target::Api),
        Just(Target::Revoke),
        app().prop_map(Target::Code),
        app().prop_map(Target::Refresh),
    ]
}

/// Names and values a client might send, real app credentials included — but never a real code
/// or token.
fn near_valid_pairs(
    names: &'static [&'static str],
) -> impl Strategy<Value = Vec<(String, String)>> {
    let values = vec![
        "code",
        "token",
        "authorization_code",
        "refresh_token",
        "online",
        "offline",
        "S256",
        "plain",
        PKCE_APP,
        CONF_APP,
        LEGACY_APP,
        CONF_SECRET,
        VERIFIER,
        CHALLENGE,
        PKCE_REDIRECT,
        CONF_REDIRECT,
        "account_info.read",
        "",
    ];
    let name = prop_oneof![
        4 => prop::sample::select(names.to_vec()).prop_map(str::to_owned),
        1 => "[a-z_]{0,12}",
    ];
    let value = prop_oneof![
        3 => prop::sample::select(values).prop_map(str::to_owned),
        1 => "\\PC{0,30}",
        1 => "[A-Za-z0-9_-]{32}\\.[A-Za-z0-9_-]{43}",
    ];
    prop::collection::vec((name, value), 0..9)
}

fn garbage_header() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,40}",
        any::<String>(),
        "[Bb]earer [A-Za-z0-9._~+/=-]{0,50}",
        "Bearer sl\\.[A-Za-z0-9_-]{32}\\.[A-Za-z0-9_-]{43}",
        "Basic [A-Za-z0-9+/=]{0,40}",
        "[ \t]*[Bb][Ee][Aa][Rr][Ee][Rr][ \t]*\\PC{0,20}",
    ]
}

fn garbage() -> impl Strategy<Value = Garbage> {
    let authorize_names: &'static [&'static str] = &[
        "client_id",
        "response_type",
        "redirect_uri",
        "token_access_type",
        "code_challenge",
        "code_challenge_method",
        "state",
        "scope",
    ];
    let token_names: &'static [&'static str] = &[
        "grant_type",
        "code",
        "refresh_token",
        "client_id",
        "client_secret",
        "code_verifier",
        "redirect_uri",
        "scope",
    ];
    let random_query = prop_oneof![
        "\\PC{0,60}",
        any::<String>(),
        "client_id=x[a-z-]{0,10}&\\PC{0,30}",
        Just("a".repeat(20_000)),
    ];
    let authorize_query = prop_oneof![
        random_query.clone(),
        near_valid_pairs(authorize_names).prop_map(|pairs| {
            let pairs: Vec<(&str, &str)> = pairs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            query(&pairs)
        }),
    ];
    let method = prop_oneof![
        3 => Just("POST".to_owned()),
        1 => Just("GET".to_owned()),
        1 => "[A-Za-z]{0,8}",
    ];
    let content_type = prop::option::of(prop_oneof![
        Just("application/x-www-form-urlencoded".to_owned()),
        Just("application/x-www-form-urlencoded; charset=UTF-8".to_owned()),
        Just("application/json".to_owned()),
        "\\PC{0,30}",
    ]);
    let body = prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..80),
        1 => Just(vec![b'a'; 20_000]),
    ];
    prop_oneof![
        (authorize_query, prop::option::of(user()))
            .prop_map(|(query, user)| Garbage::Authorize { query, user }),
        (
            random_query,
            user(),
            prop_oneof![Just(Decision::Allow), Just(Decision::Deny)]
        )
            .prop_map(|(query, user, decision)| Garbage::Consent {
                query,
                user,
                decision
            }),
        (
            method,
            content_type,
            prop::option::of(garbage_header()),
            body
        )
            .prop_map(
                |(method, content_type, authorization, body)| Garbage::TokenRaw {
                    method,
                    content_type,
                    authorization,
                    body,
                }
            ),
        (near_valid_pairs(token_names), any::<bool>())
            .prop_map(|(pairs, basic)| Garbage::TokenForm { pairs, basic }),
        (garbage_header(), any::<bool>())
            .prop_map(|(header, revoke)| Garbage::Bearer { header, revoke }),
        (any::<Index>(), mutation(), target()).prop_map(|(pick, mutation, target)| {
            Garbage::Mutated {
                pick,
                mutation,
                target,
            }
        }),
        (any::<Index>(), target()).prop_map(|(pick, target)| Garbage::CrossUse { pick, target }),
        (any::<Index>(), any::<bool>())
            .prop_map(|(pick, revoke)| Garbage::DoubledBearer { pick, revoke }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let unlinker = prop_oneof![Just(Unlinker::User), Just(Unlinker::TeamAdmin)];
    prop_oneof![
        1 => (app(), user(), any::<bool>(), access(), prop::bool::weighted(0.75)).prop_map(
            |(app, user, signed_in, access, redirect)| Op::Authorize {
                app,
                user,
                signed_in,
                access,
                redirect,
            }
        ),
        6 => (app(), user(), access(), prop::bool::weighted(0.75), prop::bool::weighted(0.85))
            .prop_map(|(app, user, access, redirect, allow)| Op::Consent {
                app,
                user,
                access,
                redirect,
                allow,
            }),
        7 => (any::<Index>(), prop::bool::weighted(0.6), exchange_how())
            .prop_map(|(code, fresh, how)| Op::Exchange { code, fresh, how }),
        4 => (any::<Index>(), refresh_how()).prop_map(|(grant, how)| Op::Refresh { grant, how }),
        1 => (any::<Index>(), endpoint()).prop_map(|(token, endpoint)| Op::Api { token, endpoint }),
        1 => any::<Index>().prop_map(|token| Op::Revoke { token }),
        1 => (app(), user(), unlinker).prop_map(|(app, user, by)| Op::Unlink { app, user, by }),
        2 => advance().prop_map(Op::Advance),
        2 => (any::<Index>(), -1i8..=1)
            .prop_map(|(target, offset)| Op::AdvanceToExpiry { target, offset }),
        2 => garbage().prop_map(Op::Garbage),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        ..ProptestConfig::default()
    })]

    /// Every operation agrees with the model, and every invariant holds after each one.
    #[test]
    fn the_core_agrees_with_the_model(ops in prop::collection::vec(op(), 1..=MAX_OPS)) {
        let mut world = World::new();
        for op in &ops {
            world.apply(op);
            world.check_all();
        }
    }
}
