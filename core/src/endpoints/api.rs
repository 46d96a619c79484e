//! Bearer-token checks for the host's `/2/` API endpoints (RFC 6750) and
//! `POST /2/auth/token/revoke`.

use crate::ctx::{commit, respond, Ctx, Flow, Loaded};
use crate::machines::{access_token, grant};
use crate::records::{AccessTokenRecord, GrantRecord, LinkRecord, Record, RecordKey};
use crate::step::{AuditEvent, HttpRequest, Misuse, Outcome, Principal, Put, Step, Transaction};
use crate::wire::bearer::{bearer_token, BearerError};
use crate::wire::response::{api_error, revoked, ApiRefusal};

fn refuse<T>(refusal: ApiRefusal) -> Flow<T> {
    respond(Outcome::Http(api_error(&refusal)))
}

/// A bearer token that checked out, with its grant as loaded.
struct Bearer<'a> {
    token: &'a AccessTokenRecord,
    grant_key: RecordKey,
    grant: Loaded<'a, GrantRecord>,
}

/// Reads the bearer token and checks it: known, unexpired, its grant neither revoked nor
/// unlinked. Two batched reads whatever the number of tokens: the token, then grant and link.
fn authenticate<'a>(ctx: &mut Ctx<'a>, request: &HttpRequest) -> Flow<Bearer<'a>> {
    if request.exceeds(ctx.config.policy().max_input_bytes) {
        return refuse(ApiRefusal::Malformed);
    }
    let token = match bearer_token(request) {
        Ok(token) => token,
        Err(BearerError::Missing) => return refuse(ApiRefusal::Missing),
        Err(BearerError::Malformed) => return refuse(ApiRefusal::Malformed),
    };
    let Some(loaded) = ctx.load::<AccessTokenRecord>(&RecordKey::AccessToken(token.digest()))?
    else {
        return refuse(ApiRefusal::Invalid);
    };
    let record = loaded.record;
    if access_token::has_expired(record, ctx.now) {
        return refuse(ApiRefusal::Expired);
    }
    let grant_key = RecordKey::Grant(record.grant.clone());
    let link_key = RecordKey::Link(record.app.clone(), record.account_id.clone());
    ctx.fetch(&[&grant_key, &link_key])?;
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return refuse(ApiRefusal::Invalid);
    };
    let link = ctx.load::<LinkRecord>(&link_key)?;
    if !grant::is_live(grant.record, link.map(|l| l.record)) {
        return refuse(ApiRefusal::Invalid);
    }
    Ok(Bearer {
        token: record,
        grant_key,
        grant,
    })
}

/// An API call: the bearer token must be valid and carry the endpoint's Required Scope.
pub(crate) fn api_call(ctx: &mut Ctx<'_>, endpoint: &str, request: &HttpRequest) -> Flow<Step> {
    let Some(required) = ctx.config.required_scope(endpoint) else {
        return Err(Misuse::UnknownEndpoint(endpoint.to_owned()).into());
    };
    let bearer = authenticate(ctx, request)?;
    if !bearer.token.scopes.contains(required) {
        return refuse(ApiRefusal::MissingScope(required.clone()));
    }
    let grant = bearer.grant.record;
    respond(Outcome::Authorized(Principal {
        app: grant.app.clone(),
        account_id: grant.account_id.clone(),
        uid: grant.uid.clone(),
        scopes: bearer.token.scopes.clone(),
        expires_at: bearer.token.expires_at,
    }))
}

/// `POST /2/auth/token/revoke`: ends the presented token's grant — the token, its refresh token
/// and every access token minted from that refresh token. Answers 200 `null`.
pub(crate) fn revoke(ctx: &mut Ctx<'_>, request: &HttpRequest) -> Flow<Step> {
    let bearer = authenticate(ctx, request)?;
    let grant = bearer.grant.record;
    let audit = AuditEvent::GrantRevoked {
        app: grant.app.clone(),
        account_id: grant.account_id.clone(),
        grant: bearer.token.grant.clone(),
    };
    let put = Put::replace(
        bearer.grant_key,
        Some(bearer.grant.version),
        Record::Grant(grant::revoked(grant, ctx.now)),
    );
    commit(
        Transaction {
            puts: vec![put],
            audit: vec![audit],
        },
        Outcome::Http(revoked()),
    )
}
