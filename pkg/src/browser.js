// Browser entry point: compiles the PKCE client's WebAssembly module (the server's is not loaded:
// a browser is the client) and initializes it before anything is exported.
import { initializeClient } from "./core.js";

initializeClient(await WebAssembly.compileStreaming(fetch(new URL("../dist/edgegrant_client_bg.wasm", import.meta.url))));

export * from "./index.js";
