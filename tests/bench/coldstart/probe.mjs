// One cold start, in a fresh Node process (run by ./coldstart.mjs, once per sample): compile the
// server's wasm module (the one its argument names in pkg/dist: edgegrant_wasm, the default, or
// edgegrant_configured_apps), instantiate it, then serve the first request — a bearer check against a
// token a store already holds, the request a warm edge isolate sees most. Prints JSON (ms).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const t0 = performance.now();
const bytes = readFileSync(new URL(`../../../pkg/dist/${process.argv[2] ?? "edgegrant_wasm"}_bg.wasm`, import.meta.url));
const { initialize, createAuthServer } = await import("../../../pkg/src/index.js");
const { memoryStorage } = await import("../../../pkg/src/adapters/memory.js");
const t1 = performance.now();
const module = await WebAssembly.compile(bytes);
const t2 = performance.now();
initialize(module);
const t3 = performance.now();

const user = { account_id: "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", uid: "12345" };
const server = createAuthServer({
  serverKey: "Y29sZHN0YXJ0LXByb2JlLXNlcnZlci1rZXktMzItYnk",
  apps: [{ key: "app", name: "App", redirect_uris: ["https://app.example/cb"], permissions: { kind: "scoped", scopes: ["account_info.read"] } }],
  apiEndpoints: { "/2/users/get_current_account": "account_info.read" },
  storage: memoryStorage(),
  hooks: {
    currentUser: () => user,
    api: { "/2/users/get_current_account": (principal) => Response.json({ account_id: principal.account_id }) },
  },
});
const t4 = performance.now();
// Node loads its Fetch API (undici) on first use: timed apart, it is Node's cost, not ours.
new Response(new Request("https://auth.example/", { method: "POST", body: "x" }).body);
const t5 = performance.now();
const response = await server.fetch(
  new Request("https://auth.example/2/users/get_current_account", { method: "POST", headers: { Authorization: "Bearer sl.unknown-token-0123456789abcdefghijklmnopqrstu" } }),
);
const t6 = performance.now();
if (response.status !== 401) throw new Error(`first request: expected 401 for an unknown token, got ${response.status}`);
console.log(JSON.stringify({ load: t1 - t0, compile: t2 - t1, instantiate: t3 - t2, configure: t4 - t3, fetchApi: t5 - t4, firstRequest: t6 - t5 }));
