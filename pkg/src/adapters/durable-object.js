// Durable Object storage: the records live in one Durable Object's transactional storage
// (strongly consistent, single-threaded per object), so a conditional multi-key write is one
// `storage.transaction`. Use it inside the Durable Object that fronts the authorization server.
export function durableObjectStorage(storage) {
  return {
    async read(keys) {
      const found = new Map();
      for (const [key, entry] of await storage.get(keys)) found.set(key, { version: entry.version, bytes: entry.bytes });
      return found;
    },
    async apply({ puts }) {
      return storage.transaction(async (txn) => {
        const current = await txn.get(puts.map((p) => p.key));
        for (const { key, expect } of puts) {
          const version = current.get(key)?.version;
          const holds = expect === null ? version === undefined : version === expect;
          if (!holds) return false; // nothing was written in this transaction
        }
        const entries = {};
        for (const { key, bytes, purgeAfter } of puts) {
          entries[key] = { version: (current.get(key)?.version ?? 0) + 1, bytes, purgeAfter: purgeAfter ?? null };
        }
        await txn.put(entries);
        return true;
      });
    },
    /** Deletes the records whose purge time is at or before `now`; resolves how many. */
    async purge(now) {
      const due = [];
      for (const [key, entry] of await storage.list()) if (entry.purgeAfter !== null && entry.purgeAfter <= now) due.push(key);
      for (let i = 0; i < due.length; i += 128) await storage.delete(due.slice(i, i + 128));
      return due.length;
    },
  };
}
