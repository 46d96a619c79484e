import type { PurgeableStorage } from "../index.js";

/** In memory (tests, single process): records are lost when the process ends. */
export function memoryStorage(): PurgeableStorage & { size(): number };
