// The Node side-by-side benchmark: edgegrant (wasm core, memory storage) against
// @node-oauth/oauth2-server 5.3.0 (in-memory model) and against the floor of the Fetch API, in one
// process, every subject alternating round by round (tests/bench/lib/measure.mjs). Three
// comparisons:
// - fetch: edgegrant's Fetch driver (`server.fetch`) vs the peer behind a Fetch shim that does
//   what a framework does (parse the URL and the form, run the peer, answer Response.json);
// - floor: edgegrant's bearer check through `server.fetch` vs an empty Fetch handler on the same
//   Request (the cost of the Fetch API itself);
// - plain: edgegrant's plain-value entry (`server.handle`, node:http-style values) vs the peer
//   driven directly through its own Request/Response classes; neither builds Fetch objects;
// - plain floor: edgegrant's bearer check through `server.handle` vs the least a hashed check
//   does on the same values (one crossing into the module that hashes the token, three Map
//   lookups).
// Used by tests/bench/run.mjs; run on its own with `node tests/bench/node/bench.mjs [--quick]`
// for a table and the JSON.
import { fileURLToPath } from "node:url";
import { compare, summarize } from "../lib/measure.mjs";
import { edgegrantPlainSubject, edgegrantSubject } from "./subjects/edgegrant.mjs";
import { fetchFloorSubject } from "./subjects/fetch-floor.mjs";
import { plainFloorSubject } from "./subjects/plain-floor.mjs";
import { oauth2ServerFetchSubject, oauth2ServerSubject } from "./subjects/oauth2-server.mjs";

/** The flows the peer has too; edgegrant's token exchange ("narrow") and DPoP-bound bearer check ("bound") are its alone. */
export const PEER_FLOWS = ["exchange", "refresh", "bearer", "machine"];
export const FLOWS = [...PEER_FLOWS, "narrow", "bound"];
export const PEER = "@node-oauth/oauth2-server 5.3.0";

/** The subjects, by role; each name is how the results name it. */
export const SUBJECTS = {
  edgegrantFetch: "edgegrant (server.fetch)",
  peerFetch: "@node-oauth/oauth2-server (Fetch shim)",
  fetchFloor: "empty Fetch handler",
  edgegrantPlain: "edgegrant (server.handle)",
  peerDirect: "@node-oauth/oauth2-server (direct)",
  plainFloor: "bearer floor (one crossing that hashes the token + 3 Map lookups)",
};

/**
 * The comparisons: `ratio` is ours ops/s ÷ theirs ops/s for each flow both have (> 1: edgegrant
 * is faster); for the floor, its inverse is edgegrant's time as a multiple of the floor's.
 */
export const COMPARISONS = [
  { id: "fetch", title: "Fetch driver vs the peer behind a Fetch shim", ours: SUBJECTS.edgegrantFetch, theirs: SUBJECTS.peerFetch, flows: PEER_FLOWS },
  { id: "floor", title: "Fetch driver vs an empty Fetch handler", ours: SUBJECTS.edgegrantFetch, theirs: SUBJECTS.fetchFloor, flows: ["bearer"] },
  { id: "plain", title: "plain-value entry vs the peer driven directly", ours: SUBJECTS.edgegrantPlain, theirs: SUBJECTS.peerDirect, flows: PEER_FLOWS },
  { id: "plainFloor", title: "plain-value entry vs its bearer floor", ours: SUBJECTS.edgegrantPlain, theirs: SUBJECTS.plainFloor, flows: ["bearer"] },
];

