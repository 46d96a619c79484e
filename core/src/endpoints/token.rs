//! `POST /oauth2/token`: the authorization-code and refresh-token grants (RFC 6749 §4.1.3, §6,
//! RFC 7636 §4.5), client authentication (§2.3.1) and errors (§5.2).

use serde_json::{json, Map, Value};

use crate::config::App;
use crate::credentials::{AuthorizationCode, RefreshToken};
use crate::ctx::{commit, respond, Ctx, Flow};
use crate::ids::User;
use crate::machines::code::{self, Exchange};
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{access_token, link, refresh_token};
use crate::pkce::CodeVerifier;
use crate::records::{
    CodeRecord, CodeState, GrantRecord, LinkRecord, Record, RecordKey, RefreshTokenRecord,
};
use crate::scope::ScopeSet;
use crate::step::{AuditEvent, HttpRequest, Outcome, Put, Step, Transaction};
use crate::wire::client_auth::{self, CredentialError};
use crate::wire::form::{is_form_content_type, Params};
use crate::wire::response::{method_not_allowed, token_error, token_success, OAuthError};

/// Stops with an RFC 6749 §5.2 error.
fn fail<T>(error: OAuthError, description: &str, via_basic: bool) -> Flow<T> {
    respond(Outcome::Http(token_error(error, description, via_basic)))
}

/// The client as authenticated: by its secret, or only identified by `client_id` (PKCE).
struct Client<'c> {
    app: &'c App,
    has_secret: bool,
    via_basic: bool,
}

impl Client<'_> {
    fn fail<T>(&self, error: OAuthError, description: &str) -> Flow<T> {
        fail(error, description, self.via_basic)
    }
}

pub(crate) fn token(ctx: &mut Ctx<'_>, request: &HttpRequest) -> Flow<Step> {
    if !request.method.eq_ignore_ascii_case("POST") {
        return respond(Outcome::Http(method_not_allowed()));
    }
    if request.exceeds(ctx.config.policy().max_input_bytes) {
        return fail(
            OAuthError::InvalidRequest,
            "the request is too large",
            false,
        );
    }
    let params = parameters(ctx, request)?;
    let grant_type = match params.one("grant_type") {
        Err(_) => return fail(OAuthError::InvalidRequest, "grant_type is repeated", false),
        Ok(None) => return fail(OAuthError::InvalidRequest, "grant_type is missing", false),
        Ok(Some(g @ ("authorization_code" | "refresh_token"))) => g,
        Ok(Some(_)) => {
            let text = "grant_type must be authorization_code or refresh_token";
            return fail(OAuthError::UnsupportedGrantType, text, false);
        }
    };
    let client = authenticate(ctx, request, &params)?;
    if grant_type == "authorization_code" {
        exchange_code(ctx, &client, &params)
    } else {
        refresh(ctx, &client, &params)
    }
}

/// The request's parameters: the form body (RFC 6749 §4.1.3, §6), or — for clients such as the
/// official Dropbox SDKs, which send an empty body — the URL query, if the policy allows. Never
/// both: a request that splits its parameters cannot say which copy counts.
fn parameters(ctx: &Ctx<'_>, request: &HttpRequest) -> Flow<Params> {
    let in_query = !request.query.is_empty();
    if request.body.is_empty() && in_query {
        if !ctx.config.policy().token_parameters_in_query {
            let text = "the parameters must be in an application/x-www-form-urlencoded body";
            return fail(OAuthError::InvalidRequest, text, false);
        }
        return Ok(Params::parse(request.query.as_bytes()));
    }
    if in_query {
        let text = "parameters in both the URL and the body";
        return fail(OAuthError::InvalidRequest, text, false);
    }
    let mut content_types = request.header_values("content-type");
    let form = content_types.next().is_some_and(is_form_content_type);
    if !form || content_types.next().is_some() {
        let text = "the body must be application/x-www-form-urlencoded";
        return fail(OAuthError::InvalidRequest, text, false);
    }
    Ok(Params::parse(&request.body))
}

