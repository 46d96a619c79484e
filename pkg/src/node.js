// Node entry point: loads both WebAssembly modules from the package (the server's and the PKCE
// client's) and initializes them.
import { readFileSync } from "node:fs";
import { initialize, initializeClient } from "./core.js";

initialize(readFileSync(new URL("../dist/edgegrant_wasm_bg.wasm", import.meta.url)));
initializeClient(readFileSync(new URL("../dist/edgegrant_client_bg.wasm", import.meta.url)));

export * from "./node-host.js";