export const FAIRNESS = [
  "All six subjects run in one Node process on in-memory storage, each with its own server and store, alternating subject order every round (forward, then reversed), each flow warmed up first.",
  "Interfaces, Fetch: edgegrant gets Fetch Requests in server.fetch and answers Responses; the peer gets the same Requests in a Fetch shim that does what a framework does — new URL(request.url), the headers copied into an object, a POST's form read with request.text() and parsed with URLSearchParams (plus the Content-Length that node:http would have carried and the peer's type check asks for), its Request/Response classes, the answer sent as Response.json (a redirect as it is). The empty Fetch handler is async (request) => Response.json({ account_id }) on the same Request as the bearer flow. In every case the flow builds the Request and reads the JSON back.",
  "Interfaces, plain values: edgegrant's server.handle gets what node:http hands a host — the request target, rawHeaders-style headers, the body's bytes, the signed-in user — and resolves a reply (status, headers, body text) or, for an authorized API call, the principal, which the host answers with JSON.stringify({ account_id }); the peer gets its own Request built from a headers object, the parsed query and the url-encoded body (bytes decoded, then parsed), its token response serialized with JSON.stringify, and its authenticated token answered with the same JSON.stringify. In both the client encodes the form to bytes and parses the JSON it gets; no Fetch objects.",
  "Storage: edgegrant stores SHA-256 digests of codes and tokens, never plaintext; its memory adapter keeps the core's opaque record bytes (a copy on every write, so no caller can alter a stored record) and answers synchronously, so the driver awaits no promise for it; the peer's model (ours, after its documented examples) keeps plaintext tokens and codes in Maps, answers through promises and hands out the stored objects; client secrets: edgegrant compares SHA-256 digests, the model compares plaintext.",
  "Exchange: a fresh user every iteration, so edgegrant runs its first-time consent: GET /oauth2/authorize renders the consent page, the consent POST (Sec-Fetch-Site: same-origin) writes the code with a consent record (link), then the token request marks the code used and writes grant, access and refresh records; the peer's authorize has no consent step (an application renders its own page and records consent itself), so it does authorize plus token only; both use PKCE S256 with a client secret in the body and ask for a refresh token.",
  "Refresh: edgegrant's refresh tokens are reusable, so every iteration presents the same one and gets only a new access token; the peer rotates by default (alwaysIssueNewRefreshToken), revoking the presented refresh token and issuing a new one that the next iteration uses.",
  "Bearer: edgegrant hashes the token, reads its record and its account's ledger (and, had anything of the account ended since the token was minted, its grant and link: not in this loop), and checks the Required Scope; through server.fetch its api hook then builds Response.json, through server.handle the host answers the principal; the peer runs authenticate with scope account_info.read (one Map lookup of the plaintext token, expiry, verifyScope), then answers the same JSON the same way.",
  "Token generation: edgegrant draws its entropy with crypto.getRandomValues (synchronous, pooled across 64 requests) and derives tokens in wasm; the peer uses its default generator, crypto.randomBytes(32) through a callback (libuv thread pool), hex-encoded, once per code and token.",
  "The loop runs one operation at a time, so ops/s is 1 / latency. The peer's default generator makes a libuv thread-pool round trip per code and token (three per exchange, two per refresh, none per bearer check), which weighs on its exchange and refresh times and varies with how fast the pool thread wakes; a model with synchronous generateAuthorizationCode/generateAccessToken/generateRefreshToken runs those flows faster, and under concurrent load part of the wait would overlap other requests.",
  "Bearer floor: the plain-value entry's bearer check against the least a hashed check can do on the same request values — the authorization header found in the rawHeaders-style list, one crossing into edgegrant's wasm module that hashes the very token edgegrant's subject presents (secretDigest: SHA-256 and base64url), three Map lookups, each record naming the next (the floor issue 29 sets; edgegrant's check reads two records, the token and its account's ledger), and the same JSON answer read back.",
  "Client credentials (machine): the confidential app's token for itself, its secret in the body, scope account_info.read, no refresh token. edgegrant runs it on a server of its own in the standards profile (the grant is not in the reference profile the other flows run in), writing a grant and an access token, digests only; the peer's model saves its plaintext token in a Map and answers getUserFromClient with the client.",
  "Token exchange (narrow, RFC 8693): the confidential app exchanges its own client credentials token for one of the same scope (account_info.read), its secret in the body; edgegrant reads the subject token and its grant and writes an access token, on the client credentials server. The peer has no token exchange: its row is empty, and the nearest thing it has, one authenticated token request without a refresh token, is its client credentials row beside.",
  "DPoP-bound bearer check (bound, RFC 9449): the client credentials server's token bound to a P-256 key at the token endpoint, presented as Authorization: DPoP with a proof made once at setup (htm, htu, ath; the server takes proofs within a day and without nonces, and records none at its API), so each iteration measures the server alone: the proof read and checked by the core and its ES256 signature verified by WebCrypto, then the same bearer check. Beside the bearer row, it is what binding a token costs a check. The peer has no DPoP: its row is empty.",
  "Every flow checks the status and the expected fields of its success response and throws otherwise.",
];

