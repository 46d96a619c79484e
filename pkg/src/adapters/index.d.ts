import type { Storage } from "../index.js";

export interface PurgeableStorage extends Storage {
  /** Deletes the records whose purge time is at or before `now`; resolves how many. */
  purge(now: number): Promise<number>;
  size(): number;
}

/** In memory (tests, single process). */
export function memoryStorage(): PurgeableStorage;
/** SQLite through better-sqlite3 (a peer dependency). */
export function sqliteStorage(db: unknown, options?: { table?: string }): PurgeableStorage & { close(): void };
export function openSqliteStorage(path: string, options?: { table?: string }): Promise<PurgeableStorage & { close(): void }>;
/** Inside a Durable Object: `durableObjectStorage(state.storage)`. */
export function durableObjectStorage(storage: unknown): Storage & { purge(now: number): Promise<number> };
