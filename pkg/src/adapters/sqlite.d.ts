import type { PurgeableStorage } from "../index.js";

/** SQLite through a better-sqlite3 `Database` (a peer dependency); creates its table if needed. */
export function sqliteStorage(db: unknown, options?: { table?: string }): PurgeableStorage & { size(): number; close(): void };
/** Opens (or creates) the database file at `path`, then as `sqliteStorage`. */
export function openSqliteStorage(path: string, options?: { table?: string }): Promise<PurgeableStorage & { size(): number; close(): void }>;
