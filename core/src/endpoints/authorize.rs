//! `GET /oauth2/authorize` and the consent form that follows it (RFC 6749 §4.1.1–4.1.2, §4.2
//! for the legacy implicit flow, RFC 7636 §4.3 for PKCE).
//!
//! Parsing validates the authorization request once; deciding loads the user's link and either
//! completes a re-authorization at once (SPEC.md: "completes automatically"), shows the consent
//! page, or — for the consent form's Allow — issues the code.

use crate::config::{
    redirect_matches, App, Config, DefaultTokenType, Issuer, Resource, UnannouncedRefresh,
};
use crate::ctx::{app_record, create, is_stored, replace, Ctx, Decision, Flow};
use crate::ending::{ConsentPage, Ending, Via};
use crate::endpoints::issue::{ended_ledger, issue_grant, minting_ledger, FirstToken, IssuedGrant};
use crate::endpoints::within_limit;
use crate::ids::{AppKey, KeyThumbprint, RedirectUri, Subject, User};
use crate::machines::code::{self, CodeTerms};
use crate::machines::grant::GrantTerms;
use crate::machines::{access_token, link};
use crate::partition::Partition;
use crate::pkce::{ChallengeMethod, CodeChallenge};
use crate::prelude::*;
use crate::props::SealedProps;
use crate::records::Resources;
use crate::records::{LinkRecord, Record, RecordKey, TokenAccessType};
use crate::refusal::Refusal;
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::step::{AuditEvent, ConsentPrompt, Transaction};
use crate::wire::form::{Params, Repeated};
use crate::wire::http::HttpRequest;
use crate::wire::redirect::{ReplyTo, ResponseMode};
use crate::wire::uri::{HttpUri, Scheme};

/// `response_type`: the code flow or the legacy implicit flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ResponseType {
    Code,
    Token,
}

/// A validated authorization request.
#[derive(Clone, Debug)]
pub(crate) struct Authorization {
    app: AppKey,
    response_type: ResponseType,
    scopes: ScopeSet,
    access_type: TokenAccessType,
    challenge: Option<CodeChallenge>,
    /// The resources the tokens are for (RFC 8707; standards profile), sorted.
    resources: Resources,
    /// Where the answer goes; `None`: the code is shown on a page.
    reply: Option<ReplyTo>,
    /// `prompt=consent` (standards profile): the user is asked even when nothing is new.
    prompt_consent: bool,
    /// `dpop_jkt` (RFC 9449 §10): the key the code is bound to.
    bound_to: Option<KeyThumbprint>,
    /// The raw query, for the consent form.
    query: String,
}

/// An authorization request with its user, ready to decide.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    request: Validation,
    /// `None` only while a stored app's request is unvalidated: it is validated before the
    /// user is sent to sign in, as a configured app's is.
    user: Option<User>,
    /// What the user answered.
    answer: Answer,
    /// The key of the user's link with the app (its partition hashed once, here).
    link: Option<RecordKey>,
}

/// The user's answer, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// None yet: the `GET` (the consent page unless already granted).
    Ask,
    /// The consent form's Allow.
    Allow,
    /// The consent form's Deny (a configured app's is answered when parsed).
    Deny,
}

/// The request validated against its app: at once for a configured app; for a stored app (a
/// client that registered itself) once its record is read, in the batch of the user's link.
#[derive(Clone, Debug)]
enum Validation {
    Now(Box<Authorization>),
    /// Validated on each walk of the decision (a walk or two once the record is read: cheaper
    /// in code than keeping the result).
    Later {
        app: AppKey,
        record: RecordKey,
        query: String,
    },
}

impl Parsed {
    fn new(config: &Config, request: Validation, user: Option<User>, answer: Answer) -> Parsed {
        let app = match &request {
            Validation::Now(authorization) => &authorization.app,
            Validation::Later { app, .. } => app,
        };
        let link = user
            .as_ref()
            .map(|user| RecordKey::link(config.server_key(), app.clone(), user.account_id.clone()));
        Parsed {
            request,
            user,
            answer,
            link,
        }
    }

