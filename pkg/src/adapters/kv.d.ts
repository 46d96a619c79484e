import type { PurgeableStorage } from "../index.js";

/** The part of a Workers KV namespace the adapter uses. */
export interface KvNamespace {
  get(key: string, type: "arrayBuffer"): Promise<ArrayBuffer | null>;
  get(key: string): Promise<string | null>;
  put(key: string, value: ArrayBuffer | Uint8Array, options?: { expiration?: number }): Promise<void>;
  delete(key: string): Promise<void>;
}

/**
 * Workers KV for the write-once access- and refresh-token records, `strong` (e.g. the Durable
 * Object adapter, reached over its stub) for codes, grants and links. A stale KV read can only
 * miss a token written moments ago elsewhere; it can never accept a revoked or expired one.
 * `prefix` namespaces the KV keys (one namespace shared by several servers).
 */
export function kvTokenStorage(kv: KvNamespace, strong: PurgeableStorage, options?: { prefix?: string }): PurgeableStorage;
