// PostgreSQL storage for Node, on node-postgres (`pg`): one table of versioned records (the core's
// opaque bytes) that any number of host processes share. A transaction is one call of a
// PL/pgSQL function, so it is one round trip and all-or-nothing: every put is an INSERT … ON
// CONFLICT DO NOTHING (expect absent) or an UPDATE … WHERE version = expected (expect a
// version); the first put that finds its condition false raises, the function's exception block
// rolls every put back and answers false. Under READ COMMITTED a racing writer waits for the row's
// other writer and then re-checks the condition on the row as committed, so of two requests that
// read the same version exactly one writes. Puts go in key order, so two transactions never wait
// on each other in a circle (and a deadlock abort, should one happen, is answered as a conflict).
//
// The table is keyed by (partition, key): the partition (the key's text up to its first "/") is
// the distribution column for a sharded PostgreSQL (Citus: create_distributed_table on it), since
// the core never writes across partitions in one transaction — see README.md.

import { partitionOfKey as partitionOf } from "./partitioned.js";
const CONFLICT = "EG409"; // the function's own SQLSTATE for "a condition did not hold"
const RETRYABLE = new Set(["40P01", "40001"]); // deadlock, serialization failure: another writer won


/** Opens a pool on `url` (`postgres://…`) and the store on it; `pg` is a peer dependency. */
export async function openPostgresStorage(url, { max = 10, ...options } = {}) {
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({ connectionString: url, max });
  // An idle connection that breaks (a server restart) must not take the host down; the next query reconnects.
  pool.on("error", (error) => console.error("edgegrant: an idle PostgreSQL connection failed:", error.message));
  const storage = await postgresStorage(pool, options);
  return { ...storage, close: () => pool.end() };
}

/** Storage on a `pg.Pool` (its `query` and `connect`); creates its table and function if needed. */
export async function postgresStorage(pool, { table = "edgegrant_store", purgeBatch = 1000 } = {}) {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,40}$/.test(table)) throw new Error("edgegrant: invalid table name");
  const client = await pool.connect();
  try {
    // Several processes may start at once on a new database: one creates, the others wait.
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`edgegrant ${table}`]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${table} (
      partition text NOT NULL,
      key text NOT NULL,
      version integer NOT NULL,
      bytes bytea NOT NULL,
      purge_after bigint,
      PRIMARY KEY (partition, key)
    )`);
    await client.query(`CREATE INDEX IF NOT EXISTS ${table}_purge ON ${table} (purge_after) WHERE purge_after IS NOT NULL`);
    await client.query(`CREATE OR REPLACE FUNCTION ${table}_apply(
        p_partitions text[], p_keys text[], p_expects integer[], p_records bytea[], p_purges bigint[]
      ) RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN
        FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
          IF p_expects[i] IS NULL THEN
            INSERT INTO ${table} (partition, key, version, bytes, purge_after)
              VALUES (p_partitions[i], p_keys[i], 1, p_records[i], p_purges[i])
              ON CONFLICT DO NOTHING;
          ELSE
            UPDATE ${table} SET version = version + 1, bytes = p_records[i], purge_after = p_purges[i]
              WHERE partition = p_partitions[i] AND key = p_keys[i] AND version = p_expects[i];
          END IF;
          IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = '${CONFLICT}';
          END IF;
        END LOOP;
        RETURN true;
      EXCEPTION WHEN SQLSTATE '${CONFLICT}' THEN
        RETURN false;
      END $$`);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }

  const read = { name: `${table}_read`, text: `SELECT key, version, bytes FROM ${table} WHERE partition = ANY($1) AND key = ANY($2)` };
  const apply = { name: `${table}_apply`, text: `SELECT ${table}_apply($1, $2, $3, $4, $5) AS applied` };
  // Deletes one batch of due records; SKIP LOCKED lets several hosts purge side by side.
  const purgeSome = {
    name: `${table}_purge`,
    text: `WITH due AS (
        SELECT partition, key FROM ${table} WHERE purge_after <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED
      ) DELETE FROM ${table} t USING due WHERE t.partition = due.partition AND t.key = due.key`,
  };

  return {
    async read(keys) {
      const { rows } = await pool.query({ ...read, values: [[...new Set(keys.map(partitionOf))], keys] });
      const found = new Map();
      for (const row of rows) found.set(row.key, { version: row.version, bytes: row.bytes });
      return found;
    },
    async apply({ puts }) {
      const sorted = [...puts].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const values = [
        sorted.map((put) => partitionOf(put.key)),
        sorted.map((put) => put.key),
        sorted.map((put) => put.expect ?? null),
        sorted.map((put) => Buffer.from(put.bytes.buffer, put.bytes.byteOffset, put.bytes.byteLength)),
        sorted.map((put) => put.purgeAfter ?? null),
      ];
      try {
        const { rows } = await pool.query({ ...apply, values });
        return rows[0].applied === true;
      } catch (error) {
        if (RETRYABLE.has(error.code)) return false;
        throw error;
      }
    },
    /** Deletes the records whose purge time is at or before `now`, through the purge index, in batches; resolves how many. */
    async purge(now) {
      let removed = 0;
      for (;;) {
        const { rowCount } = await pool.query({ ...purgeSome, values: [now, purgeBatch] });
        removed += rowCount;
        if (rowCount < purgeBatch) return removed;
      }
    },
    /** How many records are stored. */
    size: async () => Number((await pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n),
    /** Bytes on disk of the table with its indexes (and TOAST). */
    diskBytes: async () => Number((await pool.query(`SELECT pg_total_relation_size($1) AS n`, [table])).rows[0].n),
  };
}
