import type { PurgeableStorage } from "../index.js";

/** Inside a Durable Object: `durableObjectStorage(state.storage)`; one transaction per write. */
export function durableObjectStorage(storage: unknown): PurgeableStorage;
