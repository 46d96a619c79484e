export { initialize, createCore, checkConfig, secretDigest, entropyLength, createPkceMachine, clientEntropyLength } from "./core.js";
export { createAuthServer, runSteps, page, escapeHtml } from "./server.js";
export { createPkceClient, IDLE } from "./client.js";
