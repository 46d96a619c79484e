//! `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1) with an Identity
//! Assertion JWT Authorization Grant (ID-JAG; MCP's enterprise-managed authorization): a
//! trusted identity provider signs that one of its users may have a client act for them here.
//! The client, authenticated, presents the assertion once and gets that person's access token,
//! with no consent page and no refresh token (the provider is asked again when it expires).
//!
//! The assertion is checked as the draft's §4.4.1 says: `typ` `oauth-id-jag+jwt`, `iss` a
//! provider of the configuration, `aud` this server's issuer identifier alone, `client_id` the
//! authenticated client, `exp`, `iat` and `nbf` around now, the signature by one of the
//! provider's keys (the host verifies it), and `jti` unused — its use recorded in a
//! transaction of its own, created only where none is, so that of two hosts racing with one
//! assertion one issues a token. Its `sub` is mapped to an account by the configuration; the
//! grant is that person's, on their link with the app (made if there is none, with nothing
//! consented on it), so that their unlinking, revocation or the ledger end it as any other.

use crate::config::{Config, ProviderAccount, ProviderKeys, Resource};
use crate::credentials::AssertionDigest;
use crate::ctx::{create, Ctx, Decision, Flow};
use crate::ending::{Ending, TokenBody};

use crate::endpoints::client_auth::{signs, used_first, Client};
use crate::endpoints::issue::{issue_grant, minting_ledger, FirstToken};
use crate::endpoints::token::{asked_scope, narrowed, one, AskedScope};
use crate::ids::Subject;
use crate::jose::Assertion;
use crate::machines::grant::{self, GrantTerms};
use crate::machines::{access_token, link};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{AssertionRecord, LinkRecord, Record, RecordKey, Resources, TokenAccessType};
use crate::refusal::Refusal;
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::step::{AuditEvent, Transaction, Verify};
use crate::time::UnixTime;
use crate::wire::form::Params;

/// The `typ` of an identity assertion (ID-JAG §3.1), and its long form (RFC 7515 §4.1.9).
const TYP: &str = "oauth-id-jag+jwt";
const TYP_LONG: &str = "application/oauth-id-jag+jwt";

/// The longest an identity assertion may live from now: its use is kept as long (ID-JAG §9:
/// short-lived, minutes).
const MAX_LIFETIME: u64 = 600;

/// How far ahead of this server's clock a provider's `iat` and `nbf` may be.
const CLOCK_SKEW: u64 = 60;

/// A JWT-bearer request as parsed.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub client: Client,
    /// The assertion; `None` when it is no identity assertion of a trusted provider.
    assertion: Option<Box<Asserted>>,
    /// `scope`: `Err` when malformed.
    scope: AskedScope,
    /// `resource` (RFC 8707), among the configured ones.
    resources: Resources,
}

/// An identity assertion of a trusted provider, with what its checks need.
#[derive(Clone, Debug)]
struct Asserted {
    assertion: Assertion,
    /// The provider's issuer identifier (the configuration's).
    issuer: String,
    /// The account its subject is here, and the partition of that account.
    account: Option<(ProviderAccount, Partition)>,
    /// Where its use is kept.
    used: RecordKey,
}

impl Parsed {
    /// The partition the request lives in: the account's.
    pub fn partition(&self) -> Option<Partition> {
        Some(self.assertion.as_ref()?.account.as_ref()?.1)
    }
}

pub(super) fn parse(
    config: &Config,
    client: Client,
    params: &Params<'_>,
    resources: Resources,
) -> Result<Parsed, Ending> {
    let Some(text) = one(params, &client, "assertion")? else {
        return Err(client.refuse(Refusal::AssertionMissing));
    };
    let scope = asked_scope(config, params, &client)?;
    let key = config.server_key();
    let assertion = config.identify(text).map(|found| {
        let used = RecordKey::Assertion(AssertionDigest::of_identity(
            key,
            &found.provider.issuer,
            &found.assertion.claims.jti,
        ));
        Box::new(Asserted {
            issuer: found.provider.issuer.clone(),
            account: found.account.map(|account| {
                (
                    account.clone(),
                    Partition::of_account(key, &account.account_id),
                )
            }),
            assertion: found.assertion,
            used,
        })
    });
    Ok(Parsed {
        client,
        assertion,
        scope,
        resources,
    })
}

