import type { PurgeableStorage } from "../index.js";

/** PostgreSQL storage, extra verbs beside the storage contract. */
export interface PostgresStorage extends PurgeableStorage {
  /** How many records are stored. */
  size(): Promise<number>;
  /** Bytes on disk of the table with its indexes. */
  diskBytes(): Promise<number>;
}

/** Storage on a node-postgres `Pool` (a peer dependency); creates its table and function if needed. */
export function postgresStorage(pool: unknown, options?: { table?: string; purgeBatch?: number }): Promise<PostgresStorage>;
/** Opens a pool on `url` (`postgres://…`), then as `postgresStorage`; `close()` ends the pool. */
export function openPostgresStorage(
  url: string,
  options?: { table?: string; purgeBatch?: number; max?: number },
): Promise<PostgresStorage & { close(): Promise<void> }>;
