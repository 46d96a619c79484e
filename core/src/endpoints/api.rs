//! Bearer tokens (RFC 6750) on the host's `/2/` API endpoints and on
//! `POST /2/auth/token/revoke`.
//!
//! Parsing reads the `Authorization` header and hashes the token, once; deciding reads the
//! token record with its account's ledger. While the ledger is at the generation the token was
//! minted at, nothing of the account has ended since, and the token alone decides (with the
//! app's record, for a client that registered itself). Otherwise the check reads the token's
//! grant and link in one more batch: at most five records however many tokens exist.

use crate::config::{CalledEndpoint, Config};
use crate::ctx::{Ctx, Decision, Flow, Need};
use crate::dpop::{self, Proof};
use crate::ending::{Ending, Revocation, Via};
use crate::endpoints::issue::revoke_grant;
use crate::endpoints::within_limit;
use crate::ids::{AppKey, GrantId, Subject};
use crate::machines::grant::{self, Standing};
use crate::machines::{access_token, ledger};
use crate::prelude::*;
use crate::props::SealedProps;
use crate::records::view::{AccessTokenView, GrantView, LinkView, SubjectView};
use crate::records::{GrantRecord, LedgerRecord, RecordKey};
use crate::refusal::DpopFault;
use crate::refusal::Refusal;
use crate::step::{AuditEvent, Principal, Transaction};
use crate::wire::bearer::{access_token, credentials_of, BearerError, Scheme};
use crate::wire::http::HttpRequest;

/// What the bearer token is presented for.
#[derive(Clone, Debug)]
pub(crate) enum Purpose {
    /// An API call to this endpoint.
    Call(CalledEndpoint),
    /// `POST /2/auth/token/revoke`.
    Revoke,
}

/// A bearer request: where its token's record is (`None`: not a token of the shape the core
/// mints, refused unread), and what it is for.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub token: Option<RecordKey>,
    purpose: Purpose,
    /// Under the `DPoP` scheme, the proof it came with (RFC 9449 §7), read and checked
    /// against the request and the token; its time, nonce and signature are checked when
    /// decided. `None`: a bearer token.
    proof: Option<Box<Proof>>,
}

impl Purpose {
    /// Where its refusals go: a challenge of the token's `scheme`, naming the endpoint an API
    /// call is for.
    fn channel(&self, scheme: Scheme) -> Via {
        let endpoint = match self {
            Purpose::Call(endpoint) => Some(endpoint.clone()),
            Purpose::Revoke => None,
        };
        match scheme {
            Scheme::Bearer => Via::Bearer(endpoint),
            Scheme::Dpop => Via::Dpop(endpoint),
        }
    }
}

impl Parsed {
    /// Where a failure of the request as a whole (the store's) is answered: the bearer
    /// challenge of the endpoint called.
    pub(crate) fn failure_channel(&self) -> Via {
        self.purpose.channel(Scheme::Bearer)
    }
}

pub(crate) fn parse(
    config: &Config,
    request: &HttpRequest,
    purpose: Purpose,
) -> Result<Parsed, Ending> {
    let refuse = |refusal, scheme| Err(Ending::Refused(refusal, purpose.channel(scheme)));
    match &purpose {
        // An API body is the host's (an MCP tool call's arguments): held to its own bound.
        Purpose::Call(endpoint) => {
            if request.head_exceeds(config.policy().max_input_bytes) {
                return refuse(Refusal::TooLarge, Scheme::Bearer);
            }
            let bound = config.body_limit(&endpoint.path);
            if request.body.len() > bound {
                return refuse(Refusal::BodyTooLarge(bound), Scheme::Bearer);
            }
        }
        Purpose::Revoke => within_limit(config, request, purpose.channel(Scheme::Bearer))?,
    }
    let dpop = config.issuer().filter(|_| config.dpop().is_some());
    let (scheme, token) = match access_token(request, dpop.is_some()) {
        Ok(presented) => presented,
        Err(error) => return refuse(refusal_of(error), Scheme::Bearer),
    };
    let proof = match (scheme, dpop) {
        (Scheme::Dpop, Some(issuer)) => {
            let uri = format!("{}{}", issuer.origin(), request.path);
            match dpop::presented(request, &uri, Some(token)) {
                Ok(Some(proof)) => Some(proof),
                // RFC 9449 §7.1: the `DPoP` scheme comes with a proof.
                Ok(None) => return refuse(Refusal::DpopProofInvalid(DpopFault::Malformed), scheme),
                Err(fault) => return refuse(Refusal::DpopProofInvalid(fault), scheme),
            }
        }
        _ => None,
    };
    Ok(Parsed {
        token: RecordKey::of_access_token(config.server_key(), token),
        purpose,
        proof,
    })
}

