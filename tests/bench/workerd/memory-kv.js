// An in-memory stand-in for a Workers KV namespace, shared by both subjects of the workerd
// benchmark so that storage costs the same for both and the libraries are what is measured.
// It has the surface the two use: get(key, type | { type }) for "text", "json" and
// "arrayBuffer", put(key, string | bytes, { expiration | expirationTtl, metadata }), delete(key)
// and list({ prefix, limit, cursor }) in key order. Text values are parsed on every read and
// bytes copied, as KV hands out fresh values; expired entries read as absent. Keys are also indexed by their ":"-separated
// segments, so a list visits only the keys under its prefix (KV's key space is sorted) and the
// peer's per-authorization list of a user's grants never scans the whole namespace.
export function memoryKv() {
  const entries = new Map(); // key → { value, expiration (s since epoch) | null, metadata }
  const root = { children: new Map(), keys: new Set() }; // the segment tree of the live keys
  const now = () => Date.now() / 1000;
  const live = (entry) => entry !== undefined && (entry.expiration === null || entry.expiration > now());

  /** The tree node holding keys whose segments before the last are `segments` (created on demand). */
  function node(segments, create) {
    let at = root;
    for (const segment of segments) {
      let next = at.children.get(segment);
      if (!next) {
        if (!create) return null;
        next = { children: new Map(), keys: new Set() };
        at.children.set(segment, next);
      }
      at = next;
    }
    return at;
  }
  const parent = (key, create) => node(key.split(":").slice(0, -1), create);

  function collect(at, into) {
    for (const key of at.keys) into.push(key);
    for (const child of at.children.values()) collect(child, into);
  }

  return {
    async get(key, options) {
      const type = (typeof options === "string" ? options : options?.type) ?? "text";
      const entry = entries.get(key);
      if (!live(entry)) return null;
      if (type === "arrayBuffer") return typeof entry.value === "string" ? new TextEncoder().encode(entry.value).buffer : entry.value.slice().buffer;
      if (typeof entry.value !== "string") throw new Error(`memoryKv: ${key} holds bytes, read it as arrayBuffer`);
      if (type === "json") return JSON.parse(entry.value);
      if (type === "text") return entry.value;
      throw new Error(`memoryKv: get type ${type} is not supported`);
    },

    async put(key, value, { expiration, expirationTtl, metadata } = {}) {
      if (value instanceof ArrayBuffer) value = new Uint8Array(value.slice(0));
      else if (ArrayBuffer.isView(value)) value = new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
      else if (typeof value !== "string") throw new Error("memoryKv: values are strings or bytes");
      const at = expiration ?? (expirationTtl !== undefined ? now() + expirationTtl : null);
      entries.set(key, { value, expiration: at, metadata: metadata ?? null });
      parent(key, true).keys.add(key);
    },

    async delete(key) {
      entries.delete(key);
      parent(key, false)?.keys.delete(key);
    },

    async list({ prefix = "", limit = 1000, cursor } = {}) {
      const segments = prefix.split(":");
      const partial = segments.pop(); // the last, possibly incomplete, segment of the prefix
      const at = node(segments, false);
      const names = [];
      if (at) {
        for (const key of at.keys) if (key.startsWith(prefix)) names.push(key);
        for (const [segment, child] of at.children) if (segment.startsWith(partial)) collect(child, names);
      }
      const sorted = names.filter((name) => live(entries.get(name))).sort();
      const after = cursor === undefined ? 0 : sorted.findIndex((name) => name > cursor);
      const start = after < 0 ? sorted.length : after;
      const page = sorted.slice(start, start + limit);
      const complete = start + limit >= sorted.length;
      const keys = page.map((name) => {
        const { expiration, metadata } = entries.get(name);
        return { name, ...(expiration !== null && { expiration: Math.floor(expiration) }), ...(metadata !== null && { metadata }) };
      });
      return complete ? { keys, list_complete: true } : { keys, list_complete: false, cursor: page[page.length - 1] };
    },
  };
}
