// The request path's two byte layouts, the JavaScript side of wasm/src/packed.rs (its module
// docs give the layouts): a step is read here where it lies in the module's memory, with one
// text decode; a read's records are packed here into one array, which crosses in one call.

import { moduleMemory } from "./core.js";

const decoder = new TextDecoder();
/** Where a step's text begins: after its whole length (u32), its kind and its text's length (u32). */
const TEXT = 9;
/** A reply's audit events when it has none (all but a defect's): one frozen list, not one per reply. */
const NO_AUDIT = Object.freeze([]);

// Views of the module's memory, made again when it grows (its old buffer is then detached).
let memoryBytes = new Uint8Array(0);
let memoryView;
function memoryViews() {
  const buffer = moduleMemory().buffer;
  if (memoryBytes.buffer !== buffer) {
    memoryBytes = new Uint8Array(buffer);
    memoryView = new DataView(buffer);
  }
}

/**
 * `text` cut at each `separator` (one character), as `text.split(separator)` would: by hand,
 * because V8's `split` on a string just decoded (not yet in its cache) cost a bearer check's
 * serve step 0.86 µs against 0.17 for this loop (Node 20; the step's text decode is 0.35).
 */
function fieldsOf(text, separator) {
  const fields = [];
  let from = 0;
  for (let at = text.indexOf(separator); at >= 0; at = text.indexOf(separator, from)) {
    fields.push(text.slice(from, at));
    from = at + 1;
  }
  fields.push(text.slice(from));
  return fields;
}

/** Pairs from names and values alternately, from index `start` of `flat`. */
export function pairs(flat, start = 0) {
  const out = [];
  for (let i = start; i + 1 < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

/**
 * The step at `address` in the module's memory (what a request's `step()`, `found()`,
 * `advance()`, `fetched()`, `fetchFailed()` and `verified()` return), read at once — the
 * request's next call writes over it: `{ kind: "r", keys }`, `{ kind: "w", transaction: { puts,
 * audit } }`, `{ kind: "p", status, outcome, refusal, audit, headers, body }`, `{ kind: "s", principal,
 * headers }`, `{ kind: "f", url, maxBytes, timeoutMs }` or `{ kind: "v", alg, key, message,
 * signature }`. Strings are decoded once per step, and only the bytes a write stores or a
 * signature are copied out.
 */
export function readStep(address) {
  memoryViews();
  const bytes = memoryBytes;
  const end = address + memoryView.getUint32(address, true);
  const kind = String.fromCharCode(bytes[address + 4]);
  const textEnd = address + TEXT + memoryView.getUint32(address + 5, true);
  const text = decoder.decode(bytes.subarray(address + TEXT, textEnd));
  const fields = text === "" ? [] : fieldsOf(text, "\0");
  switch (kind) {
    case "r":
      return { kind, keys: fields };
    case "w":
      return { kind, transaction: transactionAt(fields, textEnd) };
    case "p":
      return {
        kind,
        status: Number(fields[0]),
        outcome: fields[1],
        refusal: fields[2] === "" ? null : fields[2],
        audit: fields[3] === "" ? NO_AUDIT : JSON.parse(fields[3]),
        headers: pairs(fields, 4),
        body: decoder.decode(bytes.subarray(textEnd, end)),
      };
    case "s":
      return {
        kind,
        // No account id (never empty) for the app acting for itself: a machine, not a person.
        principal: {
          app: fields[0],
          subject: fields[1] === "" ? "client" : "account",
          account_id: fields[1] === "" ? null : fields[1],
          uid: fields[2] === "" ? null : fields[2],
          scopes: fieldsOf(fields[3], " "),
          expires_at: fields[4] === "" ? null : Number(fields[4]),
          // The grant's props, as the host gave them with the user (JSON): null where none.
          props: fields[5] === "" ? null : JSON.parse(fields[5]),
        },
        headers: pairs(fields, 6),
      };
    case "f":
      return { kind, url: fields[0], maxBytes: Number(fields[1]), timeoutMs: Number(fields[2]) };
    case "v":
      return { kind, alg: fields[0], key: fields[1], message: fields[2], signature: bytes.slice(textEnd, end) };
    default:
      throw new Error(`edgegrant: no step ${kind}`);
  }
}

/**
 * A write's transaction as the storage adapters take it: `{ puts, audit }`, its puts' keys
 * given, the rest read from `at` in the module's memory. Each put's bytes are an array of their
 * own (an adapter may hand `bytes.buffer` on); the audit events' JSON is parsed only when read.
 */
function transactionAt(keys, at) {
  const bytes = memoryBytes;
  const view = memoryView;
  const auditEnd = at + 4 + view.getUint32(at, true);
  const auditText = decoder.decode(bytes.subarray(at + 4, auditEnd));
  let audit;
  at = auditEnd;
  const puts = [];
  for (const key of keys) {
    const flags = bytes[at];
    const expect = view.getFloat64(at + 1, true);
    const purgeAfter = view.getFloat64(at + 9, true);
    const length = view.getUint32(at + 17, true);
    at += 21;
    puts.push({ key, expect: flags & 1 ? expect : null, bytes: bytes.slice(at, at + length), purgeAfter: flags & 2 ? purgeAfter : null });
    at += length;
  }
  return {
    puts,
    get audit() {
      audit ??= JSON.parse(auditText);
      return audit;
    },
  };
}

// The records of a read are packed here, in one array kept from read to read: `found` copies
// them into the module at once.
let scratch = new Uint8Array(4096);
let scratchView = new DataView(scratch.buffer);

/**
 * What `found` (a Map of key → `{ version, bytes }`, as a store's read answers) holds under each
 * of `keys`, packed in their order for the request's `found`. Hand it over at once: the next
 * call writes over the same bytes.
 */
export function packRecords(keys, found) {
  let size = 0;
  const records = [];
  for (const key of keys) {
    let stored = found.get(key);
    if (stored?.version == null || stored.bytes == null) stored = undefined;
    records.push(stored);
    size += stored === undefined ? 1 : 13 + stored.bytes.length;
  }
  if (size > scratch.length) {
    scratch = new Uint8Array(Math.max(size, 2 * scratch.length));
    scratchView = new DataView(scratch.buffer);
  }
  let at = 0;
  for (const stored of records) {
    if (stored === undefined) {
      scratch[at++] = 0; // nothing stored
      continue;
    }
    scratch[at] = 1;
    scratchView.setFloat64(at + 1, stored.version, true);
    scratchView.setUint32(at + 9, stored.bytes.length, true);
    scratch.set(stored.bytes, at + 13);
    at += 13 + stored.bytes.length;
  }
  return scratch.subarray(0, size);
}
