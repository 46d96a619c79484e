//! Authorization codes: `Issued` at consent, `Redeemed` by the one exchange that wins; expired
//! from `expires_at` on. A second exchange is refused, and what the first produced is revoked.

use crate::config::Policy;
use crate::ids::{AppKey, GrantId, KeyThumbprint, RedirectUri, User};
use crate::pkce::{CodeChallenge, CodeVerifier};
use crate::props::SealedProps;
use crate::records::Resources;
use crate::records::{CodeRecord, CodeState, TokenAccessType};
use crate::refusal::Refusal;
use crate::scope::ScopeSet;
use crate::time::{is_expired, UnixTime};

/// What consent fixes in a code.
pub(crate) struct CodeTerms {
    pub app: AppKey,
    pub user: User,
    pub redirect_uri: Option<RedirectUri>,
    pub challenge: Option<CodeChallenge>,
    pub scopes: ScopeSet,
    pub access_type: TokenAccessType,
    pub link_epoch: u64,
    /// The resources named at authorization (RFC 8707), sorted, each once.
    pub resources: Resources,
    /// The key the request bound the code to (`dpop_jkt`), if any.
    pub bound_to: Option<KeyThumbprint>,
    /// The host's props for the grant, sealed, if it gave any.
    pub props: Option<SealedProps>,
}

/// Issues a code that lives for the policy's `code_ttl` from `now`.
pub(crate) fn issue(terms: CodeTerms, now: UnixTime, policy: &Policy) -> CodeRecord {
    CodeRecord {
        app: terms.app,
        account_id: terms.user.account_id,
        uid: terms.user.uid,
        redirect_uri: terms.redirect_uri,
        challenge: terms.challenge,
        scopes: terms.scopes,
        access_type: terms.access_type,
        link_epoch: terms.link_epoch,
        expires_at: now.plus(policy.code_ttl),
        state: CodeState::Issued,
        resources: terms.resources,
        bound_to: terms.bound_to,
        props: terms.props,
    }
}

/// What the client presented with the code at the token endpoint.
pub(crate) struct Exchange<'a> {
    /// The authenticated (or identified, for PKCE) app.
    pub app: &'a AppKey,
    /// `redirect_uri` as sent in the exchange.
    pub redirect_uri: Option<&'a str>,
    /// The `code_verifier`, if sent.
    pub verifier: Option<&'a CodeVerifier>,
}

/// Binds an exchange to its code: same app, the identical redirect_uri (or none, if none was
/// sent at authorization), and the PKCE verifier exactly when a challenge was given (RFC 6749
/// §4.1.3, RFC 7636 §4.6; a verifier for a challenge-less code is a downgrade, RFC 9700 §2.1.1).
/// Only a matching exchange may go on to redeem — or, for a used code, to revoke.
pub(crate) fn bind(code: &CodeRecord, exchange: &Exchange<'_>) -> Result<(), Refusal> {
    if &code.app != exchange.app {
        return Err(Refusal::CodeOfAnotherApp);
    }
    if code.redirect_uri.as_ref().map(RedirectUri::as_str) != exchange.redirect_uri {
        return Err(Refusal::RedirectUriMismatch);
    }
    match (&code.challenge, exchange.verifier) {
        (Some(_), None) => Err(Refusal::VerifierMissing),
        (Some(challenge), Some(v)) if !challenge.is_satisfied_by(v) => {
            Err(Refusal::VerifierMismatch)
        }
        (None, Some(_)) => Err(Refusal::VerifierWithoutChallenge),
        _ => Ok(()),
    }
}

/// The transition `Issued → Redeemed`, creating `grant`: refused for a code used before
/// ([`Refusal::CodeReused`]: the caller revokes what it produced) or past its expiry.
pub(crate) fn redeem(
    code: &CodeRecord,
    now: UnixTime,
    grant: GrantId,
) -> Result<CodeRecord, Refusal> {
    if let CodeState::Redeemed { .. } = code.state {
        return Err(Refusal::CodeReused);
    }
    if is_expired(code.expires_at, now) {
        return Err(Refusal::CodeExpired);
    }
    Ok(CodeRecord {
        state: CodeState::Redeemed { grant },
        ..code.clone()
    })
}
