//! One module per endpoint family. Each parses its request once (`parse`: reading the wire,
//! authenticating the client, hashing the credential) and then decides (`decide`: loading
//! records around the state machines and turning their results into writes).

pub(crate) mod api;
pub(crate) mod attempts;
pub(crate) mod authorize;
mod client_auth;
pub(crate) mod discovery;
mod issue;
pub(crate) mod register;
pub(crate) mod token;
pub(crate) mod token_admin;
pub(crate) mod unlink;

use crate::config::Config;
use crate::cors;
use crate::ctx::{Ctx, Decision, Flow};
use crate::ending::{Ending, Via};
use crate::endpoints::discovery::Metadata;
use crate::endpoints::token_admin::Operation;
use crate::ids::AppKey;
use crate::machines::attempts::{Attempter, MAX_ATTEMPTERS};
use crate::partition::Partition;
use crate::records::RecordKey;
use crate::refusal::Refusal;
use crate::routes::{endpoint_of_metadata, Channel, Document, Endpoint, Method};
use crate::step::Input;
use crate::wire::http::HttpRequest;

/// Refuses a request over the policy's input limit, on its endpoint's channel.
pub(crate) fn within_limit(config: &Config, request: &HttpRequest, via: Via) -> Result<(), Ending> {
    if request.exceeds(config.policy().max_input_bytes) {
        return Err(Ending::Refused(Refusal::TooLarge, via));
    }
    Ok(())
}

/// A request, parsed and routed to its endpoint.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    Authorize(authorize::Parsed),
    Token(token::Parsed),
    /// Revocation or introspection (standards profile).
    Manage(token_admin::Parsed),
    /// Dynamic client registration (standards profile).
    Register(register::Parsed),
    Bearer(api::Parsed),
    Unlink(unlink::Parsed),
    Attempts(attempts::Parsed),
    /// Decided without any record.
    Ended(Ending),
}

impl Route {
    /// Routes `input` by path and method, and parses it for its endpoint.
    pub fn parse(config: &Config, input: Input) -> Route {
        let (request, user) = match input {
            Input::Unlink {
                app,
                account_id,
                by,
            } => return Route::Unlink(unlink::Parsed::new(config, app, account_id, by)),
            Input::Attempts { attempters, step } => {
                if attempters.len() > MAX_ATTEMPTERS
                    || !attempters.iter().all(Attempter::is_well_formed)
                {
                    return Route::Ended(Ending::Refused(Refusal::MalformedAttempter, Via::Plain));
                }
                return Route::Attempts(attempts::Parsed {
                    guards: attempts::guards(&attempters, config),
                    step,
                });
            }
            Input::Http { request, user } => (request, user),
        };
        let Some(endpoint) = Endpoint::at(config, &request.path) else {
            return Route::Ended(Ending::Refused(Refusal::NotFound, Via::Plain));
        };
        let method = Method::of(&request.method);
        if method == Method::Options {
            if let Some(methods) = endpoint.cors() {
                return Route::Ended(match cors::preflight(config, &request, methods) {
                    Some(preflight) => Ending::Preflight(preflight),
                    None => Ending::Refused(Refusal::CrossOriginRefused, Via::Plain),
                });
            }
        }
        if !endpoint.takes(method) {
            return Route::Ended(Ending::WrongMethod(endpoint));
        }
        let parsed = match endpoint {
            Endpoint::Authorize if method == Method::Get => {
                authorize::parse_get(config, &request, user).map(Route::Authorize)
            }
            Endpoint::Authorize => {
                authorize::parse_consent(config, &request, user).map(Route::Authorize)
            }
            Endpoint::Token => token::parse(config, &request).map(Route::Token),
            Endpoint::Revocation => {
                token_admin::parse(config, &request, Operation::Revoke).map(Route::Manage)
            }
            Endpoint::Introspection => {
                token_admin::parse(config, &request, Operation::Introspect).map(Route::Manage)
            }
            Endpoint::Registration => register::parse(config, &request).map(Route::Register),
            Endpoint::ClientConfiguration => {
                register::parse_management(config, &request).map(Route::Register)
            }
            Endpoint::Revoke => {
                api::parse(config, &request, api::Purpose::Revoke).map(Route::Bearer)
            }
            Endpoint::Api => match config.called_endpoint(&request.path) {
                Some(called) => {
                    api::parse(config, &request, api::Purpose::Call(called)).map(Route::Bearer)
                }
                None => Err(Ending::Refused(Refusal::NotFound, Via::Plain)),
            },
            Endpoint::Metadata(document) => Err(Ending::Metadata(match (method, document) {
                (Method::Options, _) => Metadata::Preflight,
                (_, Document::AuthorizationServer) => Metadata::AuthorizationServer,
                (_, Document::ProtectedResource) => Metadata::ProtectedResource(
                    endpoint_of_metadata(config, &request.path)
                        .flatten()
                        .and_then(|path| config.called_endpoint(path)),
                ),
            })),
        };
        parsed.unwrap_or_else(Route::Ended)
    }

