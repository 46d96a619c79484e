import type { PurgeableStorage } from "../index.js";

/**
 * Inside a Durable Object: `durableObjectStorage(ctx.storage)`; one transaction per write, records
 * indexed by purge time. `alarms: true` keeps the object's alarm at its earliest purge time: call
 * `purge(now)` from the object's `alarm()` handler.
 */
export function durableObjectStorage(storage: unknown, options?: { alarms?: boolean }): PurgeableStorage;
