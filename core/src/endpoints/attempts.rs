//! Limits on failed credential checks: the token endpoint's client authentication, and the
//! host's own checks ([`Input::Attempts`](crate::Input::Attempts), its sign-in form). The counts
//! live in the host's store, one record per attempter, so they hold across the host's instances.

use crate::config::AttemptLimits;
use crate::ctx::{replace, Ctx, Decision, Ending, Flow, Via};
use crate::machines::attempts::{self, Attempter};
use crate::records::{AttemptsRecord, Record, RecordKey};
use crate::refusal::Refusal;
use crate::step::{Put, Transaction};
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
/// the same batch — and says how long to wait if any is at its limit.
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

/// The counts of `guards` (loaded by [`limited`]) after one more failure, with the versions
/// they were read at.
fn after_failure(ctx: &Ctx<'_>, guards: &[Guard]) -> Flow<Vec<(Option<u64>, AttemptsRecord)>> {
    let window = ctx.config.policy().attempts.window;
    let mut counts = Vec::with_capacity(guards.len());
    for guard in guards {
        let count = ctx.load::<AttemptsRecord>(&guard.key)?;
        let next = attempts::failed(count.as_ref().map(|c| c.record), ctx.now, window);
        counts.push((count.map(|c| c.version), next));
    }
    Ok(counts)
}

/// Commits `counts` (from [`after_failure`]) and then answers with `ending`.
fn record(
    guards: &[Guard],
    counts: Vec<(Option<u64>, AttemptsRecord)>,
    window: Seconds,
    ending: Ending,
) -> Decision {
    let puts: Vec<Put> = guards
        .iter()
        .zip(counts)
        .map(|(guard, (version, next))| {
            let purge = attempts::purge_after(&next, window);
            replace(
                guard.key.clone(),
                version,
                &Record::Attempts(next),
                Some(purge),
            )
        })
        .collect();
    if puts.is_empty() {
        return Decision::End(ending);
    }
    Decision::Commit(
        Transaction {
            puts,
            audit: Vec::new(),
        },
        ending,
    )
}

/// A failed check: counted against `guards` (unless one is already at its limit, which then
/// answers for it), and answered with `ending`.
pub(crate) fn fail(ctx: &Ctx<'_>, guards: &[Guard], ending: Ending, via: Via) -> Flow<Decision> {
    if let Some(wait) = limited(ctx, guards, None)? {
        return Ok(Decision::End(Ending::Refused(
            Refusal::TooManyAttempts(wait),
            via,
        )));
    }
    let counts = after_failure(ctx, guards)?;
    let window = ctx.config.policy().attempts.window;
    Ok(record(guards, counts, window, ending))
}

/// The host's own check ([`Input::Attempts`](crate::Input::Attempts)).
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub guards: Vec<Guard>,
    pub failed: bool,
}

pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    if !parsed.failed {
        return Ok(Decision::End(match limited(ctx, &parsed.guards, None)? {
            Some(wait) => Ending::Refused(Refusal::TooManyAttempts(wait), Via::Plain),
            None => Ending::AttemptsAllowed,
        }));
    }
    // The failure is counted even when the limit was reached meanwhile; the answer says
    // whether the next check may go ahead.
    limited(ctx, &parsed.guards, None)?;
    let window = ctx.config.policy().attempts.window;
    let counts = after_failure(ctx, &parsed.guards)?;
    let wait = parsed
        .guards
        .iter()
        .zip(&counts)
        .filter_map(|(guard, (_, next))| {
            attempts::standing(Some(next), guard.limit, ctx.now, window).err()
        })
        .max();
    let ending = match wait {
        Some(wait) => Ending::Refused(Refusal::TooManyAttempts(wait), Via::Plain),
        None => Ending::AttemptsAllowed,
    };
    Ok(record(&parsed.guards, counts, window, ending))
}