/// Identifies the client and checks its secret in constant time. A client without a secret is
/// only identified; the grant decides whether PKCE stands in for the secret.
fn authenticate<'c>(ctx: &Ctx<'c>, request: &HttpRequest, params: &Params) -> Flow<Client<'c>> {
    let presented = client_auth::presented(request, params).or_else(|e| {
        let repeated;
        let (error, text, via_basic) = match e {
            CredentialError::Missing => (
                OAuthError::InvalidClient,
                "client authentication is missing",
                false,
            ),
            CredentialError::MalformedBasic => (
                OAuthError::InvalidClient,
                "the Basic credentials are malformed",
                true,
            ),
            CredentialError::MultipleMethods => (
                OAuthError::InvalidRequest,
                "use one client authentication method only",
                false,
            ),
            CredentialError::ConflictingClientId => (
                OAuthError::InvalidRequest,
                "client_id differs from the Basic credentials",
                false,
            ),
            CredentialError::SecretWithoutId => (
                OAuthError::InvalidRequest,
                "client_secret was sent without client_id",
                false,
            ),
            CredentialError::UnsupportedScheme => (
                OAuthError::InvalidRequest,
                "the Authorization scheme must be Basic",
                false,
            ),
            CredentialError::Repeated(name) => {
                repeated = format!("{name} is repeated");
                (OAuthError::InvalidRequest, repeated.as_str(), false)
            }
        };
        fail(error, text, via_basic)
    })?;
    let via_basic = presented.via_basic;
    let refuse = || {
        fail(
            OAuthError::InvalidClient,
            "client authentication failed",
            via_basic,
        )
    };
    let Some(app) = ctx.config.app(&presented.client_id) else {
        return refuse();
    };
    match (&presented.secret, &app.secret_digest) {
        (None, _) => {}
        (Some(secret), Some(digest)) if digest.matches(secret) => {}
        (Some(_), _) => return refuse(),
    }
    Ok(Client {
        app,
        has_secret: presented.secret.is_some(),
        via_basic,
    })
}

/// `grant_type=authorization_code`.
fn exchange_code(ctx: &mut Ctx<'_>, client: &Client<'_>, params: &Params) -> Flow<Step> {
    let read = |name| {
        params
            .one(name)
            .or_else(|_| client.fail(OAuthError::InvalidRequest, &format!("{name} is repeated")))
    };
    let Some(code) = read("code")? else {
        return client.fail(OAuthError::InvalidRequest, "code is missing");
    };
    let redirect_uri = read("redirect_uri")?;
    let verifier = match read("code_verifier")? {
        None if !client.has_secret => {
            return client.fail(
                OAuthError::InvalidClient,
                "client_secret or code_verifier is required",
            )
        }
        None => None,
        Some(text) => match CodeVerifier::new(text) {
            Some(v) => Some(v),
            None => {
                let text = "code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~";
                return client.fail(OAuthError::InvalidRequest, text);
            }
        },
    };
    let code = AuthorizationCode::presented(code);
    let code_key = RecordKey::Code(code.digest());
    let unknown = "the code is invalid, expired or already used";
    let Some(loaded) = ctx.load::<CodeRecord>(&code_key)? else {
        return client.fail(OAuthError::InvalidGrant, unknown);
    };
    let record = loaded.record;
    let exchange = Exchange {
        app: &client.app.key,
        redirect_uri,
        verifier: verifier.as_ref(),
    };
    if let Err(mismatch) = code::matches(record, &exchange) {
        return client.fail(OAuthError::InvalidGrant, mismatch.describe());
    }
    if let CodeState::Redeemed { grant } = &record.state {
        return code_reused(ctx, client, grant);
    }
    if code::has_expired(record, ctx.now) {
        return client.fail(OAuthError::InvalidGrant, "the code has expired");
    }
    let link_key = RecordKey::Link(record.app.clone(), record.account_id.clone());
    let link = ctx.load::<LinkRecord>(&link_key)?;
    if link::epoch(link.map(|l| l.record)) != record.link_epoch {
        return client.fail(
            OAuthError::InvalidGrant,
            "the user unlinked the app since consenting",
        );
    }

    let user = User {
        account_id: record.account_id.clone(),
        uid: record.uid.clone(),
    };
    let issued = grant::issue(
        ctx,
        GrantTerms {
            app: &record.app,
            user,
            scopes: record.scopes.clone(),
            access_type: record.access_type,
            link_epoch: record.link_epoch,
            pkce: record.challenge.is_some(),
        },
    );
    let mut body = Map::new();
    body.insert("access_token".into(), issued.access_token.expose().into());
    if let Some(expires_in) = issued.expires_in {
        body.insert("expires_in".into(), expires_in.0.into());
    }
    body.insert("token_type".into(), "bearer".into());
    body.insert("scope".into(), issued.grant.scopes.to_string().into());
    if let Some(refresh) = &issued.refresh_token {
        body.insert("refresh_token".into(), refresh.expose().into());
    }
    body.insert("account_id".into(), record.account_id.as_str().into());
    body.insert("uid".into(), record.uid.as_str().into());

    let audit = AuditEvent::TokensIssued {
        app: record.app.clone(),
        account_id: record.account_id.clone(),
        grant: issued.grant_id.clone(),
        refresh_token: issued.refresh_token.is_some(),
        access_expires_at: issued.expires_in.map(|s| ctx.now.plus(s)),
    };
    // Single use: the redemption applies only if the code is still at the version read.
    let mut puts = vec![Put::replace(
        code_key,
        Some(loaded.version),
        Record::Code(code::redeemed(record, issued.grant_id.clone())),
    )
    .purgeable_after(record.expires_at)];
    puts.extend(issued.puts);
    commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        Outcome::Http(token_success(&Value::Object(body))),
    )
}

