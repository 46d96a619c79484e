// Node entry point: loads both WebAssembly modules from the package (the server's and the PKCE
// client's) and initializes them.
import { readFileSync } from "node:fs";
import { initialize, initializeClient } from "./core.js";
import { createAuthServer as createServer } from "./server.js";
import { fetchDocumentNode } from "./documents-node.js";

initialize(readFileSync(new URL("../dist/edgegrant_wasm_bg.wasm", import.meta.url)));
initializeClient(readFileSync(new URL("../dist/edgegrant_client_bg.wasm", import.meta.url)));

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
