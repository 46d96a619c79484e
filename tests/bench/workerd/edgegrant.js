// The edgegrant subject of the workerd benchmark: the shared subject (../lib/edgegrant-subject.mjs)
// on the package's Workers entry (the .wasm imported as a compiled module), its access and refresh
// tokens in the shared in-memory KV (kvTokenStorage) and its grants, consent records and codes in
// the memory adapter standing in for the strong store.
import * as edgegrant from "../../../pkg/src/workers.js";
import { kvTokenStorage } from "../../../pkg/src/adapters/kv.js";
import { memoryStorage } from "../../../pkg/src/adapters/memory.js";
import { edgegrantSubject as subject } from "../lib/edgegrant-subject.mjs";

export const edgegrantSubject = (kv) => subject(edgegrant, kvTokenStorage(kv, memoryStorage()));
