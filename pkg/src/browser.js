// Browser entry point: compiles the WebAssembly module next to this package and initializes the
// core before anything is exported.
import { initialize } from "./core.js";

initialize(await WebAssembly.compileStreaming(fetch(new URL("../dist/edgegrant_wasm_bg.wasm", import.meta.url))));

export * from "./index.js";
