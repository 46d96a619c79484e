// The workerd side-by-side benchmark: edgegrant against @cloudflare/workers-oauth-provider 1.2.3,
// both inside one workerd isolate (Miniflare's API, modules resolved by Miniflare, no bundler)
// over one shared in-memory KV (worker.js). Throughput comes from the shared loop run in the
// isolate, batch-timed (workerd's clock moves in whole milliseconds); latency percentiles come
// from Node, one operation per dispatchFetch, subjects alternating. Used by tests/bench/run.mjs;
// run on its own with `node tests/bench/workerd/bench.mjs [--quick]` for a table and the JSON.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { quantile } from "../lib/measure.mjs";

const FLOWS = ["exchange", "refresh", "bearer"];
const SUBJECTS = ["edgegrant", "peer"];
const PEER = "@cloudflare/workers-oauth-provider 1.2.3";

const require = createRequire(import.meta.url);
const versionOf = (name) => JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")).version;
const root = fileURLToPath(new URL("../../../", import.meta.url));

export const FAIRNESS = [
  "Both run in one workerd isolate (Miniflare), driven in-isolate through their Fetch handlers with real Request objects (edgegrant server.fetch(request), its Workers entry; the peer provider.fetch(request, env, ctx)), alternating subject order every round, each flow warmed up first.",
  "Storage: both use the same in-memory KV-shaped object (a Map behind async get/put/delete/list, as Workers KV hands out fresh values: text parsed on every JSON read, bytes copied on every write and read; list served from a key-segment index), one instance shared by both, so storage costs the same and the library is what is measured; the peer keeps JSON text there, edgegrant its access and refresh tokens as the core's opaque record bytes through its kv adapter (kvTokenStorage), and its grants, consent records and codes in its memory adapter (opaque bytes in a Map, answering synchronously) standing in for the strongly consistent store.",
  "Crypto: the peer hashes tokens, codes, client secrets and the PKCE verifier with SHA-256 via WebCrypto, encrypts props with AES-GCM and wraps the props key for every code and token with AES-KW under an HMAC-SHA-256-derived key (all native WebCrypto in workerd); edgegrant hashes with SHA-256 in wasm and stores digests only, and has no props to encrypt.",
  "Exchange: a fresh user every iteration, both with a confidential client (secret in the body) and PKCE S256 and asking for a refresh token; edgegrant runs its first-time consent: GET /oauth2/authorize renders the consent page, the consent POST (Sec-Fetch-Site: same-origin) writes the code with a consent record, then the token request; the peer's /authorize is the application's defaultHandler (parseAuthRequest, lookupClient, completeAuthorization, which also lists the user's grants to revoke older ones, then a 302) with no consent page or consent record (the library leaves both to the application), then its token request.",
  "Refresh: each library's default; edgegrant's refresh tokens are reusable, so every iteration presents the same one and gets a new access token; the peer rotates, issuing a new refresh token each time (the previous one stays valid once more), and the loop always presents the newest.",
  "Bearer: edgegrant hashes the token, reads its record from KV and its account's ledger from the strong store (its grant and link as well had anything of the account ended since the token was minted: not in this loop), checks the Required Scope account_info.read, then its api hook answers a small JSON with Response.json; the peer checks the token (SHA-256, KV read, expiry, audience, key unwrap and props decryption) and its apiHandler checks account_info.read in ctx.auth.scope (the library leaves scopes to the handler) before answering the same JSON.",
  "Throughput (ops/s) is timed in the isolate over whole batches, because performance.now() and Date.now() inside local workerd move in 1 ms steps; latency percentiles are timed in Node around one dispatchFetch per operation, so they include the Node↔workerd hop, which is the same for both subjects.",
];

const miniflare = () =>
  new Miniflare({
    modules: true,
    scriptPath: fileURLToPath(new URL("./worker.js", import.meta.url)),
    modulesRoot: root,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-20",
    // The peer's README asks for it (for Client ID Metadata Documents, unused here); without it
    // the peer warns at load. It changes nothing measured.
    compatibilityFlags: ["global_fetch_strictly_public"],
  });

