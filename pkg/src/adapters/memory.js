// In-memory storage: versioned records in a Map; transactions apply all-or-nothing. For tests
// and single-process hosts that may lose their tokens on restart. Records are the core's opaque
// bytes, copied in on every write, so no caller can change a stored record through an array it
// still holds.
export function memoryStorage() {
  const entries = new Map(); // key → { version, bytes, purgeAfter }
  return {
    // Synchronous: the driver awaits only promises, so an in-memory read costs no event-loop turn.
    read(keys) {
      const found = new Map();
      for (const key of keys) {
        const entry = entries.get(key);
        if (entry) found.set(key, entry);
      }
      return found;
    },
    apply({ puts }) {
      for (const { key, expect } of puts) {
        const current = entries.get(key);
        const holds = expect === null ? current === undefined : current?.version === expect;
        if (!holds) return false;
      }
      for (const { key, bytes, purgeAfter } of puts) {
        const version = (entries.get(key)?.version ?? 0) + 1;
        entries.set(key, { version, bytes: bytes.slice(), purgeAfter: purgeAfter ?? null });
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
