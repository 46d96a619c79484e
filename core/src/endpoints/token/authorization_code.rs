//! `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.5): a code redeemed once,
//! for the grant a person consented to.

use crate::config::Config;
use crate::ctx::{replace, Ctx, Decision, Flow};
use crate::ending::{Ending, TokenBody};
use crate::endpoints::client_auth::Client;
use crate::endpoints::issue::{
    issue_grant, minting_ledger, outlives_tokens, revoke_grant, FirstToken, Revoked,
};
use crate::endpoints::token::one;
use crate::ids::{AppKey, Subject, User};
use crate::machines::code::{self, Exchange};
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{access_token, link};
use crate::partition::Partition;
use crate::pkce::CodeVerifier;
use crate::prelude::*;
use crate::records::{
    CodeRecord, CodeState, GrantRecord, LinkRecord, MemberRecord, Record, RecordKey, Resources,
};
use crate::refusal::Refusal;
use crate::step::{AuditEvent, Transaction};
use crate::wire::form::Params;

/// A code exchange as asked.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub client: Client,
    /// Where the code's record is; `None` if it is not of the shape the core mints (refused
    /// unread).
    pub code: Option<RecordKey>,
    redirect_uri: Option<String>,
    verifier: Option<CodeVerifier>,
    /// `resource` (RFC 8707; standards profile): the audience asked for, sorted.
    resources: Resources,
}

pub(super) fn parse(
    config: &Config,
    client: Client,
    params: &Params<'_>,
    resources: Resources,
) -> Result<Parsed, Ending> {
    let Some(code) = one(params, &client, "code")? else {
        return Err(client.refuse(Refusal::CodeMissing));
    };
    let redirect_uri = one(params, &client, "redirect_uri")?.map(str::to_owned);
    let verifier = match one(params, &client, "code_verifier")? {
        None if !client.has_secret => return Err(client.refuse(Refusal::ProofMissing)),
        None => None,
        Some(text) => match CodeVerifier::new(text) {
            Some(v) => Some(v),
            None => return Err(client.refuse(Refusal::MalformedVerifier)),
        },
    };
    Ok(Parsed {
        code: RecordKey::of_code(config.server_key(), code),
        client,
        redirect_uri,
        verifier,
        resources,
    })
}

pub(super) fn decide(ctx: &Ctx<'_>, parsed: &Parsed) -> Flow<Decision> {
    let Some(code) = &parsed.code else {
        return Ok(Decision::End(parsed.client.refuse(Refusal::UnknownCode)));
    };
    exchange_code(
        ctx,
        &parsed.client,
        code,
        parsed.redirect_uri.as_deref(),
        parsed.verifier.as_ref(),
        &parsed.resources,
    )
}

