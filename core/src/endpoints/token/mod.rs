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
use crate::credentials::AssertionDigest;
use crate::ctx::{Ctx, Decision, Flow};
use crate::dpop;
use crate::ending::Ending;
use crate::endpoints::authorize;
use crate::endpoints::client_auth::{
    authenticate, consume_assertion, decide_failed, first_contact, form_parameters, refuse,
    used_first, verify, Client, FailedClient,
};
use crate::grant_type::GrantType;
use crate::ids::AppKey;
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{AssertionRecord, RecordKey};
use crate::refusal::{DpopFault, Refusal};
use crate::routes::TOKEN;
use crate::scope::ScopeSet;
use crate::time::UnixTime;
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
    let mut client = match authenticate(config, request, &params)? {
        Ok(client) => client,
        Err(failed) => return Ok(Parsed::Failed(failed)),
    };
    // A DPoP proof (RFC 9449 §5), where the deployment reads them: for this endpoint.
    if let Some(issuer) = config.issuer().filter(|_| config.dpop().is_some()) {
        let uri = format!("{}{TOKEN}", issuer.origin());
        client.proof = dpop::presented(request, &uri, None)
            .map_err(|fault| client.refuse(Refusal::DpopProofInvalid(fault)))?;
    }
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
    // The DPoP proof's time and nonce first: a client told `use_dpop_nonce` has nothing
    // read or written, and its retry is no replay.
    if let Err(refusal) = proof_is_fresh(ctx, client) {
        return Ok(Decision::End(client.refuse(refusal)));
    }
    // A stored app's authentication is checked with its record, read beside the credential's
    // and its account's ledger. The ledger is read in this first batch, before the grant and
    // link a mint reads next: what lets a mint leave it unwritten (see `machines::ledger`).
    // So is the record of the DPoP proof's use, should it have been used before.
    let ledger = parsed.partition().map(RecordKey::Ledger);
    let proof_used = client.proof().map(|proof| proof_use(ctx.config, proof));
    let beside: Vec<&RecordKey> = parsed
        .credential()
        .into_iter()
        .chain(&ledger)
        .chain(&proof_used)
        .collect();
    if let Err(failed) = verify(ctx, client, &beside)? {
        if let Parsed::ClientCredentials(_) = parsed {
            first_contact(ctx, client)?;
        }
        return decide_failed(&failed, ctx);
    }
    ctx.need(&beside)?;
    if let Some((proof, used)) = client.proof().zip(proof_used.as_ref()) {
        if !ctx.signature(|| proof.signature())? {
            let refusal = Refusal::DpopProofInvalid(DpopFault::Signature);
            return Ok(Decision::End(client.refuse(refusal)));
        }
        // Once within its window: a used proof's record, not written by this very request.
        if ctx.load::<AssertionRecord>(used)?.is_some() && !ctx.written.contains(used) {
            let refusal = Refusal::DpopProofInvalid(DpopFault::Replayed);
            return Ok(Decision::End(client.refuse(refusal)));
        }
    }
    // A document's client gets tokens by its current document: fetched again once its cache
    // lifetime is over (a document that vanished or changed is seen here).
    // (Verified, it stands: the fresh copy is the same app or a refusal.)
    ctx.current_app(&client.app)?;
    // A stored app is renewed by its use (see `UnannouncedClients::unused_lifetime`).
    // A client assertion is used once, whatever came of the request.
    let decision = ctx.with_renewal(&client.app, decide_grant(parsed, ctx)?);
    let decision = consume_assertion(ctx, client, decision);
    // A DPoP proof likewise, kept until it is out of its window.
    Ok(match (client.proof(), proof_used) {
        (Some(proof), Some(used)) => {
            let window = ctx.config.dpop().map_or(0, |dpop| dpop.proof_window.0);
            let expires_at = UnixTime(proof.iat.saturating_add(window).saturating_add(1));
            used_first(ctx, used, expires_at, decision)
        }
        _ => decision,
    })
}

/// The checks of the client's DPoP proof that need neither the host nor the store: made within
/// the window, with a nonce where one is asked for; and a proof at all where the client must
/// present one.
fn proof_is_fresh(ctx: &Ctx<'_>, client: &Client) -> Result<(), Refusal> {
    let Some(dpop) = ctx.config.dpop() else {
        return Ok(());
    };
    let Some(proof) = client.proof() else {
        let required = &dpop.required;
        let must = required.all
            || (required.unannounced && client.arrived_unannounced())
            || required.apps.contains(&client.app);
        return if must {
            Err(Refusal::DpopProofRequired)
        } else {
            Ok(())
        };
    };
    proof
        .fresh(ctx.config, dpop::At::TokenEndpoint, ctx.now)
        .map_err(|stale| match stale {
            dpop::Stale::Time => Refusal::DpopProofInvalid(DpopFault::Time),
            dpop::Stale::Nonce => Refusal::DpopNonceRequired,
        })
}

/// Where the use of `proof` is recorded: under the key it proves and its `jti`, in a partition
/// of its own (as a used client assertion is).
fn proof_use(config: &Config, proof: &dpop::Proof) -> RecordKey {
    RecordKey::Assertion(AssertionDigest::of_proof(
        config.server_key(),
        proof.thumbprint.as_str(),
        &proof.jti,
    ))
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