    /// The partition of the signed-in user, where everything this request touches lies (but
    /// for a stored app's record, read beside); `None` before sign-in.
    pub fn partition(&self) -> Option<Partition> {
        self.link.as_ref().map(RecordKey::partition)
    }

    /// The signed-in user's ledger, read with the link.
    fn ledger(&self) -> Option<RecordKey> {
        self.partition().map(RecordKey::Ledger)
    }
}

/// The request validated against the app its `client_id` names: a configured one now, a stored
/// one (where clients may arrive unannounced) once read. Errors about the client become pages.
fn validation(config: &Config, query: &str) -> Result<Validation, Ending> {
    let params = Params::parse(query.as_bytes());
    let client_id = match params.one("client_id") {
        Err(Repeated(name)) => return page(Refusal::Repeated(name)),
        Ok(None) => return page(Refusal::ClientIdMissing),
        Ok(Some(id)) => id,
    };
    if let Some(app) = config.app(client_id) {
        return validate(config, app, query).map(|a| Validation::Now(Box::new(a)));
    }
    let stored = AppKey::new(client_id)
        .ok()
        .and_then(|app| Some((app_record(config, &app)?, app)));
    match stored {
        Some((record, app)) => Ok(Validation::Later {
            app,
            record,
            query: query.to_owned(),
        }),
        None => page(Refusal::UnknownClient),
    }
}

fn page<T>(refusal: Refusal) -> Result<T, Ending> {
    Err(page_refusal(refusal))
}

fn page_refusal(refusal: Refusal) -> Ending {
    Ending::Refused(refusal, Via::Page)
}

/// `GET /oauth2/authorize?…`.
pub(crate) fn parse_get(
    config: &Config,
    request: &HttpRequest,
    user: Option<User>,
) -> Result<Parsed, Ending> {
    within_limit(config, request, Via::Page)?;
    let validation = validation(config, &request.query)?;
    if user.is_none() && matches!(validation, Validation::Now(_)) {
        return Err(sign_in(&request.query));
    }
    Ok(Parsed::new(config, validation, user, Answer::Ask))
}

/// `POST /oauth2/authorize`: the consent form, `query=…&decision=allow|deny`. The form is not
/// trusted: it must come from this origin, and the request it names is validated again.
pub(crate) fn parse_consent(
    config: &Config,
    request: &HttpRequest,
    user: Option<User>,
) -> Result<Parsed, Ending> {
    within_limit(config, request, Via::Page)?;
    // The issuer names this server's scheme for certain; else the host may have reported it.
    let scheme = config
        .issuer()
        .map(Issuer::scheme)
        .or(request.scheme.as_deref());
    if request.is_cross_site_on(scheme) {
        return page(Refusal::CrossSiteConsent);
    }
    let form = Params::parse(&request.body);
    let (Ok(Some(query)), Ok(Some(decision))) = (form.one("query"), form.one("decision")) else {
        return page(Refusal::IncompleteConsentForm);
    };
    let answer = match decision {
        "allow" => Answer::Allow,
        "deny" => Answer::Deny,
        _ => return page(Refusal::IncompleteConsentForm),
    };
    let Some(user) = user else {
        return Err(sign_in(query));
    };
    let validation = validation(config, query)?;
    if let (Validation::Now(authorization), Answer::Deny) = (&validation, answer) {
        return Err(authorization.refuse(Refusal::AccessDenied));
    }
    Ok(Parsed::new(config, validation, Some(user), answer))
}

fn sign_in(query: &str) -> Ending {
    Ending::SignIn {
        return_to: format!("/oauth2/authorize?{query}"),
    }
}

impl Authorization {
    /// A refusal sent back to the app when its redirect URI is known, else shown on a page.
    fn refuse(&self, refusal: Refusal) -> Ending {
        match &self.reply {
            Some(reply) => Ending::Refused(refusal, Via::Redirect(reply.clone())),
            None => Ending::Refused(refusal, Via::Page),
        }
    }
}

