// The edgegrant side of the Node benchmark: the shared subject (../../lib/edgegrant-subject.mjs)
// on the package's Node entry, over its in-memory storage adapter.
import * as edgegrant from "../../../../pkg/src/node.js";
import { memoryStorage } from "../../../../pkg/src/adapters/memory.js";
import { edgegrantSubject as subject } from "../../lib/edgegrant-subject.mjs";

export const edgegrantSubject = () => subject(edgegrant, memoryStorage());