/// Whether the assertion's claims hold for this server, this client and now (ID-JAG §4.4.1;
/// RFC 7523 §3): its signature aside.
fn claims_hold(ctx: &Ctx<'_>, client: &Client, assertion: &Assertion) -> bool {
    let claims = &assertion.claims;
    let Some(issuer) = ctx.config.issuer() else {
        return false;
    };
    let now = ctx.now.0;
    let typed = assertion
        .typ
        .as_deref()
        .is_some_and(|typ| typ.eq_ignore_ascii_case(TYP) || typ.eq_ignore_ascii_case(TYP_LONG));
    // §4.4.1: the audience is this server's issuer identifier, and nothing else.
    let for_us = matches!(claims.aud.as_slice(), [aud] if aud == issuer.as_str());
    let timely = now < claims.exp
        && claims.exp <= now.saturating_add(MAX_LIFETIME)
        && claims
            .iat
            .is_some_and(|iat| iat <= now.saturating_add(CLOCK_SKEW))
        && claims
            .nbf
            .is_none_or(|nbf| nbf <= now.saturating_add(CLOCK_SKEW));
    typed
        && for_us
        && timely
        && !claims.sub.is_empty()
        && claims.client_id.as_deref() == Some(client.app.as_str())
}

pub(super) fn decide(ctx: &Ctx<'_>, parsed: &Parsed) -> Flow<Decision> {
    let client = &parsed.client;
    let end = |refusal| Ok(Decision::End(client.refuse(refusal)));
    let Some(provider_grant) = ctx.config.identity_assertions() else {
        return end(Refusal::UnsupportedGrantType);
    };
    // ID-JAG §4.4: the client authenticates, and is the one the assertion names.
    if !client.has_secret {
        return end(Refusal::ConfidentialClientRequired);
    }
    let Some(asserted) = &parsed.assertion else {
        return end(Refusal::AssertionInvalid);
    };
    let assertion = &asserted.assertion;
    let Some(provider) = provider_grant.provider(&asserted.issuer) else {
        return end(Refusal::AssertionInvalid);
    };
    if !claims_hold(ctx, client, assertion) {
        return end(Refusal::AssertionInvalid);
    }
    let Some(app) = ctx.app(&client.app)? else {
        return end(Refusal::UnknownClient);
    };
    // The scopes: those asked, within the assertion's (none asked: the assertion's; an
    // assertion naming none: the app's), and always within the app's. No offline access: a
    // token that outlives the provider's word is not one to give.
    let asserted_scopes = match &assertion.claims.scope {
        None => app.scopes(),
        Some(text) => match ScopeSet::parse(text) {
            Ok(set) => set,
            Err(_) => return end(Refusal::AssertionInvalid),
        },
    };
    let scopes = match narrowed(&parsed.scope, &asserted_scopes) {
        Ok(scopes) => scopes.without(OFFLINE_ACCESS),
        Err(refusal) => return end(refusal),
    };
    if scopes.is_empty() || !scopes.is_subset(&app.scopes()) {
        return end(Refusal::ScopeNotEnabled);
    }
    // The resources the assertion grants (each one this server issues tokens for), and those
    // asked among them.
    let mut granted = Vec::new();
    for named in &assertion.claims.resource {
        match Resource::canonical(named) {
            Some(resource) if ctx.config.knows_resource(&resource) => granted.push(resource),
            _ => return end(Refusal::InvalidTarget),
        }
    }
    let granted = Resources::from_names(granted.iter().map(String::as_str));
    let audience = match grant::audience(&granted, &parsed.resources, ctx.config) {
        Ok(audience) => audience,
        Err(refusal) => return end(refusal),
    };
    // Signed by one of the provider's keys: the one its header names, or the only one of its
    // algorithm. Keys of a `jwks_uri` are read from where they are kept, fetched when they must.
    let keys = match &provider.keys {
        ProviderKeys::Inline(keys) => keys.as_slice(),
        ProviderKeys::Remote(url) => {
            let kept = RecordKey::ProviderKeys(Partition::of_provider(
                ctx.config.server_key(),
                &provider.issuer,
            ));
            ctx.provider_keys(&kept, url, &client.app, |key| signs(key, assertion))?
        }
    };
    let mut candidates = keys.iter().filter(|key| signs(key, assertion));
    let (Some(key), None) = (candidates.next(), candidates.next()) else {
        return end(Refusal::AssertionInvalid);
    };
    let holds = ctx.signature(|| Verify {
        alg: assertion.alg,
        key: key.jwk.clone(),
        message: assertion.signing_input.clone(),
        signature: assertion.signature.clone(),
    })?;
    if !holds {
        return end(Refusal::AssertionInvalid);
    }
    let Some((account, partition)) = &asserted.account else {
        return end(Refusal::AssertionSubjectUnknown);
    };
    let partition = *partition;
    // Once: a use of the assertion already kept, not by this very request, refuses it. Its
    // use, its link and the account's ledger are read in one batch.
    let link_key = RecordKey::Link(partition, client.app.clone(), account.account_id.clone());
    ctx.need(&[&asserted.used, &link_key, &RecordKey::Ledger(partition)])?;
    if ctx.load::<AssertionRecord>(&asserted.used)?.is_some()
        && !ctx.written.contains(&asserted.used)
    {
        return end(Refusal::AssertionReused);
    }
    // The person's link with the app: the grant stands by its epoch. One is made where there is
    // none, with nothing consented on it (the provider's word is for this grant alone: a later
    // authorization here still asks the person).
    let (link_epoch, new_link) = match ctx.load::<LinkRecord>(&link_key)? {
        Some(found) => (found.record.epoch, None),
        None => {
            let made = link::consented(
                None,
                &ScopeSet::default(),
                TokenAccessType::Online,
                &Resources::default(),
                None,
                ctx.entropy.link_epoch(),
            );
            (made.epoch, Some(made))
        }
    };
    let expires_at =
        access_token::expires_at(TokenAccessType::Online, ctx.now, ctx.config.policy());
    let (generation, ledger_put) = minting_ledger(ctx, partition, expires_at, false)?;
    let issued = issue_grant(
        ctx,
        partition,
        ctx.entropy.grant_id(),
        GrantTerms {
            app: &client.app,
            subject: Subject::Account(account.account_id.clone()),
            uid: Some(account.uid.clone()),
            scopes,
            link_epoch,
            pkce: false,
            resources: granted,
            refresh_bound_to: None,
            props: None,
        },
        FirstToken {
            access_type: TokenAccessType::Online,
            audience,
            generation,
            bound_to: client.proven_key().cloned(),
        },
        0,
    );
    let mut puts = issued.puts;
    puts.extend(ledger_put);
    if let Some(made) = new_link {
        puts.push(create(link_key, &Record::Link(made), None));
    }
    let audit = AuditEvent::TokensIssued {
        app: client.app.clone(),
        subject: issued.grant.subject.clone(),
        grant: issued.grant_id.clone(),
        refresh_token: false,
        access_expires_at: issued.expires_in.map(|s| ctx.now.plus(s)),
    };
    // The assertion's use first, in its own partition and transaction, created only where none
    // is: of two requests racing with it, the second finds it when it decides again.
    let issued_tokens = Decision::Commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        Ending::Tokens(Box::new(TokenBody {
            access_token: issued.access_token,
            expires_in: issued.expires_in,
            refresh_token: None,
            scope: Some(issued.grant.scopes),
            person: Some((account.account_id.clone(), account.uid.clone())),
            retried: None,
            exchanged: false,
            bound: client.proof().is_some(),
        })),
    );
    let exp = UnixTime(assertion.claims.exp);
    Ok(used_first(ctx, asserted.used.clone(), exp, issued_tokens))
}
