//! Refresh tokens: minted with an offline grant, bound to its app and user, never expiring by
//! time; they end only with their grant (revocation, code reuse, unlink). Reusable as SPEC.md
//! has them; in the standards profile a refresh may rotate the token instead (RFC 9700
//! §4.14.2): the grant then names its current token and its last rotation.

use crate::config::{Policy, RotatedClients, Rotation};
use crate::credentials::{RefreshTokenDigest, RotationSeed};
use crate::ids::{AppKey, GrantId};
use crate::machines::grant;
use crate::prelude::*;
use crate::records::{GrantRecord, LastRotation, RefreshTokenRecord};
use crate::refusal::Refusal;
use crate::scope::{ScopeSet, OFFLINE_ACCESS};
use crate::time::{is_expired, Seconds, UnixTime};

/// The record of the refresh token of `grant`.
pub(crate) fn mint(grant_id: &GrantId, grant: &GrantRecord) -> RefreshTokenRecord {
    RefreshTokenRecord {
        grant: grant_id.clone(),
        app: grant.app.clone(),
        subject: grant.subject.clone(),
    }
}

/// The token was issued to the app presenting it (SPEC.md, Authentication 5).
pub(crate) fn check_app(token: &RefreshTokenRecord, app: &AppKey) -> Result<(), Refusal> {
    if &token.app == app {
        Ok(())
    } else {
        Err(Refusal::RefreshTokenOfAnotherApp)
    }
}

/// A client that proved only its `client_id` may use the token only if the grant came from a
/// PKCE exchange (SPEC.md: PKCE replaces the secret).
pub(crate) fn check_client(grant: &GrantRecord, has_secret: bool) -> Result<(), Refusal> {
    if has_secret || grant.pkce {
        Ok(())
    } else {
        Err(Refusal::SecretRequired)
    }
}

/// The scopes of the new access token: the grant's, or fewer when asked (RFC 6749 §6), never
/// more. Where the profile offers `offline_access`, asking it again on a refresh asks for what
/// the presented refresh token already is, so it is held even by a grant whose refresh token
/// came from the client's `refresh_token` grant type rather than from that scope (MCP clients
/// may repeat their authorization's `scope`); it is never added to a grant that lacks it.
pub(crate) fn scopes(
    grant: &GrantRecord,
    requested: Option<&ScopeSet>,
    offline_access_offered: bool,
) -> Result<ScopeSet, Refusal> {
    let Some(asked) = requested else {
        return Ok(grant.scopes.clone());
    };
    let implied = offline_access_offered && !grant.scopes.iter().any(|n| n == OFFLINE_ACCESS);
    let narrower = if implied {
        asked.without(OFFLINE_ACCESS)
    } else {
        asked.clone()
    };
    if narrower.is_subset(&grant.scopes) {
        Ok(narrower)
    } else {
        Err(Refusal::ScopeWidened)
    }
}

/// Under an idle lifetime the grant ends at its idle deadline (exact boundary: refused from
/// `idle_until` on).
pub(crate) fn check_idle(grant: &GrantRecord, now: UnixTime) -> Result<(), Refusal> {
    match grant.idle_until {
        Some(at) if is_expired(at, now) => Err(Refusal::RefreshTokenIdle),
        _ => Ok(()),
    }
}

/// The grant's idle deadline after its refresh token is used at `now`: moved a whole idle
/// lifetime on once half of it has passed (so a client refreshing every few minutes does not
/// write the grant each time); `None` while it stays (or without an idle lifetime).
pub(crate) fn idle_moved(grant: &GrantRecord, now: UnixTime, policy: &Policy) -> Option<UnixTime> {
    let idle = policy.refresh_idle_lifetime?;
    let until = grant.idle_until?;
    let half = Seconds(idle.0 / 2);
    (until.seconds_from(now).0 < half.0).then(|| now.plus(idle))
}

/// Whether this refresh rotates the token: never without a rotation policy (the reference
/// profile); for a refresh made without a client secret, or for every one.
pub(crate) fn rotates(rotation: Option<&Rotation>, has_secret: bool) -> bool {
    match rotation.map(|r| r.clients) {
        None => false,
        Some(RotatedClients::Public) => !has_secret,
        Some(RotatedClients::All) => true,
    }
}

