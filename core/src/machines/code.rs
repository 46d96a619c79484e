//! Authorization codes: `Issued` at consent, `Redeemed` by the one exchange that wins; expired
//! from `expires_at` on. A second exchange is refused and revokes what the first produced.

use crate::ids::{AppKey, GrantId, RedirectUri, User};
use crate::pkce::{CodeChallenge, CodeVerifier};
use crate::records::{CodeRecord, CodeState, TokenAccessType};
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
}

/// Issues a code that lives until `now + ttl`.
pub(crate) fn issue(terms: CodeTerms, expires_at: UnixTime) -> CodeRecord {
    CodeRecord {
        app: terms.app,
        account_id: terms.user.account_id,
        uid: terms.user.uid,
        redirect_uri: terms.redirect_uri,
        challenge: terms.challenge,
        scopes: terms.scopes,
        access_type: terms.access_type,
        link_epoch: terms.link_epoch,
        expires_at,
        state: CodeState::Issued,
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

/// Why an exchange does not match its code. Each is `invalid_grant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mismatch {
    OtherApp,
    RedirectUri,
    VerifierMissing,
    VerifierWrong,
    VerifierWithoutChallenge,
}

impl Mismatch {
    pub fn describe(self) -> &'static str {
        match self {
            Mismatch::OtherApp => "the code was issued to another app",
            Mismatch::RedirectUri => "redirect_uri differs from the authorization request",
            Mismatch::VerifierMissing => "code_verifier is required for this code",
            Mismatch::VerifierWrong => "code_verifier does not match the code_challenge",
            Mismatch::VerifierWithoutChallenge => {
                "code_verifier was sent for a code issued without code_challenge"
            }
        }
    }
}

/// Binds an exchange to its code: same app, the identical redirect_uri (or none, if none was
/// sent at authorization), and the PKCE verifier exactly when a challenge was given (RFC 6749
/// §4.1.3, RFC 7636 §4.6; a verifier for a challenge-less code is a downgrade, RFC 9700 §2.1.1).
/// Only a matching exchange may go on to redeem — or, for a used code, to revoke.
pub(crate) fn matches(code: &CodeRecord, exchange: &Exchange<'_>) -> Result<(), Mismatch> {
    if &code.app != exchange.app {
        return Err(Mismatch::OtherApp);
    }
    if code.redirect_uri.as_ref().map(RedirectUri::as_str) != exchange.redirect_uri {
        return Err(Mismatch::RedirectUri);
    }
    match (&code.challenge, exchange.verifier) {
        (Some(_), None) => Err(Mismatch::VerifierMissing),
        (Some(challenge), Some(v)) if !challenge.is_satisfied_by(v) => Err(Mismatch::VerifierWrong),
        (None, Some(_)) => Err(Mismatch::VerifierWithoutChallenge),
        _ => Ok(()),
    }
}

/// Whether the code can no longer be exchanged at `now`.
pub(crate) fn has_expired(code: &CodeRecord, now: UnixTime) -> bool {
    is_expired(code.expires_at, now)
}

/// The transition `Issued → Redeemed`.
pub(crate) fn redeemed(code: &CodeRecord, grant: GrantId) -> CodeRecord {
    CodeRecord {
        state: CodeState::Redeemed { grant },
        ..code.clone()
    }
}
