// Node entry point: loads the WebAssembly module from the package and initializes the core.
import { readFileSync } from "node:fs";
import { initialize } from "./core.js";

initialize(readFileSync(new URL("../dist/edgegrant_wasm_bg.wasm", import.meta.url)));

export * from "./index.js";
