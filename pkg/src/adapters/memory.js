// In-memory storage: versioned records in a Map; transactions apply all-or-nothing. For tests
// and single-process hosts that may lose their tokens on restart. Records are kept as JSON text,
// so that no caller can change a stored record through an object it was given (and a JSON
// round trip is cheaper than structuredClone).
export function memoryStorage() {
  const entries = new Map(); // key → { version, record (JSON text), purgeAfter }
  return {
    async read(keys) {
      const found = new Map();
      for (const key of keys) {
        const entry = entries.get(key);
        if (entry) found.set(key, { version: entry.version, record: JSON.parse(entry.record) });
      }
      return found;
    },
    async apply({ puts }) {
      for (const { key, expect } of puts) {
        const current = entries.get(key);
        const holds = expect.expect === "absent" ? current === undefined : current?.version === expect.version;
        if (!holds) return false;
      }
      for (const { key, record, purge_after } of puts) {
        const version = (entries.get(key)?.version ?? 0) + 1;
        entries.set(key, { version, record: JSON.stringify(record), purgeAfter: purge_after ?? null });
      }
      return true;
    },
    /** Deletes the records whose purge time is at or before `now`; returns how many. */
    async purge(now) {
      let removed = 0;
      for (const [key, entry] of entries) {
        if (entry.purgeAfter !== null && entry.purgeAfter <= now) {
          entries.delete(key);
          removed++;
        }
      }
      return removed;
    },
    /** How many records are stored. */
    size: () => entries.size,
  };
}
