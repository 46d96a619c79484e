// The benchmark command: `node tests/bench/run.mjs [--quick] [--no-readme]`.
// Builds what it needs (pkg/scripts/setup.sh, which also enforces the wasm size budget), then
// measures, in one run: the core natively (criterion; ratios to one SHA-256 measured in the same
// run), the wasm module's size and cold start in Node, and the package side by side with its
// peers in their home runtimes (Node: @node-oauth/oauth2-server; workerd: @cloudflare/
// workers-oauth-provider). Prints the results and writes them into README.md between the
// `<!-- bench:begin -->` and `<!-- bench:end -->` markers (ratios first, figures as context).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const quick = process.argv.includes("--quick");
const writeReadme = !process.argv.includes("--no-readme") && !quick;
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
const output = (cmd, args) => execFileSync(cmd, args, { cwd: root, encoding: "utf8" }).trim();

run("bash", ["pkg/scripts/setup.sh", "tests/bench"]);

// --- native -------------------------------------------------------------------------------
const NATIVE = [
  { id: "bearer_validation", name: "bearer validation", floor: "sha256_and_lookup", target: "≤ 2× (SHA-256 + one map lookup)", limit: 2 },
  { id: "code_exchange", name: "code exchange (authorize, consent, token)", target: "≤ 2 µs", limitNs: 2000 },
  { id: "refresh", name: "refresh" },
  { id: "revocation", name: "revocation" },
];
console.error("native: cargo bench (criterion)");
run("cargo", ["bench", "-q", "-p", "edgegrant-tests", "--bench", "core", "--", "--warm-up-time", "1", "--measurement-time", quick ? "1" : "4"]);
const estimate = (id) =>
  JSON.parse(readFileSync(join(root, "target/criterion", id, "new/estimates.json"), "utf8")).median.point_estimate;
const sha = estimate("sha256_token");
const native = NATIVE.map((op) => {
  const ns = estimate(op.id);
  const floorNs = op.floor ? estimate(op.floor) : sha;
  return { ...op, ns, ratio: ns / sha, floorRatio: ns / floorNs };
});