/// Validates the query for `app`, the app its `client_id` names. Errors about the client or the
/// redirect URI become pages, never redirects (RFC 6749 §4.1.2.1); every later error goes back
/// to the client.
fn validate(config: &Config, app: &App, query: &str) -> Result<Authorization, Ending> {
    let params = Params::parse(query.as_bytes());
    let one = |name: &'static str| {
        params
            .one(name)
            .map_err(|Repeated(name)| Refusal::Repeated(name))
    };
    let redirect_uri = match one("redirect_uri") {
        Err(refusal) => return page(refusal),
        Ok(None) => None,
        Ok(Some(uri)) => match app.redirect_uris.iter().find(|r| redirect_matches(r, uri)) {
            Some(registered) if registered.as_str() == uri => Some(registered.clone()),
            // A loopback URI on the port the native app listens on this time: the answer goes
            // there, and the exchange must present that same URI.
            Some(_) => match RedirectUri::new(uri) {
                Ok(presented) => Some(presented),
                Err(_) => return page(Refusal::RedirectUriNotRegistered),
            },
            None => return page(Refusal::RedirectUriNotRegistered),
        },
    };
    let raw_response_type = one("response_type");
    let mode = match raw_response_type {
        Ok(Some("token")) => ResponseMode::Fragment,
        _ => ResponseMode::Query,
    };
    let state = one("state");
    let reply = redirect_uri.map(|uri| ReplyTo {
        uri,
        mode,
        state: state.as_ref().ok().and_then(|s| s.map(str::to_owned)),
        iss: config.issuer().map(|issuer| issuer.as_str().to_owned()),
    });
    let fail = |refusal| match &reply {
        Some(reply) => Ending::Refused(refusal, Via::Redirect(reply.clone())),
        None => Ending::Refused(refusal, Via::Page),
    };
    if let Err(refusal) = state {
        return Err(fail(refusal));
    }
    let response_type = match raw_response_type {
        Err(refusal) => return Err(fail(refusal)),
        Ok(None) => return Err(fail(Refusal::ResponseTypeMissing)),
        Ok(Some("code")) => ResponseType::Code,
        Ok(Some("token")) => ResponseType::Token,
        Ok(Some(_)) => return Err(fail(Refusal::UnsupportedResponseType)),
    };
    if response_type == ResponseType::Token {
        if !app.implicit_allowed {
            return Err(fail(Refusal::ImplicitNotAllowed));
        }
        if reply.is_none() {
            return page(Refusal::ImplicitWithoutRedirectUri);
        }
    }
    let asked = match one("token_access_type") {
        Err(refusal) => return Err(fail(refusal)),
        Ok(None) => None,
        Ok(Some("online")) => Some(TokenAccessType::Online),
        Ok(Some("offline")) => Some(TokenAccessType::Offline),
        Ok(Some(_)) => return Err(fail(Refusal::InvalidTokenAccessType)),
    };
    if response_type == ResponseType::Token && asked == Some(TokenAccessType::Offline) {
        return Err(fail(Refusal::OfflineRequiresCode));
    }
    let app_scopes = app.scopes();
    let scopes = match one("scope") {
        Err(refusal) => return Err(fail(refusal)),
        Ok(None) => app_scopes,
        Ok(Some(text)) => match ScopeSet::parse(text) {
            Ok(requested) if !config.takes_scope_names(&requested) => {
                return Err(fail(Refusal::MalformedScope))
            }
            Ok(requested) if within(config, &requested, &app_scopes) => requested,
            Ok(_) => return Err(fail(Refusal::ScopeNotEnabled)),
            Err(_) => return Err(fail(Refusal::MalformedScope)),
        },
    };
    // In the standards profile `offline_access` asks what `token_access_type=offline` asks.
    let offline_access =
        config.offers_offline_access() && scopes.iter().any(|name| name == OFFLINE_ACCESS);
    let access_type = match (asked, offline_access) {
        (Some(TokenAccessType::Online), true) => {
            return Err(fail(Refusal::OfflineAccessWithOnline))
        }
        (_, true) => TokenAccessType::Offline,
        (Some(asked), false) => asked,
        (None, false) => match app.default_token_type {
            DefaultTokenType::ShortLived => TokenAccessType::Online,
            DefaultTokenType::LongLived => TokenAccessType::Legacy,
            // Refresh tokens come only with a code.
            DefaultTokenType::Offline if response_type == ResponseType::Code => {
                TokenAccessType::Offline
            }
            DefaultTokenType::Offline => TokenAccessType::Online,
        },
    };
    if response_type == ResponseType::Token && access_type == TokenAccessType::Offline {
        return Err(fail(Refusal::OfflineRequiresCode));
    }
    // Where clients that arrive unannounced get no refresh tokens, offline access is left out
    // of what such a client is granted (RFC 6749 §3.3: the token response names the scopes
    // granted), rather than refused: the client goes on with online access.
    let (scopes, access_type) = match config.unannounced() {
        Some(clients)
            if clients.refresh_tokens == UnannouncedRefresh::Off
                && is_stored(config, &app.key)
                && access_type == TokenAccessType::Offline =>
        {
            let online = scopes.without(OFFLINE_ACCESS);
            let scopes = if online.is_empty() {
                app.scopes()
            } else {
                online
            };
            (scopes, TokenAccessType::Online)
        }
        _ => (scopes, access_type),
    };
    let challenge = pkce(config, app, response_type, &params).map_err(fail)?;
    let resources = resources(config, &params).map_err(fail)?;
    // RFC 9449 §10: the code is bound to the key the client names, where proofs are read.
    let bound_to = match one("dpop_jkt") {
        _ if config.dpop().is_none() => None,
        Err(refusal) => return Err(fail(refusal)),
        Ok(None) => None,
        Ok(Some(_)) if response_type == ResponseType::Token => {
            return Err(fail(Refusal::DpopJktMalformed))
        }
        Ok(Some(text)) => {
            Some(KeyThumbprint::new(text).map_err(|_| fail(Refusal::DpopJktMalformed))?)
        }
    };
    // OpenID Connect's `prompt=consent`, which MCP clients send with `offline_access`; other
    // values (`login`, `none`) are not taken up, as RFC 6749 §3.1 lets a server do.
    let prompt_consent = config.issuer().is_some()
        && match one("prompt") {
            Err(refusal) => return Err(fail(refusal)),
            Ok(prompt) => prompt.is_some_and(|p| p.split(' ').any(|v| v == "consent")),
        };
    Ok(Authorization {
        app: app.key.clone(),
        response_type,
        scopes,
        access_type,
        challenge,
        resources,
        reply,
        prompt_consent,
        bound_to,
        query: query.to_owned(),
    })
}

