// Node entry point for configured apps only: as ./node.js, with the server's smaller module
// (dist/edgegrant_configured_apps_bg.wasm: no clients that arrive unannounced, and a
// configuration naming `profile.clients` refused).
import { readFileSync } from "node:fs";
import { initialize, initializeClient } from "./core.js";

initialize(readFileSync(new URL("../dist/edgegrant_configured_apps_bg.wasm", import.meta.url)));
initializeClient(readFileSync(new URL("../dist/edgegrant_client_bg.wasm", import.meta.url)));

export * from "./node-host.js";
