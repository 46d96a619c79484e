//! Bearer tokens (RFC 6750) on the host's `/2/` API endpoints and on
//! `POST /2/auth/token/revoke`.
//!
//! Parsing reads the `Authorization` header and hashes the token, once; deciding reads the
//! token record, then its grant and link in one batch (with the app's record, for a client that
//! registered itself): three records however many tokens exist.

use crate::config::Config;
use crate::ctx::{Ctx, Decision, Flow, Need};
use crate::ending::{Ending, Revocation, Via};
use crate::endpoints::issue::revoke_grant;
use crate::endpoints::within_limit;
use crate::ids::{AccountId, AppKey, GrantId};
use crate::machines::access_token;
use crate::machines::grant::{self, Standing};
use crate::records::view::{AccessTokenView, GrantView, LinkView};
use crate::records::{GrantRecord, RecordKey};
use crate::refusal::Refusal;
use crate::scope::Scope;
use crate::step::{AuditEvent, Principal, Transaction};
use crate::wire::bearer::{bearer_token, BearerError};
use crate::wire::http::HttpRequest;

/// What the bearer token is presented for.
#[derive(Clone, Debug)]
pub(crate) enum Purpose {
    /// An API call to an endpoint with this Required Scope.
    Call(Scope),
    /// `POST /2/auth/token/revoke`.
    Revoke,
}

/// A bearer request: where its token's record is (`None`: not a token of the shape the core
/// mints, refused unread), and what it is for.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub token: Option<RecordKey>,
    purpose: Purpose,
}

impl Purpose {
    /// Where its refusals go: a challenge naming the scope an API call requires.
    fn channel(&self) -> Via {
        match self {
            Purpose::Call(scope) => Via::Bearer(Some(scope.clone())),
            Purpose::Revoke => Via::Bearer(None),
        }
    }
}

pub(crate) fn parse(
    config: &Config,
    request: &HttpRequest,
    purpose: Purpose,
) -> Result<Parsed, Ending> {
    let refuse = |refusal| Err(Ending::Refused(refusal, purpose.channel()));
    within_limit(config, request, purpose.channel())?;
    match bearer_token(request) {
        Ok(token) => Ok(Parsed {
            token: RecordKey::of_access_token(config.server_key(), token),
            purpose,
        }),
        Err(BearerError::Missing) => refuse(Refusal::BearerMissing),
        Err(BearerError::Malformed) => refuse(Refusal::MalformedBearer),
    }
}

/// A bearer token that checked out, with its grant, both read in place.
struct Bearer<'a> {
    key: &'a RecordKey,
    token: AccessTokenView<'a>,
    grant_key: RecordKey,
    grant: GrantView<'a>,
}

/// The token must be known, unexpired, and its grant neither revoked nor unlinked.
fn authenticate<'a>(
    ctx: &Ctx<'a>,
    key: Option<&'a RecordKey>,
) -> Flow<Result<Bearer<'a>, Refusal>> {
    let Some(key) = key else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    let partition = key.partition();
    let Some((_, token)) = ctx.view::<AccessTokenView>(key)? else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    if let Err(refusal) = access_token::check(token.expires_at, ctx.now) {
        return Ok(Err(refusal));
    }
    // A token bound to resources (RFC 8707) serves only them: here, the API of this host.
    if !token.audience.is_empty()
        && !ctx
            .config
            .issuer()
            .is_some_and(|issuer| token.is_for(issuer.resource()))
    {
        return Ok(Err(Refusal::TokenForAnotherResource));
    }
    let fault = || Need::Fault(key.clone());
    let app: AppKey = token.app.parse().ok_or_else(fault)?;
    let grant_id: GrantId = token.grant.parse().ok_or_else(fault)?;
    let account: AccountId = token.account_id.parse().ok_or_else(fault)?;
    let grant_key = RecordKey::Grant(partition, grant_id);
    let link_key = RecordKey::Link(partition, app.clone(), account);
    // A stored app's record comes in the same batch: no round trip of its own.
    ctx.need_with_app(&[&grant_key, &link_key], &app)?;
    // Removing an app (from the configuration, or a stored app expiring) switches it off: its
    // tokens end with it.
    if ctx.app(&app)?.is_none() {
        return Ok(Err(Refusal::AppRemoved));
    }
    let Some((_, grant)) = ctx.view::<GrantView>(&grant_key)? else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    let link = ctx.view::<LinkView>(&link_key)?;
    let standing = grant::standing(
        grant.revoked_at.is_some(),
        grant.link_epoch,
        link.map(|(_, link)| link.epoch),
    );
    Ok(match standing {
        Standing::Live => Ok(Bearer {
            key,
            token,
            grant_key,
            grant,
        }),
        Standing::Revoked => Err(Refusal::AccessTokenRevoked),
        Standing::Unlinked => Err(Refusal::AccessTokenUnlinked),
    })
}

/// The principal of an API call the token permits: the grant's app and user, the token's scopes.
fn principal(bearer: &Bearer<'_>) -> Flow<Principal> {
    let (grant, token) = (&bearer.grant, &bearer.token);
    let grant_fault = || Need::Fault(bearer.grant_key.clone());
    Ok(Principal {
        app: grant.app.parse().ok_or_else(grant_fault)?,
        account_id: grant.account_id.parse().ok_or_else(grant_fault)?,
        uid: grant.uid.parse().ok_or_else(grant_fault)?,
        scopes: token
            .scopes
            .to_set()
            .ok_or_else(|| Need::Fault(bearer.key.clone()))?,
        expires_at: token.expires_at,
    })
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let refused = |refusal| {
        Ok(Decision::End(Ending::Refused(
            refusal,
            parsed.purpose.channel(),
        )))
    };
    let bearer = match authenticate(ctx, parsed.token.as_ref())? {
        Ok(bearer) => bearer,
        Err(refusal) => return refused(refusal),
    };
    match &parsed.purpose {
        Purpose::Call(required) => match access_token::permits(bearer.token.scopes, required) {
            Err(refusal) => refused(refusal),
            Ok(()) => Ok(Decision::End(Ending::Serve(principal(&bearer)?))),
        },
        // Ends the token's grant: the token, its refresh token and every access token minted
        // from that refresh token. The grant is decoded whole, to be written.
        Purpose::Revoke => {
            let Some(loaded) = ctx.load::<GrantRecord>(&bearer.grant_key)? else {
                return refused(Refusal::UnknownAccessToken);
            };
            let RecordKey::Grant(_, grant_id) = &bearer.grant_key else {
                return refused(Refusal::UnknownAccessToken);
            };
            let record = loaded.record;
            let audit = AuditEvent::GrantRevoked {
                app: record.app.clone(),
                account_id: record.account_id.clone(),
                grant: grant_id.clone(),
            };
            let puts = revoke_grant(ctx, bearer.grant_key.clone(), &loaded)?;
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
