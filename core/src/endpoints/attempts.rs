//! Limits on failed credential checks: the token endpoint's client authentication, and the
//! host's own checks ([`Input::Attempts`](crate::Input::Attempts), its sign-in form). The counts
//! live in the host's store, one record per attempter, so they hold across the host's instances.

use crate::config::AttemptLimits;
use crate::ctx::{replace, Ctx, Decision, Ending, Flow, Via};
use crate::machines::attempts::{self, Attempter};
use crate::partition::Partition;
use crate::records::{AttemptsRecord, Record, RecordKey};
use crate::refusal::Refusal;
use crate::step::Transaction;
use crate::time::Seconds;

/// One attempter's count, as a check needs it: where it is stored and the attempter's limit.
/// Built when the request is parsed, so its key is hashed once.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    key: RecordKey,
    limit: u32,
}

/// The guards of `attempters`.
pub(crate) fn guards(attempters: &[Attempter], limits: &AttemptLimits) -> Vec<Guard> {
    attempters
        .iter()
        .map(|attempter| Guard {
            key: attempter.key(),
            limit: attempter.limit(limits),
        })
        .collect()
}

/// Loads the counts of `guards` — with `also`, the first record the request needs anyway, in
/// the same batch (each count is a partition of its own: reads may cross partitions, a
/// transaction never does) — and says how long to wait if any is at its limit.
pub(crate) fn limited(
    ctx: &Ctx<'_>,
    guards: &[Guard],
    also: Option<&RecordKey>,
) -> Flow<Option<Seconds>> {
    if guards.is_empty() {
        return Ok(None);
    }
    let keys: Vec<&RecordKey> = guards.iter().map(|g| &g.key).chain(also).collect();
    ctx.need(&keys)?;
    let window = ctx.config.policy().attempts.window;
    let mut wait = None;
    for guard in guards {
        let count = ctx.load::<AttemptsRecord>(&guard.key)?;
        if let Err(retry_after) =
            attempts::standing(count.map(|c| c.record), guard.limit, ctx.now, window)
        {
            wait = wait.max(Some(retry_after));
        }
    }
    Ok(wait)
}

/// One more failure, counted against `guards` (loaded by [`limited`]): the writes, one
/// transaction per count since each is a partition of its own, and the longest wait the new
/// counts impose, if any.
///
/// A count this request has already written (the request started over after a later count
/// lost a race) is not counted again: what it holds now includes this failure.
fn count_failure(ctx: &Ctx<'_>, guards: &[Guard]) -> Flow<(Vec<Transaction>, Option<Seconds>)> {
    let window = ctx.config.policy().attempts.window;
    let mut writes = Vec::with_capacity(guards.len());
    let mut wait = None;
    for guard in guards {
        let count = ctx.load::<AttemptsRecord>(&guard.key)?;
        let next = if ctx.written.contains(&guard.key) {
            count.map(|c| c.record.clone())
        } else {
            let next = attempts::failed(count.as_ref().map(|c| c.record), ctx.now, window);
            writes.push(Transaction {
                puts: vec![replace(
                    guard.key.clone(),
                    count.map(|c| c.version),
                    &Record::Attempts(next.clone()),
                    Some(attempts::purge_after(&next, window)),
                )],
                audit: Vec::new(),
            });
            Some(next)
        };
        if let Err(retry_after) = attempts::standing(next.as_ref(), guard.limit, ctx.now, window) {
            wait = wait.max(Some(retry_after));
        }
    }
    Ok((writes, wait))
}

/// A failed check: counted against `guards` (unless one is already at its limit, which then
/// answers for it), and answered with `ending`.
pub(crate) fn fail(ctx: &Ctx<'_>, guards: &[Guard], ending: Ending, via: Via) -> Flow<Decision> {
    let wait = limited(ctx, guards, None)?;
    // Only before the first count is written: after it, the request only finishes counting.
    if let (Some(wait), true) = (wait, ctx.written.is_empty()) {
        return Ok(Decision::End(Ending::Refused(
            Refusal::TooManyAttempts(wait),
            via,
        )));
    }
    let (writes, _) = count_failure(ctx, guards)?;
    Ok(Decision::each(writes, ending))
}

/// The host's own check ([`Input::Attempts`](crate::Input::Attempts)).
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub guards: Vec<Guard>,
    pub failed: bool,
}

impl Parsed {
    /// The partition of the count, if there is one count.
    pub fn partition(&self) -> Option<Partition> {
        match self.guards.as_slice() {
            [one] => Some(one.key.partition()),
            _ => None,
        }
    }
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    let limited_for = |wait: Option<Seconds>| match wait {
        Some(wait) => Ending::Refused(Refusal::TooManyAttempts(wait), Via::Plain),
        None => Ending::AttemptsAllowed,
    };
    let wait = limited(ctx, &parsed.guards, None)?;
    if !parsed.failed {
        return Ok(Decision::End(limited_for(wait)));
    }
    // The failure is counted even when the limit was reached meanwhile; the answer says
    // whether the next check may go ahead.
    let (writes, wait) = count_failure(ctx, &parsed.guards)?;
    Ok(Decision::each(writes, limited_for(wait)))
}
