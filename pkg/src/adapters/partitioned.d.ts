import type { Storage } from "../index.js";

/** The partition of a record key: its text up to the first "/". */
export function partitionOfKey(key: string): string;
/** One storage over a store per partition: reads split by partition, each transaction whole to its partition's store. */
export function partitionedStorage(storageOf: (partition: string) => Storage): Storage;
