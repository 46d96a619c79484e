// The Node side-by-side benchmark: edgegrant (wasm core, Fetch driver, memory storage) against
// @node-oauth/oauth2-server 5.3.0 (in-memory model), in one process, alternating round by round
// (tests/bench/lib/measure.mjs). Used by tests/bench/run.mjs; run on its own with
// `node tests/bench/node/bench.mjs [--quick]` for a table and the JSON.
import { fileURLToPath } from "node:url";
import { compare, summarize } from "../lib/measure.mjs";
import { edgegrantSubject } from "./subjects/edgegrant.mjs";
import { oauth2ServerSubject } from "./subjects/oauth2-server.mjs";

const FLOWS = ["exchange", "refresh", "bearer"];

export const FAIRNESS = [
  "Both run in one Node process on in-memory storage, alternating subject order every round, each flow warmed up first.",
  "Interfaces: edgegrant is driven through its package interface, Fetch Request in and Response out of server.fetch; the peer through its own Request/Response classes, with the query and url-encoded body parsed into the plain objects it takes and its JSON token response serialized and parsed back, as a framework and a client would.",
  "Storage: edgegrant stores SHA-256 digests of codes and tokens, never plaintext, and its memory adapter keeps records as JSON text, parsed on every read and serialized on every write (so no caller can alter a stored record); the peer's model (ours, after its documented examples) keeps plaintext tokens and codes in Maps and hands out the stored objects; client secrets: edgegrant compares SHA-256 digests, the model compares plaintext.",
  "Exchange: a fresh user every iteration, so edgegrant runs its first-time consent, GET /oauth2/authorize renders the consent page and the consent POST writes the code with a consent record (link), then the token request marks the code used and writes grant, access and refresh records; the peer's authorize has no consent step (an application renders its own page and records consent itself), so it does authorize plus token only; both use PKCE S256 with a client secret and token_access_type=offline / a refresh token.",
  "Refresh: edgegrant's refresh tokens are reusable, so every iteration presents the same one and gets only a new access token; the peer rotates by default (alwaysIssueNewRefreshToken), revoking the presented refresh token and issuing a new one that the next iteration uses.",
  "Bearer: edgegrant checks the token (digest lookup, its grant and link) and the Required Scope, then calls the api hook that builds Response.json; the peer runs authenticate with scope account_info.read (model lookup, expiry, verifyScope), then builds the same Response.json.",
  "Token generation: edgegrant draws its entropy with crypto.getRandomValues (synchronous) once per request and derives tokens in wasm; the peer uses its default generator, crypto.randomBytes(32) through a callback (libuv thread pool), hex-encoded, once per code and token.",
  "The loop runs one operation at a time, so ops/s is 1 / latency. The peer's default generator makes a libuv thread-pool round trip per code and token (three per exchange, two per refresh, none per bearer check), which dominates its exchange and refresh times and varies with how fast the pool thread wakes; a model with synchronous generateAuthorizationCode/generateAccessToken/generateRefreshToken runs those flows several times faster, and under concurrent load part of the wait would overlap other requests.",
  "Every flow checks the status and the expected fields of the success response and throws otherwise.",
];

/** Runs the comparison; `{}` is the full run (about 20–25 s on a 2-core machine). */
export async function benchNode({ rounds = 30, batch = 1000, warmup = 500 } = {}) {
  const edgegrant = await edgegrantSubject();
  const peer = await oauth2ServerSubject();
  const results = await compare({ subjects: [edgegrant, peer], flows: FLOWS, rounds, batch, warmup, clock: () => performance.now() });
  const flows = {};
  for (const flow of FLOWS) {
    const ours = summarize(results[flow][edgegrant.name]);
    const theirs = summarize(results[flow][peer.name]);
    flows[flow] = { edgegrant: ours, peer: theirs, ratio: ours.opsPerSecond / theirs.opsPerSecond };
  }
  return { runtime: `node ${process.version}`, peer: "@node-oauth/oauth2-server 5.3.0", flows, fairness: FAIRNESS };
}

function table(result) {
  const pad = (text, width) => String(text).padStart(width);
  const lines = [`${result.runtime}, edgegrant vs ${result.peer} (latency in µs)`, ""];
  lines.push(`${"flow".padEnd(9)}${"subject".padEnd(28)}${pad("ops/s", 9)}${pad("p50", 8)}${pad("p90", 8)}${pad("p99", 8)}${pad("ratio", 8)}`);
  for (const [flow, { edgegrant, peer, ratio }] of Object.entries(result.flows)) {
    const rows = [[flow, "edgegrant", edgegrant, `${ratio.toFixed(2)}×`], ["", result.peer, peer, ""]];
    for (const [label, name, s, r] of rows) {
      lines.push(
        `${label.padEnd(9)}${name.padEnd(28)}${pad(Math.round(s.opsPerSecond), 9)}${pad(s.p50.toFixed(0), 8)}${pad(s.p90.toFixed(0), 8)}${pad(s.p99.toFixed(0), 8)}${pad(r, 8)}`,
      );
    }
  }
  return lines.concat("", ...result.fairness.map((f) => `- ${f}`)).join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  const result = await benchNode(quick ? { rounds: 2, batch: 20, warmup: 5 } : {});
  console.log(table(result));
  console.log(JSON.stringify(result, null, 2));
}