fn refusal_of(error: BearerError) -> Refusal {
    match error {
        BearerError::Missing => Refusal::BearerMissing,
        BearerError::Malformed => Refusal::MalformedBearer,
    }
}

/// The bearer token of an `Authorization` header's value (`None`: no header), read as the core
/// reads it at its own API, or why not: [`Refusal::BearerMissing`] (another scheme, or none)
/// or [`Refusal::MalformedBearer`] (not an RFC 6750 `b64token`). For a resource server on
/// another host (the npm package's resource helper), with
/// [`resource_server_challenge`](crate::resource_server_challenge) for its answer.
///
/// ```
/// use edgegrant::{bearer_token_of, Refusal};
/// assert_eq!(bearer_token_of(Some("Bearer abc.DEF~1")), Ok("abc.DEF~1"));
/// assert_eq!(bearer_token_of(Some("Bearer a b")), Err(Refusal::MalformedBearer));
/// assert_eq!(bearer_token_of(Some("Basic YTpi")), Err(Refusal::BearerMissing));
/// assert_eq!(bearer_token_of(None), Err(Refusal::BearerMissing));
/// ```
pub fn bearer_token_of(authorization: Option<&str>) -> Result<&str, Refusal> {
    presented_token_of(authorization, false).map(|(_, token)| token)
}

/// The access token of an `Authorization` header's value and whether it came under the `DPoP`
/// scheme (RFC 9449 §7.1; only when `dpop`), read as the core reads it at its own API; else as
/// [`bearer_token_of`] refuses. For a resource server on another host that takes DPoP proofs.
///
/// ```
/// use edgegrant::presented_token_of;
/// assert_eq!(presented_token_of(Some("DPoP abc"), true), Ok((true, "abc")));
/// assert_eq!(presented_token_of(Some("Bearer abc"), true), Ok((false, "abc")));
/// assert!(presented_token_of(Some("DPoP abc"), false).is_err());
/// ```
pub fn presented_token_of(
    authorization: Option<&str>,
    dpop: bool,
) -> Result<(bool, &str), Refusal> {
    let header = authorization.ok_or(Refusal::BearerMissing)?;
    match credentials_of(header, dpop) {
        Ok((scheme, token)) => Ok((scheme == Scheme::Dpop, token)),
        Err(error) => Err(refusal_of(error)),
    }
}

/// A bearer token that checked out, read in place, with its grant where that was read.
pub(crate) struct Bearer<'a> {
    pub key: &'a RecordKey,
    pub token: AccessTokenView<'a>,
    /// The token's app, configured or stored (a configured app's key shares its text).
    pub app: AppKey,
    /// The token's grant (its key, and the record read in place); `None` where the ledger
    /// vouched for the token, which then answers alone.
    pub grant: Option<(RecordKey, GrantView<'a>)>,
}

/// What an access token is checked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check<'p> {
    /// An API call here, to the endpoint at this path: a token bound to resources must name
    /// this host's API or that endpoint, and its account's ledger may vouch for it.
    Call(&'p str),
    /// Its revocation in the bearer form: a token for this host's API (or one of its
    /// endpoints); the grant read.
    Revoke,
    /// A token exchange (RFC 8693): a token for any resource, the grant read.
    Exchange,
}

