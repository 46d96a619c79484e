//! Host events that end access: a user unlinking an app on the connected-apps page, or a team
//! admin unlinking it on the team-apps page.

use crate::ctx::{replace, Ctx, Decision, Ending, Flow};
use crate::endpoints::issue::unlinked_grants;
use crate::ids::{AccountId, AppKey};
use crate::machines::link;
use crate::partition::Partition;
use crate::records::{LinkRecord, Record, RecordKey};
use crate::step::{AuditEvent, Transaction, Unlinker};

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
    pub fn new(app: AppKey, account_id: AccountId, by: Unlinker) -> Parsed {
        let key = RecordKey::link(app.clone(), account_id.clone());
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

/// Ends every code and token of the app for the user: a new link epoch voids them all at once;
/// the grants the link lists (those that would never end by themselves) get a purge time with
/// their refresh and long-lived tokens, in the same transaction, and so does the link: once it
/// is gone everything issued under it is refused all the same (no link, no standing), and a
/// new consent starts a new link at a random epoch.
pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let key = parsed.key.clone();
    let Some(loaded) = ctx.load::<LinkRecord>(&key)? else {
        // Never linked: nothing was issued, nothing to end.
        return Ok(Decision::End(Ending::Unlinked));
    };
    let audit = AuditEvent::Unlinked {
        app: parsed.app.clone(),
        account_id: parsed.account_id.clone(),
        by: parsed.by,
    };
    let ended = unlinked_grants(ctx, key.partition(), &loaded.record.grants)?;
    let mut puts = vec![replace(
        key,
        Some(loaded.version),
        &Record::Link(link::unlinked(loaded.record)),
        Some(ctx.now.plus(ctx.config.policy().access_token_ttl)),
    )];
    puts.extend(ended);
    Ok(Decision::Commit(
        Transaction {
            puts,
            audit: vec![audit],
        },
        Ending::Unlinked,
    ))
}
