// Before and after of one change, in Node: two builds of the npm package side by side in one
// process, through the plain-value entry (`server.handle`, the bench subject of
// lib/edgegrant-subject.mjs, each on its own memory storage), alternating which goes first
// every round, the first two rounds discarded as warm-up. What issue 29 measures each lever by,
// beside callgrind's instruction counts (tests/examples/profile_loop.rs): this machine's
// timings move with its load, and only two builds measured in the same minutes compare.
//
//   node tests/bench/ab.mjs --snapshot /tmp/pkg-before   # keep the package as built now
//   ... change, then `node pkg/scripts/build.mjs` ...
//   node tests/bench/ab.mjs --snapshot /tmp/pkg-after
//   node tests/bench/ab.mjs /tmp/pkg-before /tmp/pkg-after [--rounds 12] [--storage sqlite]
//
// `--storage sqlite` puts each build on its own SQLite database (better-sqlite3, the Node host's
// embedded store, in a temporary directory) instead of memory: what a lever that changes how
// many records or round trips a request takes is measured on.
//
// Prints each flow's median time per operation for both, and after ÷ before.
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { edgegrantPlainSubject } from "./lib/edgegrant-subject.mjs";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "../../pkg");
const args = process.argv.slice(2);

if (args[0] === "--snapshot") {
  const into = resolve(args[1] ?? "");
  if (!args[1]) throw new Error("--snapshot needs a directory");
  rmSync(into, { recursive: true, force: true });
  mkdirSync(into, { recursive: true });
  for (const part of ["src", "dist", "package.json"]) cpSync(join(pkg, part), join(into, part), { recursive: true });
  console.log(`the package as built now is in ${into}`);
  process.exit(0);
}

const [before, after] = args.filter((a) => !a.startsWith("--"));
if (!before || !after) throw new Error("usage: node tests/bench/ab.mjs BEFORE AFTER [--rounds N] (or --snapshot DIR)");
const roundsAt = args.indexOf("--rounds");
const rounds = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 12;
const storageAt = args.indexOf("--storage");
const storageKind = storageAt >= 0 ? args[storageAt + 1] : "memory";
if (!["memory", "sqlite"].includes(storageKind)) throw new Error("--storage is memory or sqlite");
const databases = storageKind === "sqlite" ? mkdtempSync(join(tmpdir(), "edgegrant-ab-")) : null;
process.on("exit", () => databases && rmSync(databases, { recursive: true, force: true }));
const WARM_UP = 2;
const OPERATIONS = { bearer: 4000, refresh: 2000, exchange: 300 };

async function subject(dir, name) {
  const at = (file) => pathToFileURL(join(resolve(dir), file)).href;
  const entry = await import(at("src/node.js"));
  const storage = databases
    ? // This checkout's adapter for both: it resolves better-sqlite3, a snapshot has no node_modules.
      await (await import(pathToFileURL(join(pkg, "src/adapters/sqlite.js")).href)).openSqliteStorage(join(databases, `${name}.db`))
    : (await import(at("src/adapters/memory.js"))).memoryStorage();
  return edgegrantPlainSubject(entry, storage, { name });
}

const subjects = { before: await subject(before, "before"), after: await subject(after, "after") };
const times = {};
for (let round = 0; round < rounds; round++) {
  const order = round % 2 ? ["after", "before"] : ["before", "after"];
  for (const [flow, count] of Object.entries(OPERATIONS)) {
    for (const name of order) {
      const run = subjects[name].flows[flow];
      const start = performance.now();
      for (let i = 0; i < count; i++) await run();
      const micros = ((performance.now() - start) * 1000) / count;
      if (round >= WARM_UP) ((times[flow] ??= { before: [], after: [] })[name]).push(micros);
    }
  }
}
const median = (values) => values.sort((a, b) => a - b)[values.length >> 1];
for (const [flow, { before: b, after: a }] of Object.entries(times)) {
  const [was, is] = [median(b), median(a)];
  console.log(`${flow}: before ${was.toFixed(1)} µs, after ${is.toFixed(1)} µs, after ÷ before ${(is / was).toFixed(3)}`);
}
