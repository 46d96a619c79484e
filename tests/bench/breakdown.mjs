// Where one flow's time goes through the Fetch driver, by layer: `node tests/bench/breakdown.mjs
// [bearer|refresh|exchange] [iterations]`. Runs the Node benchmark's edgegrant subject
// (`server.fetch`, in-memory storage) under V8's sampling profiler in a child process and sorts
// every sample by where it was taken:
// - outside the server: the benchmark's client (building the Request, reading the answer's
//   JSON) and its loop, which an empty Fetch handler pays too;
// - the host's API handler: what the hook does (the bench's builds Response.json);
// - the wasm core: every frame in the module;
// - crossings: the bindings' glue (js-to-wasm frames, strings and arrays copied in);
// - the driver's JavaScript (pkg/src), and the runtime under it (Fetch objects read and built,
//   promises, text decoding) outside the host's handler;
// - the storage adapter, the garbage collector, and V8's own unattributed time.
// Percentages of all samples, and the µs each stands for at the loop's measured time per call.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const [flow = "bearer", iterations = "30000", child] = process.argv.slice(2);

if (child === "--run") {
  const edgegrant = await import("../../pkg/src/node.js");
  const { memoryStorage } = await import("../../pkg/src/adapters/memory.js");
  const { edgegrantSubject } = await import("./lib/edgegrant-subject.mjs");
  const subject = await edgegrantSubject(edgegrant, memoryStorage(), { machineStorage: memoryStorage() });
  const run = subject.flows[flow];
  if (!run) throw new Error(`no flow ${flow}: ${Object.keys(subject.flows).join(", ")}`);
  for (let i = 0; i < 2000; i++) await run();
  const start = performance.now();
  for (let i = 0; i < Number(iterations); i++) await run();
  console.log(((performance.now() - start) * 1000) / Number(iterations));
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { perCall, shares } = profileFlow(flow, iterations);
  console.log(`${flow} through server.fetch: ${perCall.toFixed(1)} µs per call (under the profiler)`);
  for (const [layer, share] of shares) console.log(`${(100 * share).toFixed(1).padStart(5)} %  ${(share * perCall).toFixed(1).padStart(6)} µs  ${layer}`);
}

/** Runs `flow` `iterations` times under the profiler in a child process: `{ perCall }` (µs) and each layer's `shares`. */
export function profileFlow(flow, iterations) {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-breakdown-"));
  try {
    const perCall = Number(execFileSync(process.execPath, ["--cpu-prof", "--cpu-prof-interval", "50", "--cpu-prof-dir", dir, fileURLToPath(import.meta.url), flow, String(iterations), "--run"], { encoding: "utf8" }));
    const profile = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"));
    return { perCall, shares: breakdown(profile) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each layer's share of a V8 CPU profile's samples, largest first: `[layer, share]` pairs. */
export function breakdown({ nodes, samples }) {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const layers = new Map();
  let total = 0;
  for (const id of samples) {
    const frame = byId.get(id).callFrame;
    if (frame.functionName === "(idle)") continue;
    const chain = [];
    for (let at = id; at !== undefined; at = parent.get(at)) chain.push(byId.get(at).callFrame);
    const inServer = chain.some((f) => f.url.endsWith("pkg/src/server.js") && (f.functionName === "fetch" || f.functionName === "serve"));
    const inHandler = chain.some((f) => f.functionName.includes("hooks.api"));
    let layer;
    if (frame.functionName === "(garbage collector)") layer = "garbage collector";
    else if (frame.functionName === "(program)") layer = "V8 itself, unattributed (compiling, the microtask queue)";
    else if (!inServer) layer = "outside the server (the client's Request and JSON, the loop)";
    else if (inHandler) layer = "the host's API handler (Response.json)";
    else if (frame.url.startsWith("wasm") || frame.url.includes(".wasm") || frame.functionName.startsWith("wasm-function")) layer = "wasm core";
    else if (frame.functionName.startsWith("js-to-wasm") || frame.url.endsWith("dist/edgegrant_wasm.js")) layer = "crossings (the bindings' glue)";
    else if (frame.url.includes("pkg/src/adapters/")) layer = "storage adapter";
    else if (frame.url.includes("pkg/src/")) layer = "driver JavaScript";
    else layer = "runtime under the driver (Fetch objects, promises, text)";
    layers.set(layer, (layers.get(layer) ?? 0) + 1);
    total++;
  }
  return [...layers].map(([layer, count]) => [layer, count / total]).sort((a, b) => b[1] - a[1]);
}
