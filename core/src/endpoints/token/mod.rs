//! `POST /oauth2/token`: one module per grant type ([`GrantType`]), and what they share —
//! the parameters, client authentication (RFC 6749 §2.3.1) and errors (§5.2).
//!
//! Parsing reads the parameters, authenticates the client (the secret compared in constant
//! time) and hashes the presented credential, once; deciding loads the records.

mod authorization_code;
mod client_credentials;
mod jwt_bearer;
mod refresh;
mod token_exchange;

pub(crate) use token_exchange::ACCESS_TOKEN_TYPE;

use crate::config::Config;
use crate::ctx::{Ctx, Decision, Flow};
use crate::ending::Ending;
use crate::endpoints::authorize;
use crate::endpoints::client_auth::{
    authenticate, consume_assertion, decide_failed, first_contact, form_parameters, refuse, verify,
    Client, FailedClient,
};
use crate::grant_type::GrantType;
use crate::ids::AppKey;
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::RecordKey;
use crate::refusal::Refusal;
use crate::scope::ScopeSet;
use crate::wire::form::{Params, Repeated};
use crate::wire::http::HttpRequest;

/// A token request, parsed and its client authenticated.
#[derive(Clone, Debug)]
pub(crate) enum Parsed {
    /// `grant_type=authorization_code`.
    Exchange(authorization_code::Parsed),
    /// `grant_type=refresh_token`.
    Refresh(refresh::Parsed),
    /// `grant_type=client_credentials`.
    ClientCredentials(client_credentials::Parsed),
    /// `grant_type=urn:ietf:params:oauth:grant-type:token-exchange`.
    TokenExchange(token_exchange::Parsed),
    /// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (an identity assertion).
    JwtBearer(jwt_bearer::Parsed),
    /// The client authentication failed.
    Failed(FailedClient),
}

impl Parsed {
    /// Where the presented credential would be stored, if it is of the shape the core mints
    /// and the client authenticated.
    pub fn credential(&self) -> Option<&RecordKey> {
        match self {
            Parsed::Exchange(exchange) => exchange.code.as_ref(),
            Parsed::Refresh(refresh) => refresh.token.as_ref(),
            Parsed::TokenExchange(exchange) => exchange.subject.as_ref(),
            Parsed::ClientCredentials(_) | Parsed::JwtBearer(_) | Parsed::Failed(_) => None,
        }
    }

    /// The partition the request lives in: its credential's, the authenticated client's own
    /// for a grant to the client itself, or the account an identity assertion names.
    pub fn partition(&self) -> Option<Partition> {
        match self {
            Parsed::ClientCredentials(grant) => Some(grant.partition),
            Parsed::JwtBearer(bearer) => bearer.partition(),
            _ => self.credential().map(RecordKey::partition),
        }
    }

    /// The authenticated app.
    pub fn client(&self) -> Option<&AppKey> {
        match self {
            Parsed::Exchange(exchange) => Some(&exchange.client.app),
            Parsed::Refresh(refresh) => Some(&refresh.client.app),
            Parsed::ClientCredentials(grant) => Some(&grant.client.app),
            Parsed::TokenExchange(exchange) => Some(&exchange.client.app),
            Parsed::JwtBearer(bearer) => Some(&bearer.client.app),
            Parsed::Failed(_) => None,
        }
    }
}

pub(crate) fn parse(config: &Config, request: &HttpRequest) -> Result<Parsed, Ending> {
    let params = form_parameters(config, request)?;
    let grant = match params.one("grant_type") {
        Err(Repeated(name)) => return refuse(Refusal::Repeated(name)),
        Ok(None) => return refuse(Refusal::GrantTypeMissing),
        Ok(Some(name)) => match GrantType::from_name(name).filter(|g| config.offers(*g)) {
            Some(grant) => grant,
            None => return refuse(Refusal::UnsupportedGrantType),
        },
    };
    let client = match authenticate(config, request, &params)? {
        Ok(client) => client,
        Err(failed) => return Ok(Parsed::Failed(failed)),
    };
    let resources =
        authorize::resources(config, &params).map_err(|refusal| client.refuse(refusal))?;
    match grant {
        GrantType::AuthorizationCode => {
            authorization_code::parse(config, client, &params, resources).map(Parsed::Exchange)
        }
        GrantType::RefreshToken => {
            refresh::parse(config, client, &params, resources).map(Parsed::Refresh)
        }
        GrantType::ClientCredentials => {
            client_credentials::parse(config, client, &params, resources)
                .map(Parsed::ClientCredentials)
        }
        GrantType::TokenExchange => {
            token_exchange::parse(config, client, &params, resources).map(Parsed::TokenExchange)
        }
        // (Never offered by a build without the `unannounced` feature: it links none of it.)
        GrantType::JwtBearer if cfg!(feature = "unannounced") => {
            jwt_bearer::parse(config, client, &params, resources).map(Parsed::JwtBearer)
        }
        GrantType::JwtBearer => Err(client.refuse(Refusal::UnsupportedGrantType)),
    }
}