/// Whether the app may be granted every scope of `requested`: its own scopes, and
/// [`OFFLINE_ACCESS`] where the profile offers it.
fn within(config: &Config, requested: &ScopeSet, app_scopes: &ScopeSet) -> bool {
    requested.iter().all(|name| {
        app_scopes.iter().any(|own| own == name)
            || (name == OFFLINE_ACCESS && config.offers_offline_access())
    })
}

/// The resources named (RFC 8707 §2), each one this server issues tokens for; none in the
/// reference profile, which does not read the parameter.
pub(crate) fn resources(config: &Config, params: &Params) -> Result<Resources, Refusal> {
    if config.issuer().is_none() {
        return Ok(Resources::default());
    }
    // Compared and kept in canonical form: `https://api.example/` and `https://api.example`
    // name one resource, and a token names it one way.
    let mut named = Vec::new();
    for presented in params.all("resource") {
        match Resource::canonical(presented) {
            Some(resource) if config.knows_resource(&resource) => named.push(resource),
            _ => return Err(Refusal::InvalidTarget),
        }
    }
    Ok(Resources::from_names(named.iter().map(String::as_str)))
}

/// The PKCE parameters: a well-formed challenge with a known method, S256 when policy demands,
/// and always one for a public app's code flow (it has no other way to authenticate).
fn pkce(
    config: &Config,
    app: &App,
    response_type: ResponseType,
    params: &Params,
) -> Result<Option<CodeChallenge>, Refusal> {
    let challenge = params
        .one("code_challenge")
        .map_err(|r| Refusal::Repeated(r.0))?;
    let method = params
        .one("code_challenge_method")
        .map_err(|r| Refusal::Repeated(r.0))?;
    let Some(challenge) = challenge else {
        if method.is_some() {
            return Err(Refusal::ChallengeMethodWithoutChallenge);
        }
        if response_type == ResponseType::Code && !app.is_confidential() {
            return Err(Refusal::PkceRequired);
        }
        return Ok(None);
    };
    if response_type == ResponseType::Token {
        return Err(Refusal::ImplicitWithChallenge);
    }
    let method = ChallengeMethod::parse(method).ok_or(Refusal::UnsupportedChallengeMethod)?;
    if config.requires_s256() && method != ChallengeMethod::S256 {
        return Err(Refusal::S256Required);
    }
    CodeChallenge::new(method, challenge)
        .map(Some)
        .ok_or(Refusal::MalformedChallenge)
}

