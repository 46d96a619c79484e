export { initialize, initializeClient, createCore, checkConfig, migrateApp, secretDigest, isCrossSite, entropyLength, createPkceMachine, clientEntropyLength } from "./core.js";
export { createAuthServer, runRequest, readBody, page, pageData, escapeHtml } from "./server.js";
export { readStep, packRecords } from "./packed.js";
export { createPkceClient, createDpopKey, IDLE } from "./client.js";
export { fetchDocument, checkDocumentUrl, isSpecialUseAddress, documentFetchLimits } from "./documents.js";
