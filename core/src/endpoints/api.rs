//! Bearer tokens (RFC 6750) on the host's `/2/` API endpoints and on
//! `POST /2/auth/token/revoke`.
//!
//! Parsing reads the `Authorization` header and hashes the token, once; deciding reads the
//! token record, then its grant and link in one batch (with the app's record, for a client that
//! registered itself): three records however many tokens exist.

use crate::config::Config;
use crate::ctx::{Ctx, Decision, Flow, Loaded};
use crate::ending::{Ending, Revocation, Via};
use crate::endpoints::issue::revoke_grant;
use crate::endpoints::within_limit;
use crate::machines::access_token;
use crate::machines::grant::{self, Standing};
use crate::records::{AccessTokenRecord, GrantRecord, LinkRecord, RecordKey};
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

/// A bearer token that checked out, with its grant as loaded.
struct Bearer<'a> {
    token: &'a AccessTokenRecord,
    grant_key: RecordKey,
    grant: Loaded<'a, GrantRecord>,
}

/// The token must be known, unexpired, and its grant neither revoked nor unlinked.
fn authenticate<'a>(ctx: &Ctx<'a>, key: Option<&RecordKey>) -> Flow<Result<Bearer<'a>, Refusal>> {
    let Some(key) = key else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    let partition = key.partition();
    let Some(loaded) = ctx.load::<AccessTokenRecord>(key)? else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    let token = loaded.record;
    if let Err(refusal) = access_token::check(token, ctx.now) {
        return Ok(Err(refusal));
    }
    // A token bound to resources (RFC 8707) serves only them: here, the API of this host.
    if !token.audience.is_empty()
        && !ctx
            .config
            .issuer()
            .is_some_and(|issuer| token.audience.contains(issuer.resource()))
    {
        return Ok(Err(Refusal::TokenForAnotherResource));
    }
    let grant_key = RecordKey::Grant(partition, token.grant.clone());
    let link_key = RecordKey::Link(partition, token.app.clone(), token.account_id.clone());
    // A stored app's record comes in the same batch: no round trip of its own.
    ctx.need_with_app(&[&grant_key, &link_key], &token.app)?;
    // Removing an app (from the configuration, or a stored app expiring) switches it off: its
    // tokens end with it.
    if ctx.app(&token.app)?.is_none() {
        return Ok(Err(Refusal::AppRemoved));
    }
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return Ok(Err(Refusal::UnknownAccessToken));
    };
    let link = ctx.load::<LinkRecord>(&link_key)?;
    Ok(
        match grant::standing(grant.record, link.map(|l| l.record)) {
            Standing::Live => Ok(Bearer {
                token,
                grant_key,
                grant,
            }),
            Standing::Revoked => Err(Refusal::AccessTokenRevoked),
            Standing::Unlinked => Err(Refusal::AccessTokenUnlinked),
        },
    )
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let bearer = match authenticate(ctx, parsed.token.as_ref())? {
        Ok(bearer) => bearer,
        Err(refusal) => {
            return Ok(Decision::End(Ending::Refused(
                refusal,
                parsed.purpose.channel(),
            )))
        }
    };
    let grant = bearer.grant.record;
    match &parsed.purpose {
        Purpose::Call(required) => Ok(Decision::End(
            match access_token::permits(bearer.token, required) {
                Err(refusal) => Ending::Refused(refusal, parsed.purpose.channel()),
                Ok(()) => Ending::Serve(Principal {
                    app: grant.app.clone(),
                    account_id: grant.account_id.clone(),
                    uid: grant.uid.clone(),
                    scopes: bearer.token.scopes.clone(),
                    expires_at: bearer.token.expires_at,
                }),
            },
        )),
        // Ends the token's grant: the token, its refresh token and every access token minted
        // from that refresh token.
        Purpose::Revoke => {
            let audit = AuditEvent::GrantRevoked {
                app: grant.app.clone(),
                account_id: grant.account_id.clone(),
                grant: bearer.token.grant.clone(),
            };
            let puts = revoke_grant(ctx, bearer.grant_key, &bearer.grant)?;
            Ok(Decision::Commit(
                Transaction {
                    puts,
                    audit: vec![audit],
                },
                Ending::Revoked(Revocation::Grant(grant.app.clone())),
            ))
        }
    }
}
