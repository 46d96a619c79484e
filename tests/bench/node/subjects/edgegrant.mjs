// The edgegrant side of the Node benchmark: the shared subjects (../../lib/edgegrant-subject.mjs)
// on the package's Node entry, each over its own in-memory storage adapter — one through the
// Fetch driver (`server.fetch`), one through the plain-value entry (`server.handle`).
import * as edgegrant from "../../../../pkg/src/node.js";
import { memoryStorage } from "../../../../pkg/src/adapters/memory.js";
import { edgegrantPlainSubject as plain, edgegrantSubject as subject } from "../../lib/edgegrant-subject.mjs";

export const edgegrantSubject = (options) => subject(edgegrant, memoryStorage(), { ...options, machineStorage: memoryStorage() });
export const edgegrantPlainSubject = (options) => plain(edgegrant, memoryStorage(), { ...options, machineStorage: memoryStorage() });
