//! Client authentication at the token endpoint and the endpoints that share its rules
//! (revocation, introspection): the parameters of a form, the client identified and its secret
//! checked in constant time, and a failure counted against its source.

use crate::config::{App, Config};
use crate::credentials::{AssertionDigest, ClientSecret, SecretDigest};
use crate::ctx::{create, is_stored, Ctx, Decision, Flow, Need};
use crate::dpop::Proof;
use crate::ending::{Ending, Via};
use crate::endpoints::attempts::{self, Guard};
use crate::endpoints::within_limit;
use crate::ids::{AppKey, KeyThumbprint};
use crate::jose::{Assertion, ClientKey};
use crate::prelude::*;
use crate::records::{AppRecord, AssertionRecord, Record, RecordKey};
use crate::refusal::Refusal;
use crate::routes::TOKEN;
use crate::step::{Transaction, Verify};
use crate::time::{Seconds, UnixTime};
use crate::wire::client_auth::{self, CredentialError};
use crate::wire::form::{is_form_content_type, Params};
use crate::wire::http::HttpRequest;

/// The client as authenticated: by its secret, or only identified by `client_id` (PKCE). A
/// stored app (a client that registered itself) is checked once its record is read, in the
/// batch of the request's first records ([`verify`]).
#[derive(Clone, Debug)]
pub(crate) struct Client {
    pub app: AppKey,
    pub has_secret: bool,
    via_basic: bool,
    /// For an app that is not configured: what to check against its record.
    stored: Option<Box<StoredCheck>>,
    /// The DPoP proof the request came with (RFC 9449), read and checked against the request;
    /// its time, nonce, signature and `jti` are checked when the request is decided.
    pub proof: Option<Box<Proof>>,
}

/// The check of a stored app's client authentication: the digest of the secret presented, or
/// the client assertion and where its use is recorded, if any; and the failure to count should
/// it not hold.
#[derive(Clone, Debug)]
struct StoredCheck {
    secret: Option<SecretDigest>,
    assertion: Option<(Box<Assertion>, RecordKey)>,
    failed: FailedClient,
}

/// How far ahead a client assertion may expire: a longer-lived one is refused (it could be
/// replayed for that long were its record lost; RFC 7523 §3 leaves the bound to the server).
const MAX_ASSERTION_LIFETIME: Seconds = Seconds(3600);

impl Client {
    /// Whether the client arrived unannounced (registered itself, or named by a document).
    pub fn arrived_unannounced(&self) -> bool {
        self.stored.is_some()
    }

    /// The key the request proved it holds (DPoP): what the tokens it gets are bound to.
    pub fn proven_key(&self) -> Option<&KeyThumbprint> {
        self.proof().map(|proof| &proof.thumbprint)
    }

    /// The DPoP proof the request came with. (Always `None` in a build without the
    /// `unannounced` feature, which reads none: asked here so that it links nothing of them.)
    pub fn proof(&self) -> Option<&Proof> {
        self.proof
            .as_deref()
            .filter(|_| cfg!(feature = "unannounced"))
    }

    pub fn refuse(&self, refusal: Refusal) -> Ending {
        Ending::Refused(
            refusal,
            Via::Token {
                basic: self.via_basic,
            },
        )
    }
}

/// A client authentication that failed (a wrong secret, an unknown app, a secret for a public
/// app): counted against the source, then `invalid_client`.
#[derive(Clone, Debug)]
pub(crate) struct FailedClient {
    via_basic: bool,
    guards: Vec<Guard>,
}

/// Counts the failure, then refuses.
pub(crate) fn decide_failed(failed: &FailedClient, ctx: &Ctx<'_>) -> Flow<Decision> {
    let via = Via::Token {
        basic: failed.via_basic,
    };
    let ending = Ending::Refused(Refusal::ClientAuthenticationFailed, via.clone());
    attempts::fail(ctx, &failed.guards, ending, via)
}

pub(crate) fn refuse<T>(refusal: Refusal) -> Result<T, Ending> {
    Err(Ending::Refused(refusal, Via::Token { basic: false }))
}