/// `grant_type=authorization_code`.
fn exchange_code(
    ctx: &Ctx<'_>,
    client: &Client,
    code_key: &RecordKey,
    redirect_uri: Option<&str>,
    verifier: Option<&CodeVerifier>,
    resources: &Resources,
) -> Flow<Decision> {
    let end = |refusal| Ok(Decision::End(client.refuse(refusal)));
    let partition = code_key.partition();
    let Some(loaded) = ctx.load::<CodeRecord>(code_key)? else {
        return end(Refusal::UnknownCode);
    };
    let record = loaded.record;
    let exchange = Exchange {
        app: &client.app,
        redirect_uri,
        verifier,
    };
    if let Err(mismatch) = code::bind(record, &exchange) {
        return end(mismatch);
    }
    // A code bound to a key (`dpop_jkt`, RFC 9449 §10) is redeemed only with a proof of it.
    if record
        .bound_to
        .as_ref()
        .is_some_and(|key| client.proven_key() != Some(key))
    {
        return end(Refusal::GrantBoundToAnotherKey);
    }
    let grant_id = ctx.entropy.grant_id();
    let redeemed = match code::redeem(record, ctx.now, grant_id.clone()) {
        Ok(redeemed) => redeemed,
        Err(Refusal::CodeReused) => match &record.state {
            CodeState::Redeemed { grant } => {
                return code_reused(ctx, client, RecordKey::Grant(partition, grant.clone()))
            }
            CodeState::Issued => return end(Refusal::CodeReused),
        },
        Err(refusal) => return end(refusal),
    };
    let link_key = RecordKey::Link(partition, record.app.clone(), record.account_id.clone());
    let link = ctx.load::<LinkRecord>(&link_key)?;
    let link_record = link.as_ref().map(|l| l.record);
    if !link::stands(link_record.map(|l| l.epoch), record.link_epoch) {
        return end(Refusal::CodeUnlinked);
    }
    let audience = match grant::audience(&record.resources, resources, ctx.config) {
        Ok(audience) => audience,
        Err(refusal) => return end(refusal),
    };

    let user = User {
        account_id: record.account_id.clone(),
        uid: record.uid.clone(),
        name: None,
        props: None,
    };
    // A grant that never ends by itself takes the link's next member place; under a bound on
    // live grants that may evict the oldest, which ends it and so moves the ledger on: the
    // new token is minted at the generation that end leaves.
    let next_member = link_record.map_or(0, |l| l.members);
    let expires_at = access_token::expires_at(record.access_type, ctx.now, ctx.config.policy());
    let evicting = match link_record {
        Some(_) if outlives_tokens(record.access_type, expires_at) => {
            evicted(ctx, partition, &user, &record.app, next_member)?
        }
        _ => None,
    };
    let (generation, ledger_put) = match &evicting {
        Some((eviction, _)) => (expires_at.and(Some(eviction.generation)), None),
        None => minting_ledger(ctx, partition, expires_at, false)?,
    };
    let issued = issue_grant(
        ctx,
        partition,
        grant_id,
        GrantTerms {
            app: &record.app,
            subject: Subject::Account(user.account_id.clone()),
            uid: Some(user.uid.clone()),
            scopes: record.scopes.clone(),
            link_epoch: record.link_epoch,
            pkce: record.challenge.is_some(),
            resources: record.resources.clone(),
            // RFC 9449 §5: a public client's refresh token is bound to the key it proved; a
            // confidential client's authentication constrains its own.
            refresh_bound_to: client.proven_key().filter(|_| !client.has_secret).cloned(),
            props: record.props.clone(),
        },
        FirstToken {
            access_type: record.access_type,
            audience,
            generation,
            bound_to: client.proven_key().cloned(),
        },
        next_member,
    );
    let audit = AuditEvent::TokensIssued {
        app: record.app.clone(),
        subject: issued.grant.subject.clone(),
        grant: issued.grant_id.clone(),
        refresh_token: issued.refresh_token.is_some(),
        access_expires_at: issued.expires_in.map(|s| ctx.now.plus(s)),
    };
    // Single use: the redemption applies only if the code is still at the version read. The
    // redeemed code is kept for an access token's lifetime past its own expiry: a replay until
    // then still revokes what the code produced (a slow client finding its code used by a
    // thief), and after that it finds nothing, which refuses it as well.
    let keep_until = record.expires_at.plus(ctx.config.policy().access_token_ttl);
    let mut puts = vec![replace(
        code_key.clone(),
        Some(loaded.version),
        &Record::Code(redeemed),
        Some(keep_until),
    )];
    puts.extend(issued.puts);
    puts.extend(ledger_put);
    let mut audit = vec![audit];
    if let (Some(_), Some(counted)) = (issued.member, link_record) {
        // Its member place counted on the link, at the version read (which also holds the
        // epoch checked above): of two exchanges racing for a place, one writes again.
        puts.push(replace(
            link_key,
            link.as_ref().map(|l| l.version),
            &Record::Link(link::with_member(counted).0),
            None,
        ));
    }
    if let Some((eviction, event)) = evicting {
        puts.extend(eviction.puts);
        audit.push(event);
    }
    Ok(Decision::Commit(
        Transaction { puts, audit },
        Ending::Tokens(Box::new(TokenBody {
            access_token: issued.access_token,
            expires_in: issued.expires_in,
            refresh_token: issued.refresh_token,
            scope: Some(issued.grant.scopes),
            person: Some((user.account_id, user.uid)),
            retried: None,
            exchanged: false,
            bound: client.proof().is_some(),
        })),
    ))
}

/// Under a bound on live grants per user and app ([`Policy::live_grants_per_link`](crate::Policy::live_grants_per_link)), a new
/// member at `place` revokes the one `bound` places before it, if that one still stands: so
/// every live member is among the newest `bound`. The revocation and its audit event, if any.
fn evicted(
    ctx: &Ctx<'_>,
    partition: Partition,
    user: &User,
    app: &AppKey,
    place: u64,
) -> Flow<Option<(Revoked, AuditEvent)>> {
    let Some(oldest) = ctx
        .config
        .policy()
        .live_grants_per_link
        .and_then(|bound| place.checked_sub(u64::from(bound)))
    else {
        return Ok(None);
    };
    let member_key = RecordKey::Member(partition, app.clone(), user.account_id.clone(), oldest);
    let Some(member) = ctx.load::<MemberRecord>(&member_key)? else {
        return Ok(None);
    };
    let grant_key = RecordKey::Grant(partition, member.record.grant.clone());
    let Some(grant) = ctx.load::<GrantRecord>(&grant_key)? else {
        return Ok(None);
    };
    if grant.record.revoked_at.is_some() {
        return Ok(None);
    }
    let event = AuditEvent::GrantEvicted {
        app: app.clone(),
        subject: Subject::Account(user.account_id.clone()),
        grant: member.record.grant.clone(),
    };
    Ok(Some((revoke_grant(ctx, grant_key, &grant)?, event)))
}

/// A verified client presented a used code: refuse, and revoke what the code produced
/// (RFC 6749 §4.1.2, RFC 9700 §4.2.4).
fn code_reused(ctx: &Ctx<'_>, client: &Client, key: RecordKey) -> Flow<Decision> {
    let refusal = client.refuse(Refusal::CodeReused);
    let RecordKey::Grant(_, grant_id) = &key else {
        return Ok(Decision::End(refusal));
    };
    match ctx.load::<GrantRecord>(&key)? {
        Some(loaded) if loaded.record.revoked_at.is_none() => {
            let audit = AuditEvent::CodeReused {
                app: loaded.record.app.clone(),
                subject: loaded.record.subject.clone(),
                grant: grant_id.clone(),
            };
            let puts = revoke_grant(ctx, key.clone(), &loaded)?.puts;
            Ok(Decision::Commit(
                Transaction {
                    puts,
                    audit: vec![audit],
                },
                refusal,
            ))
        }
        _ => Ok(Decision::End(refusal)),
    }
}
