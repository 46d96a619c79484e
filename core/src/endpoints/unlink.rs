//! Host events that end access: a user unlinking an app on the connected-apps page, or a team
//! admin unlinking it on the team-apps page.

use crate::config::Config;
use crate::ctx::{replace, Ctx, Decision, Flow};
use crate::ending::Ending;
use crate::endpoints::issue::{ended_ledger, unlinked_grants};
use crate::ids::{AccountId, AppKey};
use crate::machines::link;
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{LinkRecord, MemberRecord, Record, RecordKey};
use crate::step::{AuditEvent, Put, Transaction, Unlinker};
use crate::time::UnixTime;

/// An unlink of one app for one user.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub app: AppKey,
    pub account_id: AccountId,
    pub by: Unlinker,
    /// The key of the link (its partition hashed once, here).
    pub key: RecordKey,
}

impl Parsed {
    pub fn new(config: &Config, app: AppKey, account_id: AccountId, by: Unlinker) -> Parsed {
        let key = RecordKey::link(config.server_key(), app.clone(), account_id.clone());
        Parsed {
            app,
            account_id,
            by,
            key,
        }
    }

    /// The user's partition, where the link lies.
    pub fn partition(&self) -> Partition {
        self.key.partition()
    }
}

/// Ends every code and token of the app for the user: a new link epoch voids them all at once.
/// The grants the link lists (written before format 7) get a purge time with their refresh and
/// long-lived tokens in the same transaction, and so does the first page of the link's members
/// — the grants that would never end by themselves — [`link::SWEEP_PAGE`] of them. Further
/// pages follow, each one bounded read and one bounded transaction, until none is left; the
/// link goes last, once it holds nothing. Should the host stop midway, the pair's next unlink
/// goes on where this one stopped. Once the link is gone everything issued under it is refused
/// all the same (no link, no standing), and a new consent starts a new link at a random epoch.
pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let key = parsed.key.clone();
    // The account's ledger comes with the link: the unlink moves it on.
    ctx.need(&[&key, &RecordKey::Ledger(parsed.partition())])?;
    let Some(loaded) = ctx.load::<LinkRecord>(&key)? else {
        // Never linked (or gone, with everything it ended): nothing to end.
        return Ok(Decision::End(Ending::Unlinked));
    };
    // This request ended the epoch already (its first transaction wrote the link): sweep on.
    let (next, audit) = if ctx.written.contains(&key) {
        (loaded.record.clone(), Vec::new())
    } else {
        let audit = AuditEvent::Unlinked {
            app: parsed.app.clone(),
            account_id: parsed.account_id.clone(),
            by: parsed.by,
        };
        (link::unlinked(loaded.record), vec![audit])
    };
    // The first transaction ends the epoch, and moves the account's ledger on with it.
    let legacy = if audit.is_empty() {
        Vec::new()
    } else {
        let mut puts = unlinked_grants(ctx, key.partition(), &loaded.record.grants)?;
        puts.push(ended_ledger(ctx, key.partition())?.1);
        puts
    };
    let (next, swept) = sweep_page(ctx, &key, next)?;
    if audit.is_empty() && next.swept == loaded.record.swept {
        // Nothing left to sweep.
        return Ok(Decision::End(Ending::Unlinked));
    }
    let more = link::to_sweep(&next).is_some();
    let mut puts = vec![replace(
        key,
        Some(loaded.version),
        &Record::Link(next.clone()),
        spent_purge(ctx, &next),
    )];
    puts.extend(legacy);
    puts.extend(swept);
    let transaction = Transaction { puts, audit };
    Ok(if more {
        Decision::Continue(transaction, Ending::Unlinked)
    } else {
        Decision::Commit(transaction, Ending::Unlinked)
    })
}

/// The next page of members to sweep, if any: `link` with it counted as swept, and the writes
/// that give each member, its grant and its tokens a purge time (a member whose grant is gone
/// already, purged after a revocation, went with it).
fn sweep_page(ctx: &Ctx<'_>, key: &RecordKey, link: LinkRecord) -> Flow<(LinkRecord, Vec<Put>)> {
    let (Some(places), RecordKey::Link(partition, app, account)) = (link::to_sweep(&link), key)
    else {
        return Ok((link, Vec::new()));
    };
    let member_keys: Vec<RecordKey> = places
        .clone()
        .map(|place| RecordKey::Member(*partition, app.clone(), account.clone(), place))
        .collect();
    ctx.need(&member_keys.iter().collect::<Vec<_>>())?;
    let mut grants = Vec::with_capacity(member_keys.len());
    for member in &member_keys {
        if let Some(found) = ctx.load::<MemberRecord>(member)? {
            grants.push(found.record.grant.clone());
        }
    }
    let puts = unlinked_grants(ctx, *partition, &grants)?;
    Ok((
        LinkRecord {
            swept: places.end,
            ..link
        },
        puts,
    ))
}

/// The link's purge time: once it holds nothing (no consent since, nothing left to sweep), an
/// access token's lifetime away, with what it ended; else none.
fn spent_purge(ctx: &Ctx<'_>, link: &LinkRecord) -> Option<UnixTime> {
    link::is_spent(link).then(|| ctx.now.plus(ctx.config.policy().access_token_ttl))
}
