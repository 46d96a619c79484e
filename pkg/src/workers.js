// Cloudflare Workers entry point: wrangler imports the .wasm as a compiled WebAssembly.Module.
import wasmModule from "../dist/edgegrant_wasm_bg.wasm";
import { initialize } from "./core.js";

initialize(wasmModule);

export * from "./index.js";
