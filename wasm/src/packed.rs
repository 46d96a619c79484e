//! The request path's two byte layouts, one crossing each way per step (`pkg/src/packed.js`
//! reads and writes the JavaScript side).
//!
//! **A step**, out of the module, written into the request's own buffer and read by JavaScript
//! in the module's memory where it lies (no copy, no array allocated for it): its whole length
//! (u32, little-endian, these four bytes included), its kind (one ASCII byte: `r`, `w`, `p`,
//! `s`, `f`, `v`), the length of its text (u32), the text (UTF-8: the step's fields joined by
//! NUL, which neither keys nor HTTP headers can hold, nor any other field here), then a tail by
//! kind:
//!
//! | kind | text | tail |
//! |---|---|---|
//! | `r` read | the keys | — |
//! | `w` write | the puts' keys | the audit events' JSON (u32 length, UTF-8), then per put: flags (u8: 1 expects a version, 2 has a purge time), the version expected and the purge time (f64 each, 0 when absent), the record (u32 length, bytes) |
//! | `p` reply | status, outcome, refusal (empty: none), the reply's audit events' JSON (empty: none; a defect's), then header names and values alternately | the body, UTF-8 |
//! | `s` serve | app, account id, uid, scopes (space-separated), expiry (empty: none), then the headers to set, alternately | — |
//! | `f` fetch | URL, the most bytes, the milliseconds it may take | — |
//! | `v` verify | algorithm, public key (JWK JSON), the signed text | the signature |
//!
//! **A read's records**, into the module, one per key of the `r` step in its order: a tag (u8:
//! 0 nothing stored, 1 stored), and for a stored one its version (f64, a safe integer) and its
//! bytes (u32 length, bytes).
//!
//! Numbers cross as f64, as JavaScript holds them; the text is decoded once per step. A step
//! stays in the request's buffer until the request's next call: JavaScript reads it at once.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use edgegrant::{Authorized, Expect, Outcome, RecordKey, Step, Stored};
use wasm_bindgen::JsError;

/// The step, packed into `buffer` (its old contents dropped, its room kept). Fails only for
/// audit events JavaScript cannot hold exactly.
pub(crate) fn step(step: &Step, buffer: &mut Vec<u8>) -> Result<(), JsError> {
    let kind = match step {
        Step::Read(_) => b'r',
        Step::Write(_) => b'w',
        Step::Respond(_) => b'p',
        Step::Serve(_) => b's',
        Step::Fetch(_) => b'f',
        Step::Verify(_) => b'v',
    };
    let mut out = Packer::new(buffer, kind);
    match step {
        Step::Read(keys) => out.keys(keys.iter()),
        Step::Write(transaction) => {
            out.keys(transaction.puts.iter().map(|put| &put.key));
            let audit = crate::server::audit_json(&transaction.audit)?;
            out.end_text();
            out.block(audit.as_bytes());
            for put in &transaction.puts {
                let expect = match put.expect {
                    Expect::Absent => None,
                    Expect::Version(version) => Some(version),
                };
                let purge = put.purge_after.map(|at| at.0);
                out.bytes
                    .push(u8::from(expect.is_some()) | (u8::from(purge.is_some()) << 1));
                for number in [expect, purge] {
                    out.number(number.unwrap_or(0));
                }
                out.block(&put.bytes);
            }
        }
        Step::Respond(reply) => {
            let response = &reply.response;
            out.field(&response.status.to_string());
            out.field(reply.outcome.name());
            out.field(match &reply.outcome {
                Outcome::Refused(refusal) => refusal.name(),
                _ => "",
            });
            // JSON holds no NUL (a control character is escaped): one field.
            if reply.audit.is_empty() {
                out.field("");
            } else {
                out.field(&crate::server::audit_json(&reply.audit)?);
            }
            for (name, value) in &response.headers {
                out.field(name);
                out.field(value);
            }
            out.end_text();
            out.bytes.extend_from_slice(response.body.as_bytes());
        }
        Step::Serve(Authorized { principal, headers }) => {
            out.field(principal.app.as_str());
            // Empty for the app itself (no account id or uid is empty).
            out.field(principal.subject.account_id().map_or("", |a| a.as_str()));
            out.field(principal.uid.as_ref().map_or("", |u| u.as_str()));
            out.field(&principal.scopes.to_string());
            out.field(
                &principal
                    .expires_at
                    .map_or_else(String::new, |at| at.0.to_string()),
            );
            // JSON text (the host's value, stringified): never empty, and never a raw NUL.
            out.field(principal.props.as_deref().unwrap_or(""));
            for (name, value) in headers {
                out.field(name);
                out.field(value);
            }
        }
        Step::Fetch(fetch) => {
            out.field(&fetch.url);
            // As u64: its formatting is linked already.
            for number in [fetch.max_bytes, fetch.timeout_ms] {
                out.field(&u64::from(number).to_string());
            }
        }
        Step::Verify(verify) => {
            for field in [verify.alg.name(), &verify.key, &verify.message] {
                out.field(field);
            }
            out.end_text();
            out.bytes.extend_from_slice(&verify.signature);
        }
    }
    out.finish();
    Ok(())
}