/// The user's link decides: a request within what the user granted before completes at once;
/// any other shows the consent page. The consent form's Allow issues.
pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let validated;
    let (request, app) = match &parsed.request {
        Validation::Now(request) => match ctx.config.app(request.app.as_str()) {
            Some(app) => (&**request, app),
            // The configuration cannot change within a request; the app was found when parsing.
            None => return Ok(Decision::End(page_refusal(Refusal::UnknownClient))),
        },
        Validation::Later { app, record, query } => {
            // A document is fetched and kept for a signed-in user only: a visitor cannot make
            // the server fetch documents and store them (its sign-in comes first, then the
            // checks of the client, before anything is asked).
            if parsed.user.is_none() && app.document_url().is_some() {
                return Ok(Decision::End(sign_in(query)));
            }
            // The app's record in one batch with the user's link and ledger.
            let ledger = parsed.ledger();
            let keys: Vec<&RecordKey> = [record]
                .into_iter()
                .chain(&parsed.link)
                .chain(&ledger)
                .collect();
            ctx.need(&keys)?;
            // A document's client: its document fetched when it is not kept fresh.
            let Some(stored) = ctx.current_app(app)? else {
                return Ok(Decision::End(page_refusal(Refusal::UnknownClient)));
            };
            validated = match validate(ctx.config, stored, query) {
                // Nobody vouches for this client's redirect URIs: anyone may have registered
                // one. Its errors are shown here, not sent there, until the user has signed in
                // and seen the consent page (the form's answer), so that this server is never
                // a redirector for whoever registers (RFC 9700 §4.11.2).
                Err(Ending::Refused(refusal, Via::Redirect(_))) if parsed.answer == Answer::Ask => {
                    return Ok(Decision::End(page_refusal(refusal)))
                }
                Err(ending) => return Ok(Decision::End(ending)),
                // Its answer goes to a redirect URI it registered, never onto a page of this
                // server's that a person could be talked into copying from.
                Ok(request) if request.reply.is_none() => {
                    return Ok(Decision::End(page_refusal(Refusal::RedirectUriRequired)))
                }
                Ok(request) => request,
            };
            if parsed.user.is_none() {
                return Ok(Decision::End(sign_in(query)));
            }
            if parsed.answer == Answer::Deny {
                return Ok(Decision::End(validated.refuse(Refusal::AccessDenied)));
            }
            (&validated, stored)
        }
    };
    let (Some(user), Some(link_key)) = (&parsed.user, &parsed.link) else {
        return Ok(Decision::End(page_refusal(Refusal::UnknownClient)));
    };
    let link_key = link_key.clone();
    let partition = link_key.partition();
    // The account's ledger comes with the link: a new link moves it on, an implicit grant
    // mints at it.
    ctx.need(&[&link_key, &RecordKey::Ledger(partition)])?;
    let link = ctx.load::<LinkRecord>(&link_key)?;
    let here = ctx.config.issuer().map(|issuer| issuer.resource());
    let consent_resources = request.resources.or_here(here);
    let unverified = matches!(parsed.request, Validation::Later { .. });
    let granted = link::has_granted(
        link.as_ref().map(|l| l.record),
        &request.scopes,
        request.access_type,
        &consent_resources,
    ) && (!unverified
        || goes_where_consented(request, link.as_ref().map(|l| l.record)));
    if parsed.answer != Answer::Allow && (!granted || request.prompt_consent) {
        return Ok(Decision::End(Ending::Consent(Box::new(ConsentPage {
            prompt: ConsentPrompt {
                app: app.key.clone(),
                app_name: app.name.clone(),
                scopes: request.scopes.clone(),
                access_type: request.access_type,
                redirect_uri: request.reply.as_ref().map(|r| r.uri.clone()),
                resources: consent_resources.clone(),
                unverified,
            },
            query: request.query.clone(),
            user: user.clone(),
        }))));
    }
    let link_record = link.as_ref().map(|l| l.record);
    let mut next_link = link::consented(
        link_record,
        &request.scopes,
        request.access_type,
        &consent_resources,
        request.reply.as_ref().map(|reply| &reply.uri),
        ctx.entropy.link_epoch(),
    );
    let link_epoch = next_link.epoch;
    // A new link moves the account's ledger on, as an end does: tokens of a link that was lost
    // (purged, or gone from a damaged store) are never vouched for under the new one. An
    // implicit grant mints with its link read, not before it, so it always writes the ledger.
    let implicit = matches!(request.response_type, ResponseType::Token);
    let expires_at = access_token::expires_at(request.access_type, ctx.now, ctx.config.policy());
    let (generation, ledger_put) = if link.is_none() {
        let (generation, put) = ended_ledger(ctx, partition)?;
        (expires_at.and(Some(generation)), Some(put))
    } else if implicit {
        minting_ledger(ctx, partition, expires_at, true)?
    } else {
        (None, None)
    };
    let mut transaction = match request.response_type {
        ResponseType::Code => issue_code(ctx, partition, app, request, user, link_epoch),
        ResponseType::Token => {
            let minted = Minted {
                link_epoch,
                next_member: next_link.members,
                generation,
            };
            let (decision, member) = issue_implicit(ctx, partition, request, user, &minted);
            if member.is_some() {
                next_link = link::with_member(&next_link).0;
            }
            decision
        }
    };
    // Conditional on the version read: a racing unlink must not be undone by this write.
    let link_put = replace(
        link_key,
        link.as_ref().map(|l| l.version),
        &Record::Link(next_link),
        None,
    );
    if let Decision::Commit(Transaction { puts, .. }, _) = &mut transaction {
        puts.push(link_put);
        puts.extend(ledger_put);
    }
    // A stored app is renewed by its use (see `UnannouncedClients::unused_lifetime`).
    Ok(ctx.with_renewal(&app.key, transaction))
}

