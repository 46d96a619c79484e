// SQLite storage for Node, on better-sqlite3: one table of versioned JSON records. A transaction
// runs as BEGIN IMMEDIATE, so conditional writes hold across processes sharing the file.

/** Opens (or creates) the database file at `path`; better-sqlite3 is a peer dependency. */
export async function openSqliteStorage(path, options) {
  const { default: Database } = await import("better-sqlite3");
  return sqliteStorage(new Database(path), options);
}

/** Storage on an open better-sqlite3 `Database`. */
export function sqliteStorage(db, { table = "edgegrant_records" } = {}) {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error("edgegrant: invalid table name");
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    key TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    record TEXT NOT NULL,
    purge_after INTEGER
  )`);
  const select = db.prepare(`SELECT version, record FROM ${table} WHERE key = ?`);
  const version = db.prepare(`SELECT version FROM ${table} WHERE key = ?`).pluck();
  const upsert = db.prepare(
    `INSERT INTO ${table} (key, version, record, purge_after) VALUES (@key, 1, @record, @purge_after)
     ON CONFLICT(key) DO UPDATE SET version = version + 1, record = excluded.record, purge_after = excluded.purge_after`,
  );
  const purge = db.prepare(`DELETE FROM ${table} WHERE purge_after IS NOT NULL AND purge_after <= ?`);
  const applyAll = db.transaction((puts) => {
    for (const { key, expect } of puts) {
      const current = version.get(key);
      const holds = expect.expect === "absent" ? current === undefined : current === expect.version;
      if (!holds) return false;
    }
    for (const put of puts) {
      upsert.run({ key: put.key, record: JSON.stringify(put.record), purge_after: put.purge_after ?? null });
    }
    return true;
  });
  return {
    async read(keys) {
      const found = new Map();
      for (const key of keys) {
        const row = select.get(key);
        if (row) found.set(key, { version: row.version, record: JSON.parse(row.record) });
      }
      return found;
    },
    async apply({ puts }) {
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