async function get(mf, path) {
  const response = await mf.dispatchFetch(`http://bench${path}`);
  const text = await response.text();
  if (!response.ok) throw new Error(`workerd ${path}: ${response.status} ${text}`);
  return text;
}

/** Latencies (ms) of `samples` single operations per subject, timed in Node, subjects alternating. */
async function latencies(mf, flow, samples) {
  const paths = Object.fromEntries(SUBJECTS.map((name) => [name, `/op?subject=${name}&flow=${flow}`]));
  const times = Object.fromEntries(SUBJECTS.map((name) => [name, []]));
  for (let i = 0; i < samples; i++) {
    for (const name of i % 2 === 0 ? SUBJECTS : [...SUBJECTS].reverse()) {
      const start = performance.now();
      await get(mf, paths[name]);
      times[name].push(performance.now() - start);
    }
  }
  return times;
}

const us = (values, q) => quantile(values, q) * 1000;

/** Runs the comparison; `{}` is the full run (about 40 s on a 2-core machine). */
export async function benchWorkerd({ rounds = 20, batch = 1000, warmup = 500, latencySamples = 1000 } = {}) {
  const mf = miniflare();
  try {
    const warm = Math.min(latencySamples, 50);
    const hop = [];
    for (let i = 0; i < warm + latencySamples; i++) {
      const start = performance.now();
      await get(mf, "/ping");
      if (i >= warm) hop.push(performance.now() - start);
    }
    await get(mf, "/ready");
    const wall = performance.now();
    const bench = JSON.parse(await get(mf, `/bench?rounds=${rounds}&batch=${batch}&warmup=${warmup}`));
    const wallMs = performance.now() - wall;

    const flows = {};
    for (const flow of FLOWS) {
      await latencies(mf, flow, warm);
      const times = await latencies(mf, flow, latencySamples);
      const summary = (name) => {
        const { ops, ms } = bench.flows[flow][name];
        const t = times[name];
        return { ops, opsPerSecond: ops / (ms / 1000), p50: us(t, 0.5), p90: us(t, 0.9), p99: us(t, 0.99), latencySamples: t.length };
      };
      const edgegrant = summary("edgegrant");
      const peer = summary("peer");
      flows[flow] = { edgegrant, peer, ratio: edgegrant.opsPerSecond / peer.opsPerSecond };
    }
    return {
      runtime: `workerd ${versionOf("workerd")} (Miniflare ${versionOf("miniflare")})`,
      peer: PEER,
      flows,
      fairness: [
        ...FAIRNESS,
        `The hop alone (an empty /ping request) took p50 ${us(hop, 0.5).toFixed(0)} µs, p99 ${us(hop, 0.99).toFixed(0)} µs in this run; the in-isolate clock timed ${bench.ms.toFixed(0)} ms of the ${wallMs.toFixed(0)} ms the /bench request took as seen from Node.`,
      ],
    };
  } finally {
    await mf.dispose();
  }
}

function table(result) {
  const pad = (text, width) => String(text).padStart(width);
  const lines = [`${result.runtime}, edgegrant vs ${result.peer} (latency in µs, including the Node↔workerd hop)`, ""];
  lines.push(`${"flow".padEnd(9)}${"subject".padEnd(44)}${pad("ops/s", 9)}${pad("p50", 8)}${pad("p90", 8)}${pad("p99", 8)}${pad("ratio", 8)}`);
  for (const [flow, { edgegrant, peer, ratio }] of Object.entries(result.flows)) {
    const rows = [[flow, "edgegrant", edgegrant, `${ratio.toFixed(2)}×`], ["", result.peer, peer, ""]];
    for (const [label, name, s, r] of rows) {
      lines.push(
        `${label.padEnd(9)}${name.padEnd(44)}${pad(Math.round(s.opsPerSecond), 9)}${pad(s.p50.toFixed(0), 8)}${pad(s.p90.toFixed(0), 8)}${pad(s.p99.toFixed(0), 8)}${pad(r, 8)}`,
      );
    }
  }
  return lines.concat("", ...result.fairness.map((f) => `- ${f}`)).join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  const result = await benchWorkerd(quick ? { rounds: 2, batch: 100, warmup: 20, latencySamples: 20 } : {});
  console.log(table(result));
  console.log(JSON.stringify(result, null, 2));
}
