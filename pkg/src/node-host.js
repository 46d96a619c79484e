// What edgegrant/node adds to "." (the Node fetch of client metadata documents, node:http
// adapters, createAuthServer fetching documents with it), without loading a module: ./node.js
// and ./node-configured-apps.js each instantiate theirs, then export this.
import { createAuthServer as createServer } from "./server.js";
import { fetchDocumentNode } from "./documents-node.js";

export * from "./index.js";
export { fetchDocumentNode } from "./documents-node.js";
export { nodeHandler, closing, readNodeBody, bodyStream, requestOf, writeResponse } from "./node-http.js";

/**
 * createAuthServer, fetching client metadata documents with node:https: every address a name
 * resolves to is checked, and the connection goes to the checked one (fetchDocumentNode).
 */
export function createAuthServer(options) {
  // Anything but an options object goes as it is, to be refused with the reason.
  if (typeof options !== "object" || options === null || Array.isArray(options)) return createServer(options);
  return createServer({ ...options, fetchDocument: options.fetchDocument ?? fetchDocumentNode });
}
