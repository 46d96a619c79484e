// The package root on Node: the same names as ./index.js (nothing loaded), but what fetches
// client metadata documents — createAuthServer and runRequest — fetches them by default with
// fetchDocumentNode, which checks every address a name resolves to and connects to a checked
// one. The web fetch (./documents.js) cannot see those addresses, and on Node no network keeps
// it off private ones: a public name pointing at 127.0.0.1 or 169.254.169.254 would be fetched.
//
// Chosen by package.json's "exports" condition "node", not by a runtime check in ./server.js:
// ./server.js is bundled for workerd and browsers too, where node:https and node:dns do not
// exist, and a bundler must not meet an import of them there (wrangler refuses one without
// nodejs_compat; a dynamic import behind a check would still be bundled, or hidden from it by a
// trick). The condition makes the choice when the import is resolved: Node sets "node"; wrangler
// resolves with "workerd", "worker" and "browser", which package.json lists first, so a bundler
// that sets both still takes ./index.js. ./node-host.js (edgegrant/node) exports these too.
import { createAuthServer as createServer, runRequest as runWithFetcher } from "./server.js";
import { fetchDocumentNode } from "./documents-node.js";

export * from "./index.js";

/** Whether `options` is an options object (anything else goes to createAuthServer as it is, to be refused with the reason). */
const isOptions = (options) => typeof options === "object" && options !== null && !Array.isArray(options);

/**
 * createAuthServer, fetching client metadata documents with node:https by default: every
 * address a name resolves to is checked, and the connection goes to the checked one
 * (fetchDocumentNode). A `fetchDocument` of the host's own replaces it.
 */
export function createAuthServer(options) {
  if (!isOptions(options)) return createServer(options);
  return createServer({ ...options, fetchDocument: options.fetchDocument ?? fetchDocumentNode });
}

/** runRequest, fetching client metadata documents with fetchDocumentNode unless `options.fetchDocument` names another fetcher. */
export function runRequest(request, storage, options = {}) {
  return runWithFetcher(request, storage, { ...options, fetchDocument: options?.fetchDocument ?? fetchDocumentNode });
}
