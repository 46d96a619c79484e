// The WebAssembly modules, loaded once per isolate or process: the server's (`initialize`, before
// any server call) and the PKCE client's (`initializeClient`, before `createPkceMachine`). The
// entry points do it: ./node.js both, ./workers.js the server's, ./browser.js the client's.
//
// Values cross the boundary as JSON text (see wasm/src/lib.rs): this file is the one place that
// turns them into objects, with the engine's own JSON.parse / JSON.stringify, and takes request
// bodies out of the JSON to pass them as bytes.
import * as bindings from "../dist/edgegrant_wasm.js";
import * as clientBindings from "../dist/edgegrant_client.js";

let initialized = false;
let clientInitialized = false;

/** Instantiates the server's core from a `WebAssembly.Module` or the module's bytes. Idempotent. */
export function initialize(module) {
  if (!initialized) {
    bindings.initSync({ module });
    initialized = true;
  }
}

/** Instantiates the PKCE client's module (dist/edgegrant_client_bg.wasm) likewise. Idempotent. */
export function initializeClient(module) {
  if (!clientInitialized) {
    clientBindings.initSync({ module });
    clientInitialized = true;
  }
}

function ready() {
  if (!initialized) throw new Error("edgegrant: call initialize(wasmModule) first (or import edgegrant/node or edgegrant/workers)");
}

function clientReady() {
  if (!clientInitialized) throw new Error("edgegrant: call initializeClient(clientWasmModule) first (or import edgegrant/node or edgegrant/browser)");
}

const U64_LIMIT = 2n ** 64n;
const NO_BODY = new Uint8Array(0);

/** A time as the core's u64: a safe non-negative integer number or a bigint, never rounded. */
function unixTime(now) {
  if (typeof now === "bigint" && now >= 0n && now < U64_LIMIT) return now;
  if (Number.isSafeInteger(now) && now >= 0) return BigInt(now);
  throw new Error(`edgegrant: invalid time ${String(now)}: expected a non-negative safe integer or bigint`);
}

/** Body bytes from a Uint8Array, a list of byte values, or nothing. */
function bodyBytes(body) {
  if (body === undefined || body === null) return NO_BODY;
  if (body instanceof Uint8Array) return body;
  if (Array.isArray(body)) return Uint8Array.from(body);
  throw new Error("edgegrant: invalid input: request.body must be a Uint8Array or a list of bytes");
}

/** The input as JSON without its request body, and the body's bytes. */
function splitBody(input) {
  const request = input?.request;
  if (request === undefined || request === null || request.body === undefined) return [JSON.stringify(input), NO_BODY];
  const { body, ...rest } = request;
  return [JSON.stringify({ ...input, request: rest }), bodyBytes(body)];
}

/** A validated configuration ready to handle steps. Throws an Error if the configuration is unusable. */
export function createCore(config) {
  ready();
  const core = new bindings.Core(JSON.stringify(config));
  return {
    /** One step, stateless: every record loaded so far goes in again. */
    handle(input, now, entropy, records) {
      const [json, body] = splitBody(input);
      return JSON.parse(core.handle(json, body, unixTime(now), entropy, JSON.stringify(records)));
    },
    /**
     * One request, step by step: the input is parsed once, and `step(loaded)` takes only the
     * records loaded since the last step. Call `free()` when the request is done.
     */
    begin(input, now, entropy) {
      const [json, body] = splitBody(input);
      const pending = core.begin(json, body, unixTime(now), entropy);
      return {
        step: (loaded) => JSON.parse(pending.step(core, JSON.stringify(loaded))),
        free: () => pending.free(),
      };
    },
    requiredScope: (endpoint) => core.requiredScope(endpoint),
  };
}

/** `{ tag: "ok" }` or `{ tag: "invalid", content: reason }`. */
export function checkConfig(config) {
  ready();
  return JSON.parse(bindings.checkConfig(JSON.stringify(config)));
}

/** The configuration with the legacy app `app` migrated to scopes (see the crate docs). Throws an Error if it cannot be. */
export function migrateApp(config, app) {
  ready();
  return JSON.parse(bindings.migrateApp(JSON.stringify(config), app));
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
  clientReady();
  const machine = new clientBindings.PkceClient(JSON.stringify(config));
  return {
    handle: (state, input, now, entropy) =>
      JSON.parse(machine.handle(JSON.stringify(state), JSON.stringify(input), unixTime(now), entropy)),
  };
}

/** How many bytes of entropy each client-machine call takes. */
export function clientEntropyLength() {
  clientReady();
  return clientBindings.clientEntropyLength();
}