/// The token must be known, unexpired, and its grant neither revoked nor unlinked: vouched for
/// by its account's ledger (an API call only), or checked against the grant and the link.
pub(crate) fn authenticate<'a>(
    ctx: &Ctx<'a>,
    key: Option<&'a RecordKey>,
    check: Check<'_>,
) -> Flow<Result<Bearer<'a>, Refusal>> {
    let Some(key) = key else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    let partition = key.partition();
    let ledger_key = RecordKey::Ledger(partition);
    ctx.need(&[key, &ledger_key])?;
    let Some((_, token)) = ctx.view::<AccessTokenView>(key)? else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    if let Err(refusal) = access_token::check(token.expires_at, ctx.now) {
        return Ok(Err(refusal));
    }
    // A token bound to resources (RFC 8707) serves only them: here, the API of this host, or
    // the endpoint called by its own URL.
    let for_here = |resource: &str| match check {
        Check::Call(path) => ctx.config.issuer().is_some_and(|issuer| {
            resource
                .strip_prefix(issuer.resource())
                .is_some_and(|rest| rest.is_empty() || rest == path)
        }),
        Check::Revoke => ctx.config.is_here(resource),
        Check::Exchange => true,
    };
    if !token.audience.is_empty() && !token.audience_any(for_here) {
        return Ok(Err(Refusal::TokenForAnotherResource));
    }
    let fault = || Need::Fault(key.clone());
    // A configured app's key is shared, not parsed again from the record.
    let app: AppKey = match token.app.as_str().and_then(|text| ctx.config.app(text)) {
        Some(configured) => configured.key.clone(),
        None => token.app.parse().ok_or_else(fault)?,
    };
    let ledger = ctx.load::<LedgerRecord>(&ledger_key)?;
    // A revocation reads the grant it writes: only an API call is answered by the token alone,
    // and only by a token that holds all its principal needs (a person's uid: since format 8).
    let whole = token.uid.is_some() || token.subject == SubjectView::Client;
    let vouched = matches!(check, Check::Call(_))
        && whole
        && ledger::vouches(token.generation, ledger.map(|l| l.record.generation));
    // Unless the ledger vouches for the token, its grant and link decide too; a stored app's
    // record comes in the same batch as they do (no round trip of its own).
    let grant_keys = if vouched {
        None
    } else {
        let grant_id: GrantId = token.grant.parse().ok_or_else(fault)?;
        let subject = token.subject.to_subject().ok_or_else(fault)?;
        Some((
            RecordKey::Grant(partition, grant_id),
            grant::link_key(partition, &app, &subject),
        ))
    };
    match &grant_keys {
        None => ctx.need_with_app(&[], &app)?,
        Some((grant_key, Some(link_key))) => ctx.need_with_app(&[grant_key, link_key], &app)?,
        Some((grant_key, None)) => ctx.need_with_app(&[grant_key], &app)?,
    }
    // Removing an app (from the configuration, or a stored app expiring) switches it off: its
    // tokens end with it.
    if !ctx.knows_app(&app)? {
        return Ok(Err(Refusal::AppRemoved));
    }
    let Some((grant_key, link_key)) = grant_keys else {
        return Ok(Ok(Bearer {
            key,
            token,
            app,
            grant: None,
        }));
    };
    let Some((_, grant)) = ctx.view::<GrantView>(&grant_key)? else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    let link = match &link_key {
        Some(key) => Some(ctx.view::<LinkView>(key)?.map(|(_, link)| link.epoch)),
        None => None,
    };
    let standing = grant::standing(grant.revoked_at.is_some(), grant.link_epoch, link);
    Ok(match standing {
        Standing::Live => Ok(Bearer {
            key,
            token,
            app,
            grant: Some((grant_key, grant)),
        }),
        Standing::Revoked => Err(Refusal::AccessTokenRevoked),
        Standing::Unlinked => Err(Refusal::AccessTokenUnlinked),
    })
}

