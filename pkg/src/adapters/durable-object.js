// Durable Object storage: the records live in one Durable Object's transactional storage
// (strongly consistent, single-threaded per object), so a conditional multi-key write is one
// `storage.transaction`. Use it inside the Durable Object that fronts the authorization server
// (one per partition, or one for everything).
//
// Records expire through an index, never a scan: beside each record with a purge time the same
// transaction writes `~purge:<time>:<key>` ("~" sorts after every record key, whose partition
// part is URL-safe base64), so the due records are one `list` up to now. With `alarms: true` the
// object keeps an alarm at its earliest purge time; the object's `alarm()` handler calls `purge`,
// which deletes what is due and sets the next alarm.

const INDEX = "~purge:";
/** Index keys sort by time: 12 digits reach the year 33658. */
const indexKey = (time, key) => `${INDEX}${String(time).padStart(12, "0")}:${key}`;
const keyOfIndex = (entry) => entry.slice(INDEX.length + 13);
/** A `list` end bound: every index key of a time ≤ `now`. */
const dueEnd = (now) => `${INDEX}${String(now + 1).padStart(12, "0")}`;
/** The most keys one storage call takes. */
const MAX_KEYS = 128;
/** How many due records one purge transaction deletes (with their index entries: one call). */
const PURGE_BATCH = MAX_KEYS / 2;

export function durableObjectStorage(storage, { alarms = false } = {}) {
  /** Moves the object's alarm earlier to `time` (seconds) if it is set later or not at all. */
  async function alarmBy(time) {
    const current = await storage.getAlarm();
    if (current === null || current > time * 1000) await storage.setAlarm(time * 1000);
  }

  return {
    async read(keys) {
      const found = new Map();
      for (const [key, entry] of await storage.get(keys)) found.set(key, { version: entry.version, bytes: entry.bytes });
      return found;
    },
    async apply({ puts }) {
      const applied = await storage.transaction(async (txn) => {
        const current = new Map();
        for (let i = 0; i < puts.length; i += MAX_KEYS) for (const [key, entry] of await txn.get(puts.slice(i, i + MAX_KEYS).map((p) => p.key))) current.set(key, entry);
        for (const { key, expect } of puts) {
          const version = current.get(key)?.version;
          const holds = expect === null ? version === undefined : version === expect;
          if (!holds) return false; // nothing was written in this transaction
        }
        const entries = {};
        const unindexed = [];
        for (const { key, bytes, purgeAfter = null } of puts) {
          const before = current.get(key)?.purgeAfter ?? null;
          entries[key] = { version: (current.get(key)?.version ?? 0) + 1, bytes, purgeAfter };
          if (before !== null && before !== purgeAfter) unindexed.push(indexKey(before, key));
          if (purgeAfter !== null) entries[indexKey(purgeAfter, key)] = 1;
        }
        // A storage call takes up to 128 keys; an unlink of many grants writes more.
        const writes = Object.entries(entries);
        for (let i = 0; i < writes.length; i += MAX_KEYS) await txn.put(Object.fromEntries(writes.slice(i, i + MAX_KEYS)));
        for (let i = 0; i < unindexed.length; i += MAX_KEYS) await txn.delete(unindexed.slice(i, i + MAX_KEYS));
        return true;
      });
      if (applied && alarms) {
        const times = puts.map((put) => put.purgeAfter).filter((time) => time !== null && time !== undefined);
        if (times.length > 0) await alarmBy(Math.min(...times));
      }
      return applied;
    },
    /**
     * Deletes the records whose purge time is at or before `now`, found through the index;
     * resolves how many. With `alarms`, then sets the alarm to the next purge time, if any.
     */
    async purge(now) {
      let removed = 0;
      for (;;) {
        const due = [...(await storage.list({ prefix: INDEX, end: dueEnd(now), limit: PURGE_BATCH })).keys()];
        if (due.length === 0) break;
        // Each record checked again inside the transaction: one rewritten meanwhile with a later
        // purge time has moved in the index, and stays.
        removed += await storage.transaction(async (txn) => {
          const records = await txn.get(due.map(keyOfIndex));
          const gone = [];
          for (const entry of due) {
            const key = keyOfIndex(entry);
            const purgeAfter = records.get(key)?.purgeAfter;
            if (purgeAfter !== undefined && purgeAfter !== null && purgeAfter <= now) gone.push(key);
          }
          await txn.delete([...due, ...gone]);
          return gone.length;
        });
      }
      if (alarms) {
        const [next] = (await storage.list({ prefix: INDEX, limit: 1 })).keys();
        if (next === undefined) await storage.deleteAlarm();
        else await storage.setAlarm(Number(next.slice(INDEX.length, INDEX.length + 12)) * 1000);
      }
      return removed;
    },
  };
}