/// A step's bytes as they are written: room for the lengths, the kind, the text, the tail.
struct Packer<'b> {
    bytes: &'b mut Vec<u8>,
    /// Whether the text has a field yet (the next one is preceded by NUL).
    fields: bool,
    /// Whether the text's length is written (the tail has begun).
    text_ended: bool,
}

/// Where the text begins: after the whole length, the kind and the text's length.
const TEXT: usize = 9;

impl<'b> Packer<'b> {
    fn new(bytes: &'b mut Vec<u8>, kind: u8) -> Self {
        bytes.clear();
        bytes.extend_from_slice(&[0, 0, 0, 0, kind, 0, 0, 0, 0]);
        Packer {
            bytes,
            fields: false,
            text_ended: false,
        }
    }

    fn field(&mut self, text: &str) {
        if self.fields {
            self.bytes.push(0);
        }
        self.fields = true;
        self.bytes.extend_from_slice(text.as_bytes());
    }

    /// The storage keys, one field each, written through one scratch string.
    fn keys<'k>(&mut self, keys: impl Iterator<Item = &'k RecordKey>) {
        let mut text = String::with_capacity(96);
        for key in keys {
            text.clear();
            key.write_to(&mut text);
            self.field(&text);
        }
    }

    fn end_text(&mut self) {
        if !self.text_ended {
            self.text_ended = true;
            let length = (self.bytes.len() - TEXT) as u32;
            self.bytes[5..TEXT].copy_from_slice(&length.to_le_bytes());
        }
    }

    fn number(&mut self, value: u64) {
        self.bytes.extend_from_slice(&(value as f64).to_le_bytes());
    }

    fn block(&mut self, bytes: &[u8]) {
        self.bytes
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(bytes);
    }

    fn finish(mut self) {
        self.end_text();
        let length = self.bytes.len() as u32;
        self.bytes[..4].copy_from_slice(&length.to_le_bytes());
    }
}

/// The records of a read of `keys`, unpacked: what the store holds under each, in order.
/// An error says what is wrong with the packing (the host's bug, not the client's).
pub(crate) fn records(
    keys: &[RecordKey],
    mut packed: &[u8],
) -> Result<Vec<(RecordKey, Option<Stored>)>, &'static str> {
    let mut found = Vec::with_capacity(keys.len());
    for key in keys {
        let (&tag, rest) = packed.split_first().ok_or("fewer records than keys")?;
        packed = rest;
        let stored = match tag {
            0 => None,
            1 => {
                let version = f64::from_le_bytes(take(&mut packed)?);
                let length = u32::from_le_bytes(take(&mut packed)?) as usize;
                if packed.len() < length {
                    return Err("a record shorter than its length");
                }
                let (bytes, rest) = packed.split_at(length);
                packed = rest;
                Some(Stored {
                    version: safe_integer(version).ok_or("a version that is not a safe integer")?,
                    bytes: bytes.to_vec(),
                })
            }
            _ => return Err("a record's tag is neither 0 nor 1"),
        };
        found.push((key.clone(), stored));
    }
    if packed.is_empty() {
        Ok(found)
    } else {
        Err("more records than keys")
    }
}

/// The next `N` bytes of `packed`.
fn take<const N: usize>(packed: &mut &[u8]) -> Result<[u8; N], &'static str> {
    let (head, rest) = packed.split_first_chunk::<N>().ok_or("records cut short")?;
    *packed = rest;
    Ok(*head)
}

/// `value` as a whole number, if it is one JavaScript holds exactly (0 ..= 2^53 − 1).
pub(crate) fn safe_integer(value: f64) -> Option<u64> {
    // The cast truncates (and takes NaN to 0): it is the value only when that is whole.
    let whole = value as u64;
    (whole as f64 == value && whole <= crate::MAX_SAFE_INTEGER).then_some(whole)
}