/// `scope` as a token request sent it: `None` when absent, `Err` when malformed or naming a
/// scope this server does not have — refused only once the grant's credential checks out.
pub(crate) type AskedScope = Option<Result<ScopeSet, ()>>;

/// Reads `scope` (RFC 6749 §3.3) of a token request.
fn asked_scope(
    config: &Config,
    params: &Params<'_>,
    client: &Client,
) -> Result<AskedScope, Ending> {
    Ok(
        one(params, client, "scope")?.map(|text| match ScopeSet::parse(text) {
            Ok(set) if config.takes_scope_names(&set) => Ok(set),
            _ => Err(()),
        }),
    )
}

/// The scopes of a request that may only narrow `within` (a token exchange's subject token, an
/// identity assertion's grant: RFC 8693 §2.1, RFC 7521 §4.1): those asked, all among `within`
/// (else `invalid_scope`); none asked, all of `within`.
fn narrowed(asked: &AskedScope, within: &ScopeSet) -> Result<ScopeSet, Refusal> {
    match asked {
        None => Ok(within.clone()),
        Some(Ok(asked)) if asked.is_subset(within) => Ok(asked.clone()),
        Some(Ok(_)) => Err(Refusal::ScopeWidened),
        Some(Err(())) => Err(Refusal::MalformedScope),
    }
}

/// The one value of parameter `name`, if sent; sent twice, refused on the client's channel.
fn one<'p>(
    params: &'p Params<'_>,
    client: &Client,
    name: &'static str,
) -> Result<Option<&'p str>, Ending> {
    params
        .one(name)
        .map_err(|Repeated(name)| client.refuse(Refusal::Repeated(name)))
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let client = match parsed {
        Parsed::Failed(failed) => return decide_failed(failed, ctx),
        Parsed::Exchange(exchange) => &exchange.client,
        Parsed::Refresh(refresh) => &refresh.client,
        Parsed::ClientCredentials(grant) => &grant.client,
        Parsed::TokenExchange(exchange) => &exchange.client,
        Parsed::JwtBearer(bearer) => &bearer.client,
    };
    // A stored app's authentication is checked with its record, read beside the credential's
    // and its account's ledger. The ledger is read in this first batch, before the grant and
    // link a mint reads next: what lets a mint leave it unwritten (see `machines::ledger`).
    let ledger = parsed.partition().map(RecordKey::Ledger);
    let beside: Vec<&RecordKey> = parsed.credential().into_iter().chain(&ledger).collect();
    if let Err(failed) = verify(ctx, client, &beside)? {
        if let Parsed::ClientCredentials(_) = parsed {
            first_contact(ctx, client)?;
        }
        return decide_failed(&failed, ctx);
    }
    ctx.need(&beside)?;
    // A document's client gets tokens by its current document: fetched again once its cache
    // lifetime is over (a document that vanished or changed is seen here).
    // (Verified, it stands: the fresh copy is the same app or a refusal.)
    ctx.current_app(&client.app)?;
    // A stored app is renewed by its use (see `UnannouncedClients::unused_lifetime`).
    // A client assertion is used once, whatever came of the request.
    let decision = ctx.with_renewal(&client.app, decide_grant(parsed, ctx)?);
    Ok(consume_assertion(client, decision))
}

fn decide_grant(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    match parsed {
        Parsed::Failed(failed) => decide_failed(failed, ctx),
        Parsed::Exchange(exchange) => authorization_code::decide(ctx, exchange),
        Parsed::Refresh(refresh) => refresh::decide(ctx, refresh),
        Parsed::ClientCredentials(grant) => client_credentials::decide(ctx, grant),
        Parsed::TokenExchange(exchange) => token_exchange::decide(ctx, exchange),
        Parsed::JwtBearer(bearer) => jwt_bearer::decide(ctx, bearer),
    }
}