/// A verified client presented a used code: refuse, and revoke what the code produced
/// (RFC 6749 §4.1.2, RFC 9700 §4.2.4).
fn code_reused(ctx: &mut Ctx<'_>, client: &Client<'_>, grant_id: &crate::GrantId) -> Flow<Step> {
    let refusal = token_error(
        OAuthError::InvalidGrant,
        "the code was already used; the tokens issued from it are revoked",
        client.via_basic,
    );
    let key = RecordKey::Grant(grant_id.clone());
    match ctx.load::<GrantRecord>(&key)? {
        Some(loaded) if loaded.record.revoked_at.is_none() => {
            let audit = AuditEvent::CodeReused {
                app: loaded.record.app.clone(),
                account_id: loaded.record.account_id.clone(),
                grant: grant_id.clone(),
            };
            let put = Put::replace(
                key,
                Some(loaded.version),
                Record::Grant(grant::revoked(loaded.record, ctx.now)),
            );
            commit(
                Transaction {
                    puts: vec![put],
                    audit: vec![audit],
                },
                Outcome::Http(refusal),
            )
        }
        _ => respond(Outcome::Http(refusal)),
    }
}

/// `grant_type=refresh_token`: a new short-lived access token; the refresh token stays as is.
fn refresh(ctx: &mut Ctx<'_>, client: &Client<'_>, params: &Params) -> Flow<Step> {
    let read = |name| {
        params
            .one(name)
            .or_else(|_| client.fail(OAuthError::InvalidRequest, &format!("{name} is repeated")))
    };
    let Some(token) = read("refresh_token")? else {
        return client.fail(OAuthError::InvalidRequest, "refresh_token is missing");
    };
    let requested_scope = read("scope")?;
    let token = RefreshToken::presented(token);
    let invalid = "the refresh token is invalid or revoked";
    let Some(loaded) = ctx.load::<RefreshTokenRecord>(&RecordKey::RefreshToken(token.digest()))?
    else {
        return client.fail(OAuthError::InvalidGrant, invalid);
    };
    let record = loaded.record;
    if record.app != client.app.key {
        return client.fail(
            OAuthError::InvalidGrant,
            "the refresh token was issued to another app",
        );
    }
    let grant_key = RecordKey::Grant(record.grant.clone());
    let link_key = RecordKey::Link(record.app.clone(), record.account_id.clone());
    ctx.fetch(&[&grant_key, &link_key])?;
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return client.fail(OAuthError::InvalidGrant, invalid);
    };
    let grant = grant.record;
    if !client.has_secret && !refresh_token::allows_public_client(grant) {
        return client.fail(
            OAuthError::InvalidClient,
            "client_secret is required for this refresh token",
        );
    }
    let link = ctx.load::<LinkRecord>(&link_key)?;
    if !grant::is_live(grant, link.map(|l| l.record)) {
        return client.fail(OAuthError::InvalidGrant, invalid);
    }
    let scopes = match requested_scope.map(ScopeSet::parse) {
        None => grant.scopes.clone(),
        Some(Ok(narrower)) if narrower.is_subset(&grant.scopes) => narrower,
        Some(_) => {
            return client.fail(
                OAuthError::InvalidScope,
                "scope must be a subset of the granted scopes",
            )
        }
    };
    let expires_at = access_token::expires_at(ctx, crate::TokenAccessType::Offline);
    let (access, access_record) = access_token::mint(ctx, &record.grant, grant, scopes, expires_at);
    let mut body = json!({ "access_token": access.expose(), "token_type": "bearer" });
    if let (Some(at), Some(map)) = (expires_at, body.as_object_mut()) {
        map.insert("expires_in".into(), at.0.saturating_sub(ctx.now.0).into());
    }
    let audit = AuditEvent::AccessTokenRefreshed {
        app: record.app.clone(),
        account_id: record.account_id.clone(),
        grant: record.grant.clone(),
    };
    let put = Put::create(
        RecordKey::AccessToken(access.digest()),
        Record::AccessToken(access_record),
        expires_at,
    );
    commit(
        Transaction {
            puts: vec![put],
            audit: vec![audit],
        },
        Outcome::Http(token_success(&body)),
    )
}
