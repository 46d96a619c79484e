// A test Worker for the adapters that run inside workerd, reached over fetch with
// `{ op, args }` so the shared suite can drive them from Node:
// - `?db=NAME` — the Durable Object adapter, inside the object named NAME;
// - `?db=NAME&store=kv` — the KV composition as a stateless Worker runs it: token records in the
//   TOKENS namespace, everything else in that Durable Object, reached over its stub.
// `?db=NAME&op=kv-keys` lists what NAME holds in KV (raw), so tests can see where records went.
import { durableObjectStorage } from "../src/adapters/durable-object.js";
import { kvTokenStorage } from "../src/adapters/kv.js";

const encode = (result) => (result instanceof Map ? { map: [...result] } : { value: result });
const decode = (body) => (body.map ? new Map(body.map) : body.value);

async function serve(storage, request) {
  const { op, args } = await request.json();
  try {
    return Response.json(encode(await storage[op](...args)));
  } catch (error) {
    return Response.json({ error: String(error.message) }, { status: 500 });
  }
}

export class Records {
  constructor(state) {
    this.storage = durableObjectStorage(state.storage);
  }
  fetch(request) {
    return serve(this.storage, request);
  }
}

/** The Durable Object's adapter, called over its stub. */
function objectStorage(stub) {
  const call = async (op, ...args) => {
    const response = await stub.fetch("http://do/", { method: "POST", body: JSON.stringify({ op, args }) });
    const body = await response.json();
    if (body.error) throw new Error(body.error);
    return decode(body);
  };
  return { read: (keys) => call("read", keys), apply: (tx) => call("apply", tx), purge: (now) => call("purge", now) };
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const db = url.searchParams.get("db");
    const stub = env.RECORDS.get(env.RECORDS.idFromName(db));
    if (url.searchParams.get("op") === "kv-keys") {
      const { keys } = await env.TOKENS.list({ prefix: `${db}/` });
      return Response.json(keys.map((key) => ({ name: key.name.slice(db.length + 1), expiration: key.expiration ?? null })));
    }
    if (url.searchParams.get("store") === "kv") return serve(kvTokenStorage(env.TOKENS, objectStorage(stub), { prefix: `${db}/` }), request);
    return stub.fetch(request);
  },
};