/// Whether an unverified client's answer may go where it asks without the consent page: to the
/// https redirect URI the user consented to last. A loopback or private-use-scheme redirect is
/// asked about every time, since any program on the user's machine can listen there and pose
/// as the client; another URI of the client's than the one consented to is asked about too.
fn goes_where_consented(request: &Authorization, link: Option<&LinkRecord>) -> bool {
    let Some(reply) = &request.reply else {
        return false;
    };
    let https = HttpUri::parse(reply.uri.as_str())
        .is_some_and(|uri| uri.scheme == Scheme::Https && !uri.is_loopback());
    https && link.and_then(|l| l.redirect_uri.as_ref()) == Some(&reply.uri)
}

fn issue_code(
    ctx: &Ctx<'_>,
    partition: Partition,
    app: &App,
    request: &Authorization,
    user: &User,
    link_epoch: u64,
) -> Decision {
    let code = partition.code(ctx.config.server_key(), &ctx.entropy.primary());
    let record = code::issue(
        CodeTerms {
            app: request.app.clone(),
            user: user.clone(),
            redirect_uri: request.reply.as_ref().map(|r| r.uri.clone()),
            challenge: request.challenge.clone(),
            scopes: request.scopes.clone(),
            access_type: request.access_type,
            link_epoch,
            resources: request.resources.clone(),
            bound_to: request.bound_to.clone(),
            props: sealed_props(ctx, &request.app, user),
        },
        ctx.now,
        ctx.config.policy(),
    );
    let expires_at = record.expires_at;
    let audit = AuditEvent::CodeIssued {
        app: request.app.clone(),
        account_id: user.account_id.clone(),
        scopes: request.scopes.clone(),
        access_type: request.access_type,
        pkce: request.challenge.as_ref().map(|c| c.method),
        expires_at,
    };
    // Kept a lifetime past its expiry, so that a late exchange is told the code expired.
    let put = create(
        RecordKey::Code(partition, code.digest()),
        &Record::Code(record),
        Some(expires_at.plus(ctx.config.policy().code_ttl)),
    );
    let ending = match &request.reply {
        Some(reply) => Ending::Redirect(reply.location(&[("code", code.expose())])),
        None => Ending::DisplayCode {
            app: app.key.clone(),
            app_name: app.name.clone(),
            code,
        },
    };
    Decision::commit_one(put, audit, ending)
}