// --- size and cold start ------------------------------------------------------------------
const size = (name) => {
  const bytes = readFileSync(join(root, "pkg/dist", `${name}_bg.wasm`));
  return { raw: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
};
const sizes = { server: size("edgegrant_wasm"), client: size("edgegrant_client") };
const budgets = Object.fromEntries(
  [...readFileSync(join(root, "pkg/scripts/build.mjs"), "utf8").matchAll(/(edgegrant_\w+): (\d+) \* 1024/g)].map(([, name, kib]) => [name, Number(kib) * 1024]),
);
console.error("cold start: fresh Node processes");
const { coldStart } = await import("./coldstart/coldstart.mjs");
const cold = coldStart({ samples: quick ? 3 : 15 });

// --- side by side -------------------------------------------------------------------------
console.error("Node: edgegrant and @node-oauth/oauth2-server, alternating");
const { benchNode } = await import("./node/bench.mjs");
const node = await benchNode(quick ? { rounds: 2, batch: 20, warmup: 5 } : {});
console.error("workerd: edgegrant and @cloudflare/workers-oauth-provider, alternating");
const { benchWorkerd } = await import("./workerd/bench.mjs");
const workerd = await benchWorkerd(quick ? { rounds: 2, batch: 100, warmup: 5, latencySamples: 20 } : {}); // workerd's clock ticks in ms: batches of 100

// --- report -------------------------------------------------------------------------------
const fixed = (n, digits = 1) => n.toFixed(digits);
const group = (n) => Math.round(n).toLocaleString("en-US");
const time = (ns) => (ns >= 1000 ? `${fixed(ns / 1000, 2)} µs` : `${fixed(ns, 0)} ns`);
const kib = (n) => `${fixed(n / 1024)} KiB`;
const cpu = cpus()[0]?.model.trim() ?? "unknown CPU";
const machine = `${cpu}, ${cpus().length} cores; ${output("rustc", ["--version"])}; Node ${process.version}`;
const met = (ok) => (ok ? "met" : "**missed**");
const FLOWS = { exchange: "code exchange", refresh: "refresh", bearer: "bearer check" };
const sideBySide = (result) =>
  Object.entries(FLOWS).map(([flow, name]) => {
    const { edgegrant, peer, ratio } = result.flows[flow];
    const latency = (s) => (Number.isFinite(s.p50) ? `${group(s.p50)} / ${group(s.p99)}` : "–");
    return `| ${name} | **${fixed(ratio, 2)}×** ${met(ratio >= 3)} | ${group(edgegrant.opsPerSecond)} | ${group(peer.opsPerSecond)} | ${latency(edgegrant)} | ${latency(peer)} |`;
  });
const table = [
  `Measured ${new Date().toISOString().slice(0, 10)} by \`node tests/bench/run.mjs\` on: ${machine}.`,
  "",
  "**Native core** (criterion, median; the whole host loop around `handle` with an in-memory store; targets from issue 6):",
  "",
  "| operation | × one SHA-256 of a token | time | target | |",
  "|---|---|---|---|---|",
  `| one SHA-256 of a 43-byte token (the floor) | 1× | ${time(sha)} | | |`,
  ...native.map((op) => {
    const target = op.limit !== undefined ? op.floorRatio <= op.limit : op.limitNs !== undefined ? op.ns <= op.limitNs : null;
    const extra = op.floor ? ` (${fixed(op.floorRatio)}× SHA-256 + lookup)` : "";
    return `| ${op.name} | **${fixed(op.ratio)}×**${extra} | ${time(op.ns)} | ${op.target ?? ""} | ${target === null ? "" : met(target)} |`;
  }),
  "",
  `**Through wasm, side by side** (ratio = edgegrant ops/s ÷ peer ops/s; target ≥ 3×; latency p50 / p99 in µs):`,
  "",
  `*Node* — ${node.runtime}, peer ${node.peer}:`,
  "",
  "| flow | ratio | edgegrant ops/s | peer ops/s | edgegrant latency | peer latency |",
  "|---|---|---|---|---|---|",
  ...sideBySide(node),
  "",
  `*workerd* — ${workerd.runtime}, peer ${workerd.peer}:`,
  "",
  "| flow | ratio | edgegrant ops/s | peer ops/s | edgegrant latency | peer latency |",
  "|---|---|---|---|---|---|",
  ...sideBySide(workerd),
  "",
  "**Size and cold start** (wasm-opt -Oz; gzip -9):",
  "",
  "| module | raw | gzipped | budget (build fails above) | goal |",
  "|---|---|---|---|---|",
  `| server (\`dist/edgegrant_wasm_bg.wasm\`) | ${kib(sizes.server.raw)} | ${kib(sizes.server.gzipped)} | ${kib(budgets.edgegrant_wasm)} | 64 KiB ${met(sizes.server.gzipped <= 64 * 1024)} |`,
  `| PKCE client (\`dist/edgegrant_client_bg.wasm\`) | ${kib(sizes.client.raw)} | ${kib(sizes.client.gzipped)} | ${kib(budgets.edgegrant_client)} | |`,
  "",
  `| cold start in Node (median of ${cold.samples} processes) | compile | instantiate | configure | first request |`,
  "|---|---|---|---|---|",
  `| server module | ${fixed(cold.compile, 2)} ms | ${fixed(cold.instantiate, 2)} ms | ${fixed(cold.configure, 2)} ms | ${fixed(cold.firstRequest, 2)} ms (after Node's own Fetch API start-up, ${fixed(cold.fetchApi, 1)} ms) |`,
  "",
  `Compile + instantiate ${fixed(cold.compile + cold.instantiate, 2)} ms against the ≤ 5 ms target: ${met(cold.compile + cold.instantiate <= 5)}.`,
  "",
  "Fairness, as each benchmark reports it:",
  "",
  ...[...node.fairness.map((f) => `- Node: ${f}`), ...workerd.fairness.map((f) => `- workerd: ${f}`)],
].join("\n");

console.log(table);
if (writeReadme) {
  const path = join(root, "README.md");
  const readme = readFileSync(path, "utf8");
  const begin = "<!-- bench:begin -->";
  const end = "<!-- bench:end -->";
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) throw new Error("README.md has no bench markers");
  writeFileSync(path, `${readme.slice(0, from + begin.length)}\n${table}\n${readme.slice(to)}`);
  console.error("README.md: results table written");
}
