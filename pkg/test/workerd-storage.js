// A test Worker for the adapters that run inside workerd, reached over fetch with
// `{ op, args }` so the shared suite can drive them from Node:
// - `?db=NAME` — the Durable Object adapter, inside the object named NAME;
// - `?db=NAME&store=kv` — the KV composition as a stateless Worker runs it: token records in the
//   TOKENS namespace, everything else in that Durable Object, reached over its stub.
// `?db=NAME&op=kv-keys` lists what NAME holds in KV (raw), so tests can see where records went.
// `?db=NAME&alarms=1` — the Durable Object adapter with alarms, in an object of its own class
// that purges at its alarm (the real clock).
//
// Every hop (Node → Worker → Durable Object and back) is JSON, which has neither bytes nor maps:
// `toJson` writes a Uint8Array as `{ $bytes: base64 }` and a Map as `{ $map: entries }`, and
// `fromJson` reads them back. The storage suite imports both, so the two ends share one codec.
import { durableObjectStorage } from "../src/adapters/durable-object.js";
import { kvTokenStorage } from "../src/adapters/kv.js";

function base64(bytes) {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function unbase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** JSON text of `value`, its bytes and maps included. */
export function toJson(value) {
  // `this[key]` is the value before toJSON (a Node Buffer has one), so every byte array is caught.
  return JSON.stringify(value, function (key, encoded) {
    const raw = this[key];
    if (raw instanceof Uint8Array) return { $bytes: base64(raw) };
    if (raw instanceof Map) return { $map: [...raw] };
    return encoded;
  });
}

/** The value `toJson` wrote. */
export function fromJson(text) {
  return JSON.parse(text, (key, value) => {
    if (value !== null && typeof value === "object" && typeof value.$bytes === "string") return unbase64(value.$bytes);
    if (value !== null && typeof value === "object" && Array.isArray(value.$map)) return new Map(value.$map);
    return value;
  });
}

const json = (value, status = 200) => new Response(toJson(value), { status, headers: { "content-type": "application/json" } });

async function serve(storage, request) {
  const { op, args } = fromJson(await request.text());
  try {
    return json({ value: await storage[op](...args) });
  } catch (error) {
    return json({ error: String(error.message) }, 500);
  }
}

/** An adapter's three verbs, called over `send(body) → Response` with the codec above. */
export function remoteStorage(send) {
  const call = async (op, ...args) => {
    const body = fromJson(await (await send(toJson({ op, args }))).text());
    if (body.error) throw new Error(body.error);
    return body.value;
  };
  return { read: (keys) => call("read", keys), apply: (tx) => call("apply", tx), purge: (now) => call("purge", now) };
}

export class Records {
  constructor(state) {
    this.storage = durableObjectStorage(state.storage);
  }
  fetch(request) {
    return serve(this.storage, request);
  }
}

/** The adapter keeping the object's alarm at its next purge time; the alarm purges. */
export class AlarmedRecords {
  constructor(state) {
    this.storage = durableObjectStorage(state.storage, { alarms: true });
  }
  fetch(request) {
    return serve(this.storage, request);
  }
  alarm() {
    return this.storage.purge(Math.floor(Date.now() / 1000));
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const db = url.searchParams.get("db");
    const objects = url.searchParams.get("alarms") === "1" ? env.ALARMED : env.RECORDS;
    const stub = objects.get(objects.idFromName(db));
    if (url.searchParams.get("op") === "kv-keys") {
      const { keys } = await env.TOKENS.list({ prefix: `${db}/` });
      return Response.json(keys.map((key) => ({ name: key.name.slice(db.length + 1), expiration: key.expiration ?? null })));
    }
    if (url.searchParams.get("store") === "kv") {
      // The Durable Object's adapter, called over its stub.
      const strong = remoteStorage((body) => stub.fetch("http://do/", { method: "POST", body }));
      return serve(kvTokenStorage(env.TOKENS, strong, { prefix: `${db}/` }), request);
    }
    return stub.fetch(request);
  },
};