/// Within the input limit, the parameters — for the token endpoint and the endpoints that
/// share its client authentication (the route table lets only `POST` through to them).
pub(crate) fn form_parameters<'r>(
    config: &Config,
    request: &'r HttpRequest,
) -> Result<Params<'r>, Ending> {
    within_limit(config, request, Via::Token { basic: false })?;
    parameters(config, request)
}

/// The request's parameters: the form body (RFC 6749 §4.1.3, §6), or — for clients such as the
/// official Dropbox SDKs, which send an empty body — the URL query, if the policy allows. Never
/// both: a request that splits its parameters cannot say which copy counts.
fn parameters<'r>(config: &Config, request: &'r HttpRequest) -> Result<Params<'r>, Ending> {
    let in_query = !request.query.is_empty();
    if request.body.is_empty() && in_query {
        if !config.policy().token_parameters_in_query {
            return refuse(Refusal::ParametersInQuery);
        }
        return Ok(Params::parse(request.query.as_bytes()));
    }
    if in_query {
        return refuse(Refusal::ParametersSplit);
    }
    let mut content_types = request.header_values("content-type");
    let form = content_types.next().is_some_and(is_form_content_type);
    if !form || content_types.next().is_some() {
        return refuse(Refusal::NotAForm);
    }
    Ok(Params::parse(&request.body))
}

/// Identifies the client and checks its secret in constant time. A client without a secret is
/// only identified; the grant decides whether PKCE stands in for the secret.
/// The client, or — when its secret (or its very key) is wrong — the failure to count.
pub(crate) fn authenticate(
    config: &Config,
    request: &HttpRequest,
    params: &Params,
) -> Result<Result<Client, FailedClient>, Ending> {
    let presented = client_auth::presented(request, params, config.unannounced().is_some())
        .map_err(|e| {
            let (refusal, basic) = match e {
                CredentialError::Missing => (Refusal::ClientAuthenticationMissing, false),
                CredentialError::MalformedBasic => (Refusal::MalformedBasic, true),
                CredentialError::MultipleMethods => (Refusal::MultipleClientAuthentications, false),
                CredentialError::ConflictingClientId => (Refusal::ConflictingClientId, false),
                CredentialError::SecretWithoutId => (Refusal::SecretWithoutClientId, false),
                CredentialError::UnsupportedScheme => {
                    (Refusal::UnsupportedAuthenticationScheme, false)
                }
                CredentialError::Repeated(name) => (Refusal::Repeated(name), false),
            };
            Ending::Refused(refusal, Via::Token { basic })
        })?;
    // A failure is counted against its source: at the limit, failures are answered 429. Never
    // against the app, whose key is public: anyone could make its own requests wait. And no
    // count holds back a correct secret — secrets are high-entropy, so counting guesses buys
    // nothing, and no one's failures may lock a client out.
    let failure = || FailedClient {
        via_basic: presented.via_basic,
        guards: attempts::source_guards(config, request.source.as_deref()),
    };
    let Some(app) = config.app(&presented.client_id) else {
        // Not configured: a stored app, if clients may arrive unannounced, checked once read.
        let key = AppKey::new(presented.client_id.as_str()).ok();
        let assertion = match presented.assertion {
            None => None,
            Some(Ok(assertion)) => {
                let used = AssertionDigest::of(
                    config.server_key(),
                    &presented.client_id,
                    &assertion.claims.jti,
                );
                Some((assertion, RecordKey::Assertion(used)))
            }
            // Not a client assertion at all: no client proves itself so.
            Some(Err(())) => return Ok(Err(failure())),
        };
        return Ok(match key.filter(|key| is_stored(config, key)) {
            Some(app) => Ok(Client {
                app,
                has_secret: presented.secret.is_some() || assertion.is_some(),
                via_basic: presented.via_basic,
                stored: Some(Box::new(StoredCheck {
                    secret: presented.secret.as_ref().map(ClientSecret::digest),
                    assertion,
                    failed: failure(),
                })),
                proof: None,
            }),
            None => Err(failure()),
        });
    };
    // A configured app has a secret or none: no keys.
    if presented.assertion.is_some() {
        return Ok(Err(failure()));
    }
    match (&presented.secret, &app.secret_digest) {
        (None, _) => {}
        (Some(secret), Some(digest)) if digest.matches(secret) => {}
        (Some(_), _) => return Ok(Err(failure())),
    }
    Ok(Ok(Client {
        app: app.key.clone(),
        has_secret: presented.secret.is_some(),
        via_basic: presented.via_basic,
        stored: None,
        proof: None,
    }))
}

