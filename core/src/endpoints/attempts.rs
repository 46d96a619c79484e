//! Limits on failed credential checks: the token endpoint's client authentication, and the
//! host's own checks ([`Input::Attempts`](crate::Input::Attempts), its sign-in form). The counts
//! live in the host's store, one record per attempter, so they hold across the host's instances.

use crate::config::Config;
use crate::credentials::AttempterDigest;
use crate::ctx::{replace, Ctx, Decision, Flow};
use crate::ending::{Ending, Via};
use crate::machines::attempts::{self, source_group, Attempter};
use crate::partition::Partition;
use crate::prelude::*;
use crate::records::{AttemptsRecord, Record, RecordKey};
use crate::refusal::Refusal;
use crate::step::{AttemptStep, Transaction};
use crate::time::Seconds;

/// One attempter's count, as a check needs it: where it is stored and the attempter's limit.
/// Built when the request is parsed, so its key is hashed once.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    key: RecordKey,
    limit: u32,
    /// How long a count lasts from its first failure.
    window: Seconds,
}

/// The guards of `attempters`: an account name's count is per source when a source is among
/// them ([`Attempter::key_from`]).
pub(crate) fn guards(attempters: &[Attempter], config: &Config) -> Vec<Guard> {
    let limits = &config.policy().attempts;
    let source = attempters.iter().find_map(|attempter| match attempter {
        Attempter::Source(source) => Some(source.as_str()),
        _ => None,
    });
    attempters
        .iter()
        .map(|attempter| Guard {
            key: attempter.key_from(config.server_key(), source),
            limit: attempter.limit(limits),
            window: limits.window,
        })
        .collect()
}

/// The guard of the request's `source`, if it has one: what its failures count against.
pub(crate) fn source_guards(config: &Config, source: Option<&str>) -> Vec<Guard> {
    let attempters: Vec<Attempter> = source
        .map(|source| Attempter::Source(source.to_owned()))
        .into_iter()
        .collect();
    guards(&attempters, config)
}

/// The failures of fetches of `url` (a client's metadata document or key set): one failure
/// bars the URL for `backoff`, so that requests naming a client whose document fails cost its
/// host, and this server, one fetch per backoff rather than one each.
pub(crate) fn fetch_failures(config: &Config, url: &str, backoff: Seconds) -> Guard {
    Guard {
        key: RecordKey::Attempts(AttempterDigest::of(
            config.server_key(),
            "fetch-failed",
            url,
        )),
        limit: 1,
        window: backoff,
    }
}

/// The count of registrations (RFC 7591) from `source` (an IPv6 source with its /64), at most
/// `limit` per window; `None` for all sources together.
pub(crate) fn registrations(config: &Config, source: Option<&str>, limit: u32) -> Guard {
    let digest = match source {
        Some(source) => AttempterDigest::of(
            config.server_key(),
            "registrations-from",
            &source_group(source),
        ),
        None => AttempterDigest::of(config.server_key(), "registrations", "all"),
    };
    Guard {
        key: RecordKey::Attempts(digest),
        limit,
        window: config.policy().attempts.window,
    }
}

/// One more use counted against each of `guards` that this request has not counted yet: the
/// writes, one transaction per count — or, if one of them is at its limit, how long to wait.
pub(crate) fn reserve(ctx: &Ctx<'_>, guards: &[Guard]) -> Flow<Result<Vec<Transaction>, Seconds>> {
    let open: Vec<Guard> = guards
        .iter()
        .filter(|guard| !ctx.written.contains(&guard.key))
        .cloned()
        .collect();
    if let Some(wait) = limited(ctx, &open, None)? {
        return Ok(Err(wait));
    }
    let (writes, _) = count_failure(ctx, guards)?;
    Ok(Ok(writes))
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
    let mut wait = None;
    for guard in guards {
        let count = ctx.load::<AttemptsRecord>(&guard.key)?;
        if let Err(retry_after) =
            attempts::standing(count.map(|c| c.record), guard.limit, ctx.now, guard.window)
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
/// The writes that count one more attempt against each of `guards` (read already).
pub(crate) fn count(ctx: &Ctx<'_>, guards: &[Guard]) -> Flow<Vec<Transaction>> {
    Ok(count_failure(ctx, guards)?.0)
}

fn count_failure(ctx: &Ctx<'_>, guards: &[Guard]) -> Flow<(Vec<Transaction>, Option<Seconds>)> {
    let mut writes = Vec::with_capacity(guards.len());
    let mut wait = None;
    for guard in guards {
        let window = guard.window;
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
    pub step: AttemptStep,
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

/// Reserve: refused while a count this request has not yet written is at its limit; else
/// every count goes one up now, each at the version read, so that checks racing each other are
/// counted one after the other and no more than the limit go ahead. (A count written before a
/// later one lost its race stays counted: erring on the side of the limit.) Succeeded: each
/// count goes one down.
pub(crate) fn decide(parsed: &Parsed, ctx: &Ctx<'_>) -> Flow<Decision> {
    match parsed.step {
        AttemptStep::Reserve => match reserve(ctx, &parsed.guards)? {
            Ok(writes) => Ok(Decision::each(writes, Ending::AttemptsAllowed)),
            Err(wait) => Ok(Decision::End(Ending::Refused(
                Refusal::TooManyAttempts(wait),
                Via::Plain,
            ))),
        },
        AttemptStep::Succeeded => {
            let writes = release(ctx, &parsed.guards)?;
            Ok(Decision::each(writes, Ending::AttemptsAllowed))
        }
    }
}

/// A reservation taken back from each count (a check that succeeded): the writes, one
/// transaction per count, none for a count this request has written already.
fn release(ctx: &Ctx<'_>, guards: &[Guard]) -> Flow<Vec<Transaction>> {
    let keys: Vec<&RecordKey> = guards.iter().map(|g| &g.key).collect();
    ctx.need(&keys)?;
    let mut writes = Vec::with_capacity(guards.len());
    for guard in guards {
        let window = guard.window;
        if ctx.written.contains(&guard.key) {
            continue;
        }
        let Some(count) = ctx.load::<AttemptsRecord>(&guard.key)? else {
            continue;
        };
        if let Some(next) = attempts::released(Some(count.record), ctx.now, window) {
            writes.push(Transaction {
                puts: vec![replace(
                    guard.key.clone(),
                    Some(count.version),
                    &Record::Attempts(next.clone()),
                    Some(attempts::purge_after(&next, window)),
                )],
                audit: Vec::new(),
            });
        }
    }
    Ok(writes)
}
