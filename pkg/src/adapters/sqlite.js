// SQLite storage for Node, on better-sqlite3: one table of versioned records (the core's opaque
// bytes). A transaction runs as BEGIN IMMEDIATE, so conditional writes hold across processes
// sharing the file.

/** Opens (or creates) the database file at `path`; better-sqlite3 is a peer dependency. */
export async function openSqliteStorage(path, options) {
  const { default: Database } = await import("better-sqlite3");
  return sqliteStorage(new Database(path), options);
}

/** Storage on an open better-sqlite3 `Database`. */
export function sqliteStorage(db, { table = "edgegrant_store" } = {}) {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error("edgegrant: invalid table name");
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    key TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    purge_after INTEGER
  )`);
  db.exec(`CREATE INDEX IF NOT EXISTS ${table}_purge ON ${table} (purge_after) WHERE purge_after IS NOT NULL`);
  const select = db.prepare(`SELECT version, bytes FROM ${table} WHERE key = ?`);
  const version = db.prepare(`SELECT version FROM ${table} WHERE key = ?`).pluck();
  const upsert = db.prepare(
    `INSERT INTO ${table} (key, version, bytes, purge_after) VALUES (@key, 1, @bytes, @purgeAfter)
     ON CONFLICT(key) DO UPDATE SET version = version + 1, bytes = excluded.bytes, purge_after = excluded.purge_after`,
  );
  const purge = db.prepare(`DELETE FROM ${table} WHERE purge_after IS NOT NULL AND purge_after <= ?`);
  const applyAll = db.transaction((puts) => {
    for (const { key, expect } of puts) {
      const current = version.get(key);
      const holds = expect === null ? current === undefined : current === expect;
      if (!holds) return false;
    }
    for (const put of puts) upsert.run({ key: put.key, bytes: put.bytes, purgeAfter: put.purgeAfter ?? null });
    return true;
  });
  return {
    // Synchronous, as better-sqlite3 is: the driver awaits only promises.
    read(keys) {
      const found = new Map();
      for (const key of keys) {
        const row = select.get(key);
        if (row) found.set(key, row);
      }
      return found;
    },
    apply({ puts }) {
      return applyAll.immediate(puts);
    },
    /** Deletes the records whose purge time is at or before `now`; returns how many. */
    async purge(now) {
      return purge.run(now).changes;
    },
    size: () => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get(),
    close: () => db.close(),
  };
}