/// The principal of an API call the token permits: the token's app, subject and scopes, a
/// person's uid (from the grant where the token has none: one stored before format 8), and the
/// grant's props, opened.
fn principal(bearer: Bearer<'_>, config: &Config) -> Flow<Principal> {
    let token = &bearer.token;
    let fault = |key: &RecordKey| Need::Fault(key.clone());
    let subject = token
        .subject
        .to_subject()
        .ok_or_else(|| fault(bearer.key))?;
    // (A person's token is vouched for only with its uid: without one, its grant was read.)
    let uid = match (&subject, token.uid, &bearer.grant) {
        (Subject::Client, ..) => None,
        (_, Some(uid), _) => Some(uid.parse().ok_or_else(|| fault(bearer.key))?),
        (_, None, Some((grant_key, grant))) => {
            let uid = grant.uid.and_then(|uid| uid.parse());
            Some(uid.ok_or_else(|| fault(grant_key))?)
        }
        (_, None, None) => return Err(fault(bearer.key).into()),
    };
    // Sealed for the token's app and account: props that do not open are the store's fault.
    let props = match (token.props, subject.account_id()) {
        (Some(sealed), Some(account)) => {
            let opened = sealed.as_str().and_then(|sealed| {
                SealedProps::open(
                    sealed,
                    config.server_key(),
                    bearer.app.as_str(),
                    account.as_str(),
                )
            });
            Some(opened.ok_or_else(|| fault(bearer.key))?)
        }
        _ => None,
    };
    Ok(Principal {
        app: bearer.app,
        subject,
        uid,
        scopes: token.scopes.to_set().ok_or_else(|| fault(bearer.key))?,
        expires_at: token.expires_at,
        props,
    })
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let scheme = match parsed.proof {
        Some(_) => Scheme::Dpop,
        None => Scheme::Bearer,
    };
    let refused = |refusal| {
        Ok(Decision::End(Ending::Refused(
            refusal,
            parsed.purpose.channel(scheme),
        )))
    };
    let check = match &parsed.purpose {
        Purpose::Call(endpoint) => Check::Call(&endpoint.path),
        Purpose::Revoke => Check::Revoke,
    };
    // A proof's time and nonce before anything is read: a client told `use_dpop_nonce` costs
    // no read.
    let proof = parsed
        .proof
        .as_deref()
        .filter(|_| cfg!(feature = "unannounced"));
    if let Some(proof) = proof {
        if let Err(stale) = proof.fresh(ctx.config, dpop::At::Api, ctx.now) {
            return refused(match stale {
                dpop::Stale::Time => Refusal::DpopProofInvalid(DpopFault::Time),
                dpop::Stale::Nonce => Refusal::DpopNonceRequired,
            });
        }
    }
    let bearer = match authenticate(ctx, parsed.token.as_ref(), check)? {
        Ok(bearer) => bearer,
        Err(refusal) => return refused(refusal),
    };
    // RFC 9449 §7: a bound token only with a proof of its key, never as a bearer token; an
    // unbound one under the `DPoP` scheme with a proof that holds.
    let bound_to = bearer.token.bound_to;
    match proof {
        None if bound_to.is_some() => return refused(Refusal::TokenBoundToAnotherKey),
        None => {}
        Some(proof) => {
            if !ctx.signature(|| proof.signature())? {
                return refused(Refusal::DpopProofInvalid(DpopFault::Signature));
            }
            if bound_to.is_some_and(|key| !key.is(proof.thumbprint.as_str())) {
                return refused(Refusal::TokenBoundToAnotherKey);
            }
        }
    }
    match &parsed.purpose {
        Purpose::Call(endpoint) => {
            match access_token::permits(bearer.token.scopes, &endpoint.scope) {
                Err(refusal) => refused(refusal),
                Ok(()) => Ok(Decision::End(Ending::Serve(principal(bearer, ctx.config)?))),
            }
        }
        // Ends the token's grant: the token, its refresh token and every access token minted
        // from that refresh token. The grant is decoded whole, to be written.
        Purpose::Revoke => {
            // Never vouched for: the grant was read.
            let Some((grant_key, _)) = &bearer.grant else {
                return refused(Refusal::UnknownAccessToken);
            };
            let Some(loaded) = ctx.load::<GrantRecord>(grant_key)? else {
                return refused(Refusal::UnknownAccessToken);
            };
            let RecordKey::Grant(_, grant_id) = grant_key else {
                return refused(Refusal::UnknownAccessToken);
            };
            let record = loaded.record;
            let audit = AuditEvent::GrantRevoked {
                app: record.app.clone(),
                subject: record.subject.clone(),
                grant: grant_id.clone(),
            };
            let puts = revoke_grant(ctx, grant_key.clone(), &loaded)?.puts;
            Ok(Decision::Commit(
                Transaction {
                    puts,
                    audit: vec![audit],
                },
                Ending::Revoked(Revocation::Grant(record.app.clone())),
            ))
        }
    }
}
