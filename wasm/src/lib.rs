//! JavaScript bindings of [`edgegrant`]: values in, values out, nothing decided here.
//!
//! Two modules are built from this crate, so that each host loads only what it runs: the
//! server's (feature `server`: [`Core`] and the configuration helpers) and the PKCE client's
//! (feature `client`: [`PkceClient`]), which a browser loads alone.
//!
//! - On the request path plain values cross — strings, numbers, byte arrays — through the
//!   getters of [`Request`]'s current step: no JSON is written or parsed per request, and
//!   records cross as the opaque bytes the core encodes. JSON (serde_json, which the core needs
//!   for the configuration and audit events anyway) carries the configuration, audit events and
//!   the PKCE client's values, parsed in `src/core.js` with the engine's own `JSON.parse`.
//! - 64-bit values (times, versions) cross as JS numbers and must be safe integers: a value
//!   above 2^53 − 1, which a JS number cannot hold exactly, is refused — never rounded.
//! - Host misuse (records not asked for, malformed values) throws a real `Error`; protocol
//!   errors are ordinary replies.
//! - Entropy comes from the caller: the package draws it in JavaScript
//!   (`crypto.getRandomValues`, pooled), so the modules link no source of randomness.

#![cfg_attr(not(test), no_std)]

extern crate alloc;
// Built natively (the crate's tests, a workspace build), std gives the allocator and the panic
// handler; the wasm modules bring their own (below).
#[cfg(not(target_family = "wasm"))]
extern crate std;

#[cfg(feature = "client")]
use alloc::{format, string::String, string::ToString};
#[cfg(feature = "client")]
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::prelude::*;

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod packed;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "client")]
pub use client::*;
#[cfg(feature = "server")]
pub use server::*;

/// The modules' allocator: talc in place of Rust's default dlmalloc — less code in the module
/// and faster allocation (its WebAssembly benchmarks). The modules are single-threaded (no
/// `atomics` target feature), which is what this allocator requires.
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// A panic ends the call: the module traps (`unreachable`), and JavaScript gets a
/// `RuntimeError`, as with std's abort before. Without std, no message is formatted and std's
/// panic hook and payloads are not in the modules (1.55 KiB of the server's, gzipped; the
/// messages and source locations std's precompiled `core` still builds at its panic sites are
/// another 4.85 KiB, which only a nightly build with std rebuilt from source removes). The core
/// never panics on input (its lints deny every panicking construct); a trap would be a bug.
#[cfg(all(target_family = "wasm", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

#[wasm_bindgen(typescript_custom_section)]
const SHARED_TYPES: &'static str = r#"
/** Seconds since the Unix epoch. */
export type UnixTime = number;
export type Scope = string;
"#;

/// The largest integer a JS number holds exactly (2^53 − 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Whether every number in the JSON text `json` is an integer a JS number holds exactly, or a
/// fraction (never produced by the core; left to `JSON.parse`). Strings are skipped.
pub(crate) fn numbers_are_exact(json: &str) -> bool {
    let bytes = json.as_bytes();
    let mut in_string = false;
    let mut escaped = false;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            at += 1;
        } else if byte == b'"' {
            in_string = true;
            at += 1;
        } else if byte.is_ascii_digit() {
            let digits = bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let integer = !matches!(bytes.get(at + digits), Some(b'.' | b'e' | b'E'));
            // 16 digits or fewer can still exceed 2^53 − 1; more can never fit.
            let exact = digits <= 16
                && json
                    .get(at..at + digits)
                    .and_then(|text| text.parse::<u64>().ok())
                    .is_some_and(|n| n <= MAX_SAFE_INTEGER);
            if integer && !exact {
                return false;
            }
            at += digits;
        } else {
            at += 1;
        }
    }
    true
}

pub(crate) const UNREPRESENTABLE: &str =
    "a 64-bit value can't be represented exactly as a JS number";

#[cfg(feature = "client")]
fn parse<T: DeserializeOwned>(what: &str, json: &str) -> Result<T, String> {
    if !numbers_are_exact(json) {
        return Err(format!("invalid {what}: {UNREPRESENTABLE}"));
    }
    serde_json::from_str(json).map_err(|e| format!("invalid {what}: {e}"))
}

#[cfg(feature = "client")]
pub(crate) fn from_json<T: DeserializeOwned>(what: &str, json: &str) -> Result<T, JsError> {
    parse(what, json).map_err(|message| JsError::new(&message))
}

#[cfg(feature = "client")]
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String, JsError> {
    let json = serde_json::to_string(value).map_err(|e| JsError::new(&e.to_string()))?;
    if numbers_are_exact(&json) {
        Ok(json)
    } else {
        Err(JsError::new(UNREPRESENTABLE))
    }
}

#[cfg(test)]
mod tests {
    use super::numbers_are_exact;

    #[cfg(feature = "server")]
    #[test]
    fn a_safe_integer_is_whole_non_negative_and_at_most_two_to_the_53_minus_1() {
        use super::packed::safe_integer;
        let max = super::MAX_SAFE_INTEGER;
        assert_eq!(safe_integer(0.0), Some(0));
        assert_eq!(safe_integer(-0.0), Some(0));
        assert_eq!(safe_integer(1_700_000_000.0), Some(1_700_000_000));
        assert_eq!(safe_integer(max as f64), Some(max));
        for refused in [
            (max + 1) as f64,
            1.5,
            -1.0,
            -0.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            u64::MAX as f64,
            1e300,
        ] {
            assert_eq!(safe_integer(refused), None, "{refused}");
        }
    }

    #[test]
    fn integers_beyond_two_to_the_53_are_caught_outside_strings_only() {
        assert!(numbers_are_exact(r#"{"v":9007199254740991,"t":[0,1,2]}"#));
        assert!(!numbers_are_exact(r#"{"v":9007199254740992}"#));
        assert!(!numbers_are_exact(r#"[123456789012345678901]"#));
        assert!(numbers_are_exact(
            r#"{"s":"99999999999999999999","e":"a\"99999999999999999"}"#
        ));
        assert!(!numbers_are_exact(r#"{"s":"\\",  "n":99999999999999999}"#));
        assert!(numbers_are_exact(r#"{"f":1.5,"x":-12}"#));
    }
}