/// The client's app, its authentication checked: a configured app at once (it was checked when
/// parsed), a stored one once its record is read — in one batch with `beside`, the request's
/// first records, so that it costs no round trip of its own. `Err`: the failure to count.
pub(crate) fn verify<'a>(
    ctx: &Ctx<'a>,
    client: &Client,
    beside: &[&RecordKey],
) -> Flow<Result<&'a App, FailedClient>> {
    // (A build without clients that arrive unannounced has no stored app to check.)
    let stored = client
        .stored
        .as_ref()
        .filter(|_| cfg!(feature = "unannounced"));
    let Some(check) = stored else {
        // The configuration cannot change within a request: the app found when parsing.
        return Ok(ctx.config.app(client.app.as_str()).ok_or(FailedClient {
            via_basic: client.via_basic,
            guards: Vec::new(),
        }));
    };
    let mut batch = beside.to_vec();
    if let Some((_, used)) = &check.assertion {
        batch.push(used);
    }
    ctx.need_with_app(&batch, &client.app)?;
    let failed = || Ok(Err(check.failed.clone()));
    let Some(record) = ctx.stored_app(&client.app)? else {
        return failed();
    };
    let holds = match (&check.secret, &check.assertion, record.assertion_keys()) {
        // Its keys prove it, and nothing else does (CIMD §6.2: the registered type, always).
        (None, Some((assertion, used)), Some(_)) => {
            if !assertion_holds(ctx, &client.app, assertion)? {
                return failed();
            }
            // Once: a used assertion's record, not written by this very request, refuses it.
            ctx.load::<AssertionRecord>(used)?.is_none() || ctx.written.contains(used)
        }
        (_, _, Some(_)) | (_, Some(_), None) => false,
        // RFC 6749 §3.2.1: a client given a secret authenticates with it on every request,
        // PKCE or not — a code_verifier proves who started the flow, not who the client is.
        (None, None, None) => record.app.secret_digest.is_none(),
        (Some(presented), None, None) => record
            .app
            .secret_digest
            .as_ref()
            .is_some_and(|digest| digest.is(presented)),
    };
    if holds {
        Ok(Ok(&record.app))
    } else {
        failed()
    }
}

/// Whether a client assertion of `client` holds (RFC 7523 §3): issued by the client about
/// itself, for this server, not expired nor too long-lived nor early, signed by one of its keys
/// (the signature is the host's to verify).
fn assertion_holds(ctx: &Ctx<'_>, client: &AppKey, assertion: &Assertion) -> Flow<bool> {
    if !claims_hold(ctx, client, assertion) {
        return Ok(false);
    }
    // The key its header names, or the only one of its algorithm (its keys fetched first if
    // they are by reference: only for an assertion that holds but for its signature).
    let keys = ctx.assertion_keys(client, |key| signs(key, assertion))?;
    let mut candidates = keys
        .unwrap_or_default()
        .iter()
        .filter(|key| signs(key, assertion));
    let (Some(key), None) = (candidates.next(), candidates.next()) else {
        return Ok(false);
    };
    ctx.signature(|| Verify {
        alg: assertion.alg,
        key: key.jwk.clone(),
        message: assertion.signing_input.clone(),
        signature: assertion.signature.clone(),
    })
}