    /// The partition every record the request reads or writes lies in (but for counts of
    /// failed attempts, read beside a token request's credential, and stored apps' records,
    /// read beside the first records): `None` when the request reads none, or only those.
    pub fn partition(&self) -> Option<Partition> {
        match self {
            Route::Authorize(parsed) => parsed.partition(),
            Route::Token(parsed) => parsed.partition(),
            Route::Manage(parsed) => parsed.credential().map(RecordKey::partition),
            Route::Bearer(parsed) => parsed.token.as_ref().map(RecordKey::partition),
            Route::Unlink(parsed) => Some(parsed.partition()),
            Route::Attempts(parsed) => parsed.partition(),
            Route::Register(parsed) => parsed.partition(),
            Route::Ended(_) => None,
        }
    }

    /// The app a token request authenticated, whose origins may read its tokens.
    pub fn client(&self) -> Option<&AppKey> {
        match self {
            Route::Token(parsed) => parsed.client(),
            Route::Manage(parsed) => parsed.client(),
            _ => None,
        }
    }

    /// Where a failure of the request as a whole (storage, contention, a client's metadata
    /// document) is answered: a page for the browser's authorization requests, JSON for the
    /// endpoints clients call.
    ///
    /// The endpoint's own channel, from the route table ([`Endpoint::channel`]): one answer to
    /// how a request-wide failure is sent. A host's input (an unlink, a credential check) and a
    /// request decided without records answer plainly.
    pub fn failure_channel(&self) -> Via {
        let endpoint = match self {
            Route::Authorize(_) => Endpoint::Authorize,
            Route::Token(_) => Endpoint::Token,
            Route::Manage(_) => Endpoint::Introspection,
            Route::Register(_) => Endpoint::Registration,
            // At the endpoint called, named in the challenge.
            Route::Bearer(parsed) => return parsed.failure_channel(),
            Route::Unlink(_) | Route::Attempts(_) | Route::Ended(_) => return Via::Plain,
        };
        match endpoint.channel() {
            Channel::Page => Via::Page,
            // A document's client has no secret, so never authenticated by Basic: 400.
            Channel::Token => Via::Token { basic: false },
            Channel::Bearer => Via::Bearer(None),
            Channel::Plain => Via::Plain,
        }
    }

    /// Decides as far as the loaded records allow.
    pub fn decide(&self, ctx: &Ctx<'_>) -> Flow<Decision> {
        match self {
            Route::Authorize(parsed) => authorize::decide(parsed, ctx),
            Route::Token(parsed) => token::decide(parsed, ctx),
            Route::Manage(parsed) => token_admin::decide(parsed, ctx),
            Route::Bearer(parsed) => api::decide(parsed, ctx),
            Route::Unlink(parsed) => unlink::decide(parsed, ctx),
            Route::Attempts(parsed) => attempts::decide(parsed, ctx),
            Route::Register(parsed) => register::decide(parsed, ctx),
            Route::Ended(ending) => Ok(Decision::End(ending.clone())),
        }
    }
}
