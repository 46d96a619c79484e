// Cloudflare Workers entry point for configured apps only: as ./workers.js, with the server's
// smaller module (no clients that arrive unannounced; a configuration naming `profile.clients`
// is refused), 15 KiB less to deploy (gzipped).
import wasmModule from "../dist/edgegrant_configured_apps_bg.wasm";
import { initialize } from "./core.js";

initialize(wasmModule);

export * from "./index.js";