/// Where an implicit grant's token is minted: the link's epoch and its next member place, and
/// the generation of the account's ledger.
struct Minted {
    link_epoch: u64,
    next_member: u64,
    generation: Option<u64>,
}

/// Legacy implicit grant (RFC 6749 §4.2): the access token goes in the fragment; never a
/// refresh token. With the member place it took (`minted.next_member`) when it never ends by
/// itself (a long-lived token), for the link to count.
fn issue_implicit(
    ctx: &Ctx<'_>,
    partition: Partition,
    request: &Authorization,
    user: &User,
    minted: &Minted,
) -> (Decision, Option<u64>) {
    let Some(reply) = &request.reply else {
        // `validate` refuses response_type=token without a redirect_uri.
        return (
            Decision::End(Ending::Refused(
                Refusal::ImplicitWithoutRedirectUri,
                Via::Page,
            )),
            None,
        );
    };
    let IssuedGrant {
        grant_id,
        grant,
        access_token,
        expires_in,
        refresh_token: _,
        member,
        puts,
    } = issue_grant(
        ctx,
        partition,
        ctx.entropy.grant_id(),
        GrantTerms {
            app: &request.app,
            subject: Subject::Account(user.account_id.clone()),
            uid: Some(user.uid.clone()),
            scopes: request.scopes.clone(),
            link_epoch: minted.link_epoch,
            pkce: false,
            resources: request.resources.clone(),
            refresh_bound_to: None,
            props: sealed_props(ctx, &request.app, user),
        },
        FirstToken {
            access_type: request.access_type,
            audience: request.resources.clone(),
            generation: minted.generation,
            bound_to: None,
        },
        minted.next_member,
    );
    let expires_in_text = expires_in.map(|s| s.0.to_string());
    let mut params = vec![
        ("access_token", access_token.expose()),
        ("token_type", "bearer"),
    ];
    params.extend(expires_in_text.as_deref().map(|e| ("expires_in", e)));
    params.extend([
        ("scope", grant.scopes.as_str()),
        ("account_id", user.account_id.as_str()),
        ("uid", user.uid.as_str()),
    ]);
    let audit = AuditEvent::TokensIssued {
        app: request.app.clone(),
        subject: grant.subject.clone(),
        grant: grant_id,
        refresh_token: false,
        access_expires_at: expires_in.map(|s| ctx.now.plus(s)),
    };
    let decision = Decision::Commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        Ending::Redirect(reply.location(&params)),
    );
    (decision, member)
}

/// The props the host gave with `user` for the grant made now, sealed for `app` and the user's
/// account with this request's nonce; `None` where it gave none.
fn sealed_props(ctx: &Ctx<'_>, app: &AppKey, user: &User) -> Option<SealedProps> {
    let props = user.props.as_deref()?;
    Some(SealedProps::seal(
        ctx.config.server_key(),
        props,
        app,
        &user.account_id,
        ctx.entropy.props_nonce(),
    ))
}