/// Whether a client assertion's claims hold for `client`, this server and now (its signature
/// aside).
fn claims_hold(ctx: &Ctx<'_>, client: &AppKey, assertion: &Assertion) -> bool {
    let claims = &assertion.claims;
    let Some(issuer) = ctx.config.issuer() else {
        return false;
    };
    // The audience: this server, by its issuer identifier (RFC 7523bis) or its token
    // endpoint's URL (RFC 7523 §3, as most clients still send).
    let token_endpoint = format!("{}{TOKEN}", issuer.origin());
    let for_us = claims
        .aud
        .iter()
        .any(|aud| aud == issuer.as_str() || *aud == token_endpoint);
    let now = ctx.now.0;
    let timely = now < claims.exp
        && claims.exp <= now.saturating_add(MAX_ASSERTION_LIFETIME.0)
        && claims.nbf.is_none_or(|nbf| nbf <= now);
    claims.iss == client.as_str() && claims.sub == client.as_str() && for_us && timely
}

/// A machine named by a metadata document may first arrive at the token endpoint, where no
/// person signed in to have its document fetched: its document, not kept (or expired unused),
/// is fetched first — only where clients that arrive unannounced may use the client credentials
/// grant, for a client assertion whose claims hold for this client and now, and counted against
/// the request's source as a failure is, so that a source at its limit fetches nothing and one
/// source's first contacts are as few as its failures. `Ok`: nothing to fetch (the failure
/// stands).
pub(crate) fn first_contact(ctx: &Ctx<'_>, client: &Client) -> Flow<()> {
    let assertion = client
        .stored
        .as_ref()
        .filter(|_| cfg!(feature = "unannounced"))
        .and_then(|check| check.assertion.as_ref());
    let Some((assertion, _)) = assertion else {
        return Ok(());
    };
    let machines = ctx
        .config
        .client_credentials()
        .is_some_and(|grant| grant.unannounced);
    let Some(record) = ctx.app_record(&client.app) else {
        return Ok(());
    };
    if !machines
        || client.app.document_url().is_none()
        || ctx.written.contains(&record)
        || !claims_hold(ctx, &client.app, assertion)
        || ctx.stored_app(&client.app)?.is_some()
    {
        return Ok(());
    }
    let version = ctx.load::<AppRecord>(&record)?.map(|loaded| loaded.version);
    Err(Box::new(Need::Document {
        app: client.app.clone(),
        record,
        version,
        counted: true,
    }))
}

/// Whether `key` may have signed `assertion`: of its algorithm, and the key its header names
/// if it names one.
pub(crate) fn signs(key: &ClientKey, assertion: &Assertion) -> bool {
    key.alg == assertion.alg
        && (assertion.kid.is_none() || key.kid.as_deref() == assertion.kid.as_deref())
}

/// `decision`, with the client assertion it was authenticated by recorded as used first: its
/// own transaction (its own partition), created only where none is, so that a racing request
/// with the same assertion loses and is refused when it decides again.
pub(crate) fn consume_assertion(ctx: &Ctx<'_>, client: &Client, decision: Decision) -> Decision {
    let Some((assertion, used)) = client
        .stored
        .as_ref()
        .filter(|_| cfg!(feature = "unannounced"))
        .and_then(|check| check.assertion.as_ref())
    else {
        return decision;
    };
    used_first(ctx, used.clone(), UnixTime(assertion.claims.exp), decision)
}

/// `decision`, with a JWT that may be used once (a client assertion, a DPoP proof) recorded as
/// used under `used` first, until `expires_at`: a racing request with the same JWT loses and is
/// refused when it decides again. Not again by a request that recorded it already, deciding again
/// after its later write lost a race: that record is its own, and creating it a second time
/// would conflict with every try until the request gave up (503).
pub(crate) fn used_first(
    ctx: &Ctx<'_>,
    used: RecordKey,
    expires_at: UnixTime,
    decision: Decision,
) -> Decision {
    if ctx.written.contains(&used) {
        return decision;
    }
    let record = Record::Assertion(AssertionRecord { expires_at });
    let first = Transaction {
        puts: vec![create(used, &record, Some(expires_at))],
        audit: Vec::new(),
    };
    match decision {
        Decision::End(ending) => Decision::Each(vec![first], ending),
        Decision::Commit(transaction, ending) => Decision::Each(vec![first, transaction], ending),
        Decision::Each(mut transactions, ending) => {
            transactions.insert(0, first);
            Decision::Each(transactions, ending)
        }
        continuing @ Decision::Continue(..) => continuing,
    }
}
