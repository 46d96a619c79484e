//! An account's ledger ([`LedgerRecord`]): a generation that every end of access in the
//! account's partition moves on, and that every short-lived access token records when minted.
//! While the two match, nothing of the account has ended since the mint, and a bearer check
//! decides on the token alone.
//!
//! Why a mint need not write it: a mint reads the ledger before the grant and the link it
//! mints under. An end that commits after the ledger read moves the ledger past the token's
//! generation, so the token is never vouched for; one that commits before it is seen in the
//! grant or the link the mint reads next, so nothing is minted. A mint writes the ledger only
//! to create it (where it is absent: conditional on that, as every end's write is on what it
//! read) or to keep it past the new token's expiry — at most once per access-token lifetime.

use crate::records::LedgerRecord;
use crate::time::{Seconds, UnixTime};

/// The ledger an end leaves: the generation moved on (a new ledger at `fresh`, random, where
/// there was none), kept at least two access-token lifetimes (`ttl`) from `now`, so that the
/// mints that usually follow an end (a new consent, a refresh) need not write it again.
pub(crate) fn ended(
    found: Option<&LedgerRecord>,
    fresh: u64,
    now: UnixTime,
    ttl: Seconds,
) -> LedgerRecord {
    let soonest = now.plus(Seconds(ttl.0.saturating_mul(2)));
    match found {
        Some(ledger) => LedgerRecord {
            generation: ledger.generation.wrapping_add(1),
            kept_until: ledger.kept_until.max(soonest),
        },
        None => LedgerRecord {
            generation: fresh,
            kept_until: soonest,
        },
    }
}

/// A mint of an access token, as the ledger sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Minting {
    /// The generation the token records (`None`: a long-lived token, always checked against its
    /// grant and link).
    pub generation: Option<u64>,
    /// The ledger to write, if the mint must write it.
    pub write: Option<LedgerRecord>,
}

/// A mint, at the ledger `found` (read before the grant and link: see the module docs), of a
/// token expiring at `expires_at` (`None`: long-lived). `always`: the mint read the ledger with
/// its grant or link, not before them, so it must write the ledger at the version read,
/// whatever it holds (a racing end then conflicts with it).
pub(crate) fn minting(
    found: Option<&LedgerRecord>,
    fresh: u64,
    expires_at: Option<UnixTime>,
    ttl: Seconds,
    always: bool,
) -> Minting {
    let Some(expires_at) = expires_at else {
        return Minting {
            generation: None,
            write: None,
        };
    };
    // Kept a lifetime past the expiry: the next mints within that lifetime write nothing.
    let kept_until = expires_at.plus(ttl);
    let (generation, write) = match found {
        None => (fresh, true),
        Some(ledger) => (ledger.generation, always || expires_at > ledger.kept_until),
    };
    Minting {
        generation: Some(generation),
        write: write.then(|| LedgerRecord {
            generation,
            kept_until: found.map_or(kept_until, |l| l.kept_until.max(kept_until)),
        }),
    }
}

/// Whether the ledger (at `ledger`'s generation, `None`: absent) vouches for a token minted at
/// `token`'s: nothing of the account has ended since.
pub(crate) fn vouches(token: Option<u64>, ledger: Option<u64>) -> bool {
    token.is_some() && token == ledger
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Seconds = Seconds(100);

    fn at(generation: u64, kept_until: u64) -> LedgerRecord {
        LedgerRecord {
            generation,
            kept_until: UnixTime(kept_until),
        }
    }

    #[test]
    fn an_end_moves_the_generation_on_or_starts_a_ledger_at_random() {
        assert_eq!(
            ended(Some(&at(7, 5_000)), 99, UnixTime(1_000), TTL),
            at(8, 5_000)
        );
        assert_eq!(
            ended(Some(&at(u64::MAX, 0)), 99, UnixTime(1_000), TTL),
            at(0, 1_200)
        );
        assert_eq!(ended(None, 99, UnixTime(1_000), TTL), at(99, 1_200));
    }

    #[test]
    fn a_mint_writes_only_to_create_the_ledger_or_keep_it_past_its_token() {
        let expires = Some(UnixTime(1_100));
        // Kept until 1 200: a token expiring at 1 100 needs nothing written, nor one at 1 200.
        let kept = at(7, 1_200);
        assert_eq!(
            minting(Some(&kept), 99, expires, TTL, false),
            Minting {
                generation: Some(7),
                write: None
            }
        );
        assert_eq!(
            minting(Some(&kept), 99, Some(UnixTime(1_200)), TTL, false).write,
            None
        );
        // One expiring a second later keeps it a lifetime past its expiry.
        assert_eq!(
            minting(Some(&kept), 99, Some(UnixTime(1_201)), TTL, false).write,
            Some(at(7, 1_301))
        );
        // Read beside the grant or link: written whatever it holds, never kept shorter.
        assert_eq!(
            minting(Some(&kept), 99, expires, TTL, true).write,
            Some(at(7, 1_200))
        );
        assert_eq!(
            minting(None, 99, expires, TTL, false),
            Minting {
                generation: Some(99),
                write: Some(at(99, 1_200))
            }
        );
        // A long-lived token is never vouched for, and writes nothing.
        assert_eq!(
            minting(None, 99, None, TTL, true),
            Minting {
                generation: None,
                write: None
            }
        );
    }

    #[test]
    fn only_the_generation_a_token_was_minted_at_vouches_for_it() {
        assert!(vouches(Some(7), Some(7)));
        assert!(!vouches(Some(7), Some(8)));
        assert!(!vouches(Some(7), None));
        assert!(!vouches(None, None));
    }
}
