// Seed corpora for the fuzz targets, from the conformance vectors (every request step becomes a
// `request` seed in the format of src/lib.rs, and a `records` seed behind a few store changes),
// plus hand-written `[state, input]` pairs for the client machine. Writes seeds/<target>/;
// run by run.sh before fuzzing. Deterministic.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const vectors = join(here, "../../conformance/vectors");
const out = join(here, "seeds");
rmSync(out, { recursive: true, force: true });
const write = (target, text) => {
  mkdirSync(join(out, target), { recursive: true });
  const name = createHash("sha256").update(text).digest("hex").slice(0, 16);
  writeFileSync(join(out, target, name), text);
};

const PATHS = { "/oauth2/token": "token", "/2/auth/token/revoke": "revoke" };
function requestText(input) {
  const query = input.query ?? "";
  const headers = (input.headers ?? []).map(([name, value]) => `${name}: ${value}`);
  let first;
  if (input.kind === "http" && input.path === "/oauth2/authorize" && input.method === "GET") first = `authorize ${input.user ?? "none"}`;
  else if (input.kind === "http" && input.method === "POST" && PATHS[input.path]) first = PATHS[input.path];
  else if (input.kind === "http" && input.method === "POST" && input.path.startsWith("/2/")) first = `api ${input.path}`;
  // Any other method or path: the core routes it (404, 405) itself.
  else if (input.kind === "http") first = `http ${input.method} ${input.path}${input.user ? ` ${input.user}` : ""}`;
  else if (input.kind === "consent" || input.kind === "deny") first = `consent ${input.kind === "deny" ? "deny" : "allow"} ${input.user ?? "alice"}`;
  else if (input.kind === "unlink") first = `unlink ${input.app} ${input.user ?? "alice"}`;
  else return null;
  return `${first}\n${query}\n${headers.join("\n")}\n\n${input.body ?? ""}`;
}

let requests = 0;
for (const file of readdirSync(vectors).filter((f) => f.endsWith(".json"))) {
  for (const vector of JSON.parse(readFileSync(join(vectors, file), "utf8")).vectors) {
    for (const step of vector.steps) {
      const text = requestText(step.input);
      if (text === null) continue;
      write("request", text);
      requests++;
      for (const perturbation of ["", "0 1 0", "1 2 1 2 5 1", "3 3 200 4 4 1", "5 9 3"]) write("records", `perturb ${perturbation}\n${text}`);
    }
  }
}

const session = { access_token: "sl.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", expires_at: 1700014400, refresh_token: "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", scopes: ["account_info.read"], account_id: "dbid:x", uid: "1", after_refusal: false };
const bound = { ...session, bound: true, server_nonce: "n-server", api_nonce: null };
const states = [
  { phase: "idle" },
  { phase: "exchanging", sent_at: 1700000000, code: "abc", verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", nonce: "n-1" },
  { phase: "authorized", session: bound },
  { phase: "refreshing", session: bound, sent_at: 1700000000, reason: "refused" },
  { phase: "revoking", session: bound },
  { phase: "authorizing", state: "s7s7s7s7s7s7s7s7s7s7s7", verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" },
  { phase: "exchanging", sent_at: 1700000000 },
  { phase: "authorized", session },
  { phase: "refreshing", session, sent_at: 1700000000, reason: "due" },
  { phase: "revoking", session },
];
const tokenBody = JSON.stringify({ access_token: "sl.CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", token_type: "bearer", expires_in: 14400, refresh_token: "DDD", scope: "account_info.read", uid: "1", account_id: "dbid:x" });
const inputs = [
  { kind: "begin" },
  { kind: "redirected", url: "http://127.0.0.1:8765/cb?code=abc&state=s7s7s7s7s7s7s7s7s7s7s7" },
  { kind: "redirected", url: "http://127.0.0.1:8765/cb?error=access_denied&error_description=no&state=s7s7s7s7s7s7s7s7s7s7s7" },
  { kind: "redirected", url: "http://127.0.0.1:8765/cb?code=abc&state=other" },
  { kind: "code_entered", code: "abc" },
  { kind: "response", response: { status: 200, headers: [["Content-Type", "application/json"]], body: tokenBody } },
  { kind: "response", response: { status: 400, headers: [], body: '{"error":"invalid_grant","error_description":"x"}' } },
  { kind: "response", response: { status: 401, headers: [["WWW-Authenticate", 'Bearer error="invalid_token"']], body: "" } },
  { kind: "response", response: { status: 400, headers: [["DPoP-Nonce", "n-2"]], body: '{"error":"use_dpop_nonce"}' } },
  { kind: "response", response: { status: 401, headers: [["WWW-Authenticate", 'DPoP error="use_dpop_nonce"'], ["DPoP-Nonce", "n-2"]], body: "" } },
  { kind: "response", response: { status: 200, headers: [["DPoP-Nonce", "n-2"]], body: tokenBody.replace('"bearer"', '"DPoP"') } },
  { kind: "call" },
  { kind: "call", method: "POST", url: "https://api.example/2/users/get_current_account?x=1#f" },
  { kind: "unauthorized" },
  { kind: "unauthorized", challenge: 'DPoP realm="api", error="use_dpop_nonce", algs="ES256"', nonce: "n-3", method: "GET", url: "https://api.example/x" },
  { kind: "revoke" },
];
for (const state of states) for (const input of inputs) write("client", JSON.stringify([state, input]));
console.log(`fuzz seeds: ${requests} request, ${requests * 5} records, ${states.length * inputs.length} client`);
