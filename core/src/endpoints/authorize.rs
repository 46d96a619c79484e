//! `GET /oauth2/authorize` and the consent decision that follows it (RFC 6749 §4.1.1–4.1.2,
//! §4.2 for the legacy implicit flow, RFC 7636 §4.3 for PKCE).

use crate::config::{App, DefaultTokenType};
use crate::credentials::AuthorizationCode;
use crate::ctx::{commit, respond, Ctx, Flow};
use crate::ids::{RedirectUri, User};
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{code, link};
use crate::pkce::{ChallengeMethod, CodeChallenge};
use crate::records::{LinkRecord, Record, RecordKey, TokenAccessType};
use crate::scope::ScopeSet;
use crate::step::{
    AuditEvent, ConsentPrompt, Decision, ErrorPage, Outcome, Put, Step, Transaction,
};
use crate::wire::form::Params;
use crate::wire::redirect::{location, ResponseMode};
use crate::wire::response::OAuthError;

/// `response_type`: the code flow or the legacy implicit flow.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ResponseType {
    Code,
    Token,
}

/// Where the answer to an authorization request goes: back to a registered redirect URI (in
/// its query or fragment, with `state`), or onto a page when there is no URI to trust.
struct ReplyTo {
    redirect_uri: Option<RedirectUri>,
    mode: ResponseMode,
    state: Option<String>,
}

impl ReplyTo {
    fn page(error: OAuthError, description: &str) -> Outcome {
        Outcome::ErrorPage(ErrorPage {
            error: error.code().to_owned(),
            description: description.to_owned(),
        })
    }

    fn error(&self, error: OAuthError, description: &str) -> Outcome {
        match &self.redirect_uri {
            None => Self::page(error, description),
            Some(uri) => {
                let mut params = vec![("error", error.code()), ("error_description", description)];
                params.extend(self.state.as_deref().map(|s| ("state", s)));
                Outcome::Redirect(location(uri, self.mode, &params))
            }
        }
    }

    fn success(&self, uri: &RedirectUri, params: &[(&str, &str)]) -> Outcome {
        let mut params = params.to_vec();
        params.extend(self.state.as_deref().map(|s| ("state", s)));
        Outcome::Redirect(location(uri, self.mode, &params))
    }
}

/// A validated authorization request.
struct AuthorizationRequest<'c> {
    app: &'c App,
    response_type: ResponseType,
    scopes: ScopeSet,
    access_type: TokenAccessType,
    challenge: Option<CodeChallenge>,
    reply: ReplyTo,
}

