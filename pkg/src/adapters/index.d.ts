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
/**
 * Workers KV for the write-once access- and refresh-token records, `strong` (e.g. the Durable
 * Object adapter over its stub) for codes, grants and links. A stale KV read can only miss a
 * token written moments ago elsewhere; it can never accept a revoked or expired one.
 */
export function kvTokenStorage(
  kv: { get(key: string, type?: "json"): Promise<unknown>; put(key: string, value: string, options?: { expiration?: number }): Promise<void>; delete(key: string): Promise<void> },
  strong: Storage & { purge(now: number): Promise<number> },
  options?: { prefix?: string },
): Storage & { purge(now: number): Promise<number> };
