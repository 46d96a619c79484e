//! Prints the package's generated TypeScript declarations (`pkg/dist/edgegrant_types.d.ts`,
//! written by `npm run build`): the configuration document's JSON form as the core declares it
//! beside its reader, and the names hosts see — outcomes, refusals, audit events, attempt
//! verdicts, attempter kinds — from the core's own tables, so they cannot fall behind it.

use edgegrant::{AttemptVerdict, Attempter, AuditEvent, Outcome, Refusal, CONFIG_TYPESCRIPT};

/// `"a" | "b" | …`
fn union(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
    quoted.join(" | ")
}

fn main() {
    let attempters: Vec<String> = Attempter::NAMES
        .iter()
        .map(|kind| format!("{{ {kind}: string }}"))
        .collect();
    print!(
        r#"// Generated from the Rust types of edgegrant by core/examples/typescript.rs (npm run build): do not edit.
export type UnixTime = number;
export type Scope = string;
{CONFIG_TYPESCRIPT}
/** What a request came to (`Outcome::name`). */
export type OutcomeName = {outcomes};

/** Why a request was refused (`Refusal::name`). */
export type RefusalName = {refusals};

/** What an audit event records (`AuditEvent::name`): its `event` field. */
export type AuditEventName = {events};

/** What a credential check of the host's own may do (`AttemptVerdict::name`). */
export type AttemptVerdictName = {verdicts};

/** Whom a credential check of the host's own is counted against: one kind each (`Attempter`). */
export type Attempter = {attempters};
"#,
        outcomes = union(Outcome::NAMES),
        refusals = union(Refusal::NAMES),
        events = union(AuditEvent::NAMES),
        verdicts = union(AttemptVerdict::NAMES),
        attempters = attempters.join(" | "),
    );
}