/** Runs every subject alternating and the comparisons; `{}` is the full run (about a minute on a 2-core machine). */
export async function benchNode({ rounds = 20, batch = 1000, warmup = 500 } = {}) {
  const plain = await edgegrantPlainSubject({ name: SUBJECTS.edgegrantPlain });
  const subjects = [
    await edgegrantSubject({ name: SUBJECTS.edgegrantFetch }),
    await oauth2ServerFetchSubject({ name: SUBJECTS.peerFetch }),
    fetchFloorSubject({ name: SUBJECTS.fetchFloor }),
    plain,
    await oauth2ServerSubject({ name: SUBJECTS.peerDirect }),
    plainFloorSubject({ name: SUBJECTS.plainFloor, accessToken: plain.accessToken }),
  ];
  const results = await compare({ subjects, flows: FLOWS, rounds, batch, warmup, clock: () => performance.now() });
  const summaries = {}; // subject name → flow → summary
  for (const subject of subjects) {
    summaries[subject.name] = {};
    for (const flow of FLOWS) if (results[flow][subject.name]) summaries[subject.name][flow] = summarize(results[flow][subject.name]);
  }
  const comparisons = COMPARISONS.map(({ id, title, ours, theirs, flows }) => ({
    id,
    title,
    ours,
    theirs,
    flows: Object.fromEntries(flows.map((flow) => [flow, { ratio: summaries[ours][flow].opsPerSecond / summaries[theirs][flow].opsPerSecond }])),
  }));
  return { runtime: `node ${process.version}`, peer: PEER, subjects: summaries, comparisons, fairness: FAIRNESS };
}

function table(result) {
  const pad = (text, width) => String(text).padStart(width);
  const lines = [`${result.runtime}, edgegrant vs ${result.peer} and the Fetch API's floor (latency in µs)`, ""];
  lines.push(`${"flow".padEnd(9)}${"subject".padEnd(42)}${pad("ops/s", 9)}${pad("p50", 8)}${pad("p90", 8)}${pad("p99", 8)}`);
  for (const flow of FLOWS) {
    let label = flow;
    for (const [name, flows] of Object.entries(result.subjects)) {
      const s = flows[flow];
      if (!s) continue;
      lines.push(`${label.padEnd(9)}${name.padEnd(42)}${pad(Math.round(s.opsPerSecond), 9)}${pad(s.p50.toFixed(0), 8)}${pad(s.p90.toFixed(0), 8)}${pad(s.p99.toFixed(0), 8)}`);
      label = "";
    }
  }
  lines.push("", "ratios (edgegrant ops/s ÷ the other's):");
  for (const { title, flows } of result.comparisons) {
    lines.push(`  ${title}: ${Object.entries(flows).map(([flow, { ratio }]) => `${flow} ${ratio.toFixed(2)}×`).join(", ")}`);
  }
  return lines.concat("", ...result.fairness.map((f) => `- ${f}`)).join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  const result = await benchNode(quick ? { rounds: 2, batch: 20, warmup: 5 } : {});
  console.log(table(result));
  console.log(JSON.stringify(result, null, 2));
}
