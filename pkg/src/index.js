export { initialize, createCore, checkConfig, secretDigest, entropyLength } from "./core.js";
export { createAuthServer, runSteps } from "./server.js";
