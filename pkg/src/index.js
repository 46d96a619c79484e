export { initialize, initializeClient, createCore, checkConfig, migrateApp, secretDigest, entropyLength, createPkceMachine, clientEntropyLength } from "./core.js";
export { createAuthServer, runSteps, page, pageData, consentPageData, escapeHtml } from "./server.js";
export { createPkceClient, IDLE } from "./client.js";
