// The WebAssembly core, loaded once per isolate or process. Hosts call `initialize` with the
// compiled module (Workers: the imported .wasm; Node: see ./node.js) before anything else.
import * as bindings from "../dist/edgegrant_wasm.js";

let initialized = false;

/** Instantiates the core from a `WebAssembly.Module` or the module's bytes. Idempotent. */
export function initialize(module) {
  if (!initialized) {
    bindings.initSync({ module });
    initialized = true;
  }
}

function ready() {
  if (!initialized) throw new Error("edgegrant: call initialize(wasmModule) first (or import edgegrant/node or edgegrant/workers)");
}

/** A validated configuration ready to handle steps. Throws an Error if the configuration is unusable. */
export function createCore(config) {
  ready();
  return new bindings.Core(config);
}

/** `{ tag: "ok" }` or `{ tag: "invalid", content: reason }`. */
export function checkConfig(config) {
  ready();
  return bindings.checkConfig(config);
}

/** The configuration with the legacy app `app` migrated to scopes (see the crate docs). Throws an Error if it cannot be. */
export function migrateApp(config, app) {
  ready();
  return bindings.migrateApp(config, app);
}

/** The digest to register for an app secret. */
export function secretDigest(secret) {
  ready();
  return bindings.secretDigest(secret);
}

/** How many bytes of entropy each call takes. */
export function entropyLength() {
  ready();
  return bindings.entropyLength();
}

/** The PKCE client machine for `config`. Throws an Error if the configuration cannot work. */
export function createPkceMachine(config) {
  ready();
  return new bindings.PkceClient(config);
}

/** How many bytes of entropy each client-machine call takes. */
export function clientEntropyLength() {
  ready();
  return bindings.clientEntropyLength();
}