/// Validates the query. Errors about the client or the redirect URI become pages, never
/// redirects (RFC 6749 §4.1.2.1); every later error goes back to the client.
fn validate<'c>(ctx: &Ctx<'c>, query: &str) -> Result<AuthorizationRequest<'c>, Outcome> {
    let page = ReplyTo::page;
    if query.len() > ctx.config.policy().max_input_bytes {
        return Err(page(OAuthError::InvalidRequest, "the request is too large"));
    }
    let params = Params::parse(query.as_bytes());
    let client_id = params
        .one("client_id")
        .map_err(|_| page(OAuthError::InvalidRequest, "client_id is repeated"))?
        .ok_or_else(|| page(OAuthError::InvalidRequest, "client_id is missing"))?;
    let app = ctx.config.app(client_id).ok_or_else(|| {
        page(
            OAuthError::InvalidRequest,
            "no app is registered under this client_id",
        )
    })?;
    let redirect_uri = match params.one("redirect_uri") {
        Err(_) => return Err(page(OAuthError::InvalidRequest, "redirect_uri is repeated")),
        Ok(None) => None,
        Ok(Some(uri)) => Some(
            app.redirect_uris
                .iter()
                .find(|r| r.as_str() == uri)
                .cloned()
                .ok_or_else(|| {
                    page(
                        OAuthError::InvalidRequest,
                        "redirect_uri is not registered for this app",
                    )
                })?,
        ),
    };
    let raw_response_type = params.one("response_type");
    let mode = match raw_response_type {
        Ok(Some("token")) => ResponseMode::Fragment,
        _ => ResponseMode::Query,
    };
    let state = params.one("state");
    let reply = ReplyTo {
        redirect_uri,
        mode,
        state: state.ok().flatten().map(str::to_owned),
    };
    let fail = |error, description: &str| reply.error(error, description);
    if state.is_err() {
        return Err(fail(OAuthError::InvalidRequest, "state is repeated"));
    }

    let response_type = match raw_response_type {
        Err(_) => {
            return Err(fail(
                OAuthError::InvalidRequest,
                "response_type is repeated",
            ))
        }
        Ok(None) => return Err(fail(OAuthError::InvalidRequest, "response_type is missing")),
        Ok(Some("code")) => ResponseType::Code,
        Ok(Some("token")) => ResponseType::Token,
        Ok(Some(_)) => {
            return Err(fail(
                OAuthError::UnsupportedResponseType,
                "response_type must be code or token",
            ))
        }
    };
    if response_type == ResponseType::Token {
        if !app.implicit_allowed {
            return Err(fail(
                OAuthError::UnauthorizedClient,
                "this app may not use response_type=token",
            ));
        }
        if reply.redirect_uri.is_none() {
            return Err(page(
                OAuthError::InvalidRequest,
                "response_type=token requires a redirect_uri",
            ));
        }
    }

    let access_type = match params.one("token_access_type") {
        Err(_) => {
            return Err(fail(
                OAuthError::InvalidRequest,
                "token_access_type is repeated",
            ))
        }
        Ok(None) => match app.default_token_type {
            DefaultTokenType::ShortLived => TokenAccessType::Online,
            DefaultTokenType::LongLived => TokenAccessType::Legacy,
        },
        Ok(Some("online")) => TokenAccessType::Online,
        Ok(Some("offline")) => TokenAccessType::Offline,
        Ok(Some(_)) => {
            return Err(fail(
                OAuthError::InvalidRequest,
                "token_access_type must be online or offline",
            ))
        }
    };
    if response_type == ResponseType::Token && access_type == TokenAccessType::Offline {
        return Err(fail(
            OAuthError::InvalidRequest,
            "offline access requires response_type=code",
        ));
    }

    let app_scopes = app.scopes();
    let scopes = match params.one("scope") {
        Err(_) => return Err(fail(OAuthError::InvalidRequest, "scope is repeated")),
        Ok(None) => app_scopes,
        Ok(Some(text)) => match ScopeSet::parse(text) {
            Ok(requested) if requested.is_subset(&app_scopes) => requested,
            Ok(_) => {
                return Err(fail(
                    OAuthError::InvalidScope,
                    "a requested scope is not enabled for this app",
                ))
            }
            Err(_) => return Err(fail(OAuthError::InvalidScope, "scope is malformed")),
        },
    };

    let challenge =
        pkce(ctx, app, response_type, &params).map_err(|d| fail(OAuthError::InvalidRequest, d))?;
    Ok(AuthorizationRequest {
        app,
        response_type,
        scopes,
        access_type,
        challenge,
        reply,
    })
}

/// The PKCE parameters: a well-formed challenge with a known method, S256 when policy demands,
/// and always one for a public app's code flow (it has no other way to authenticate).
fn pkce(
    ctx: &Ctx<'_>,
    app: &App,
    response_type: ResponseType,
    params: &Params,
) -> Result<Option<CodeChallenge>, &'static str> {
    let challenge = params
        .one("code_challenge")
        .map_err(|_| "code_challenge is repeated")?;
    let method = params
        .one("code_challenge_method")
        .map_err(|_| "code_challenge_method is repeated")?;
    let Some(challenge) = challenge else {
        if method.is_some() {
            return Err("code_challenge_method was sent without code_challenge");
        }
        if response_type == ResponseType::Code && !app.is_confidential() {
            return Err("this app has no secret and must use PKCE (code_challenge)");
        }
        return Ok(None);
    };
    if response_type == ResponseType::Token {
        return Err("code_challenge applies to response_type=code only");
    }
    let method =
        ChallengeMethod::parse(method).ok_or("code_challenge_method must be plain or S256")?;
    if ctx.config.policy().require_s256 && method != ChallengeMethod::S256 {
        return Err("code_challenge_method must be S256");
    }
    CodeChallenge::new(method, challenge)
        .map(Some)
        .ok_or("code_challenge must be 43-128 characters of A-Z a-z 0-9 - . _ ~")
}

/// `GET /oauth2/authorize`: validates, and tells the host what to put on the consent page and
/// whether this user already granted it.
pub(crate) fn authorize(ctx: &mut Ctx<'_>, query: &str, user: Option<&User>) -> Flow<Step> {
    let request = match validate(ctx, query) {
        Ok(request) => request,
        Err(outcome) => return respond(outcome),
    };
    let already_granted = match user {
        None => false,
        Some(user) => {
            let key = RecordKey::Link(request.app.key.clone(), user.account_id.clone());
            let link = ctx.load::<LinkRecord>(&key)?;
            link::has_granted(link.map(|l| l.record), &request.scopes, request.access_type)
        }
    };
    respond(Outcome::Consent(ConsentPrompt {
        app: request.app.key.clone(),
        app_name: request.app.name.clone(),
        scopes: request.scopes,
        access_type: request.access_type,
        redirect_uri: request.reply.redirect_uri,
        already_granted,
    }))
}