/// Where the presented token stands in its grant's line of rotations.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Position<'g> {
    /// The grant's current token.
    Current,
    /// The token the grant's last rotation superseded, presented again within the retry
    /// window: that rotation's answer is given again.
    Retry(&'g LastRotation),
    /// A superseded token at any other time: in two hands.
    Reused,
}

/// Where `presented` stands in `grant`, at `now`. The retry window is half-open: a retry at
/// `at + retry_window` is too late. Without a rotation policy there is no window, but a token
/// superseded while there was one stays superseded.
pub(crate) fn position<'g>(
    grant: &'g GrantRecord,
    presented: &RefreshTokenDigest,
    now: UnixTime,
    rotation: Option<&Rotation>,
) -> Position<'g> {
    // Grants written before refresh digests were kept name none: their one token is current.
    if grant
        .refresh_token
        .is_none_or(|current| &current == presented)
    {
        return Position::Current;
    }
    match (&grant.rotation, rotation) {
        (Some(last), Some(policy))
            if &last.superseded == presented && now < last.at.plus(policy.retry_window) =>
        {
            Position::Retry(last)
        }
        _ => Position::Reused,
    }
}

/// A rotation a refresh makes: the seed its tokens are derived from, and its successor.
pub(crate) struct Rotated<'r> {
    pub seed: RotationSeed,
    pub successor: RefreshTokenDigest,
    pub policy: &'r Rotation,
}

/// What a refresh of a live grant's current token leaves behind, apart from its new access
/// token: the grant as it changes, and the purge times of the records that go with it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refreshed {
    /// The grant after the refresh, when it changes (its idle deadline moved on, its token
    /// rotated, or its last rotation's window closed); written at the version read, so of two
    /// refreshes racing with one token one rotates and the other, deciding again, finds itself
    /// its retry.
    pub grant: Option<GrantRecord>,
    /// When the grant's records may be purged (`None`: kept): the grant itself, a successor,
    /// and the member record when it moves.
    pub kept_until: Option<UnixTime>,
    /// The presented token's record is written again with this purge time: superseded, it is
    /// kept as long as its reuse is to be caught; or it moves with the grant's new idle
    /// deadline. `None`: it stays as it is.
    pub presented_until: Option<Option<UnixTime>>,
    /// The grant's member place, when its member record moves with the grant's new deadline.
    pub member_moves: Option<u64>,
}

/// The refresh of `grant`'s current token `presented` at `now`, rotating it if `rotation` says
/// so (see [`rotates`]).
pub(crate) fn refreshed(
    grant: &GrantRecord,
    presented: RefreshTokenDigest,
    now: UnixTime,
    policy: &Policy,
    rotation: Option<Rotated<'_>>,
) -> Refreshed {
    let idle_until = idle_moved(grant, now, policy);
    let mut next = idle_until.map(|at| GrantRecord {
        idle_until: Some(at),
        ..grant.clone()
    });
    let kept_until = grant::purge_after(next.as_ref().unwrap_or(grant), policy);
    let presented_until = match rotation {
        Some(rotated) => {
            next = Some(GrantRecord {
                refresh_token: Some(rotated.successor),
                rotation: Some(Box::new(LastRotation {
                    superseded: presented,
                    at: now,
                    seed: rotated.seed,
                })),
                ..next.unwrap_or_else(|| grant.clone())
            });
            Some(Some(now.plus(rotated.policy.reuse_detection)))
        }
        None => {
            if grant.rotation.is_some() {
                // The current token used without rotating (a confidential client with its
                // secret): its predecessor's retry window closes all the same, so the
                // superseded token now revokes the grant wherever it turns up.
                next = Some(GrantRecord {
                    rotation: None,
                    ..next.unwrap_or_else(|| grant.clone())
                });
            }
            idle_until.map(|_| kept_until)
        }
    };
    Refreshed {
        grant: next,
        kept_until,
        presented_until,
        member_moves: idle_until.and(grant.member),
    }
}
