//! Host events that end access: a user unlinking an app on the connected-apps page, or a team
//! admin unlinking it on the team-apps page.

use crate::ctx::{commit, respond, Ctx, Flow};
use crate::ids::{AccountId, AppKey};
use crate::machines::link;
use crate::records::{LinkRecord, Record, RecordKey};
use crate::step::{AuditEvent, Outcome, Put, Step, Transaction, Unlinker};

/// Ends every code and token of `app` for `account_id` with one write: a new link epoch.
pub(crate) fn unlink(
    ctx: &mut Ctx<'_>,
    app: &AppKey,
    account_id: &AccountId,
    by: Unlinker,
) -> Flow<Step> {
    let key = RecordKey::Link(app.clone(), account_id.clone());
    let Some(loaded) = ctx.load::<LinkRecord>(&key)? else {
        // Never linked: nothing was issued, nothing to end.
        return respond(Outcome::Unlinked);
    };
    let audit = AuditEvent::Unlinked {
        app: app.clone(),
        account_id: account_id.clone(),
        by,
    };
    let put = Put::replace(
        key,
        Some(loaded.version),
        Record::Link(link::unlinked(loaded.record)),
    );
    commit(
        Transaction {
            puts: vec![put],
            audit: vec![audit],
        },
        Outcome::Unlinked,
    )
}