/// The user's decision. Deny → `access_denied`. Allow → a code (or, legacy implicit, a token)
/// bound to everything the request named, and the user's link updated in the same transaction.
pub(crate) fn consent(
    ctx: &mut Ctx<'_>,
    query: &str,
    user: &User,
    decision: Decision,
) -> Flow<Step> {
    let request = match validate(ctx, query) {
        Ok(request) => request,
        Err(outcome) => return respond(outcome),
    };
    if decision == Decision::Deny {
        return respond(
            request
                .reply
                .error(OAuthError::AccessDenied, "the user denied access"),
        );
    }
    let link_key = RecordKey::Link(request.app.key.clone(), user.account_id.clone());
    let link = ctx.load::<LinkRecord>(&link_key)?;
    let link_epoch = link::epoch(link.as_ref().map(|l| l.record));
    // Conditional on the version read: a racing unlink must not be undone by this write.
    let link_put = Put::replace(
        link_key,
        link.as_ref().map(|l| l.version),
        Record::Link(link::consented(
            link.as_ref().map(|l| l.record),
            &request.scopes,
            request.access_type,
        )),
    );
    match request.response_type {
        ResponseType::Code => issue_code(ctx, request, user, link_epoch, link_put),
        ResponseType::Token => issue_implicit(ctx, request, user, link_epoch, link_put),
    }
}

fn issue_code(
    ctx: &Ctx<'_>,
    request: AuthorizationRequest<'_>,
    user: &User,
    link_epoch: u64,
    link_put: Put,
) -> Flow<Step> {
    let code = AuthorizationCode::mint(ctx.entropy);
    let expires_at = ctx.now.plus(ctx.config.policy().code_ttl);
    let record = code::issue(
        code::CodeTerms {
            app: request.app.key.clone(),
            user: user.clone(),
            redirect_uri: request.reply.redirect_uri.clone(),
            challenge: request.challenge.clone(),
            scopes: request.scopes.clone(),
            access_type: request.access_type,
            link_epoch,
        },
        expires_at,
    );
    let audit = AuditEvent::CodeIssued {
        app: request.app.key.clone(),
        account_id: user.account_id.clone(),
        scopes: request.scopes,
        access_type: request.access_type,
        pkce: request.challenge.as_ref().map(|c| c.method),
        expires_at,
    };
    let puts = vec![
        Put::create(
            RecordKey::Code(code.digest()),
            Record::Code(record),
            Some(expires_at),
        ),
        link_put,
    ];
    let outcome = match &request.reply.redirect_uri {
        Some(uri) => request.reply.success(uri, &[("code", code.expose())]),
        None => Outcome::DisplayCode {
            app: request.app.key.clone(),
            code,
        },
    };
    commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        outcome,
    )
}

/// Legacy implicit grant (RFC 6749 §4.2): the access token goes in the fragment; never a
/// refresh token.
fn issue_implicit(
    ctx: &Ctx<'_>,
    request: AuthorizationRequest<'_>,
    user: &User,
    link_epoch: u64,
    link_put: Put,
) -> Flow<Step> {
    let Some(uri) = request.reply.redirect_uri.clone() else {
        // validate() refuses response_type=token without a redirect_uri.
        return respond(ReplyTo::page(
            OAuthError::InvalidRequest,
            "response_type=token requires a redirect_uri",
        ));
    };
    let issued = grant::issue(
        ctx,
        GrantTerms {
            app: &request.app.key,
            user: user.clone(),
            scopes: request.scopes,
            access_type: request.access_type,
            link_epoch,
            pkce: false,
        },
    );
    let expires_in = issued.expires_in.map(|s| s.0.to_string());
    let scope = issued.grant.scopes.to_string();
    let mut params = vec![
        ("access_token", issued.access_token.expose()),
        ("token_type", "bearer"),
    ];
    params.extend(expires_in.as_deref().map(|e| ("expires_in", e)));
    params.extend([
        ("scope", scope.as_str()),
        ("account_id", user.account_id.as_str()),
        ("uid", user.uid.as_str()),
    ]);
    let outcome = request.reply.success(&uri, &params);
    let audit = AuditEvent::TokensIssued {
        app: request.app.key.clone(),
        account_id: user.account_id.clone(),
        grant: issued.grant_id.clone(),
        refresh_token: false,
        access_expires_at: issued.expires_in.map(|s| ctx.now.plus(s)),
    };
    let mut puts = issued.puts;
    puts.push(link_put);
    commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        outcome,
    )
}
