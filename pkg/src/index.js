export { initialize, createCore, checkConfig, secretDigest, entropyLength } from "./core.js";
export { createAuthServer, runSteps, page, escapeHtml } from "./server.js";
