// The load runner (load.mjs) as a smoke test: each host for about ten seconds at low
// concurrency, through the whole flow (sign-in, consent, PKCE and confidential exchanges,
// refresh, API calls, revocations and their refusals, the final sweep). It asserts zero errors
// and that every kind of operation ran; memory is only reported here (ten seconds say nothing
// about a leak — the full run, `node tests/load/load.mjs`, judges it).
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Client, DEFAULTS, lineOf, runHost } from "./load.mjs";

const SMOKE = { duration: 8, warmup: 2, concurrency: 4, users: 4, apps: 2, grants: 2, sample: 1, idle: 1 };
// A hung host fails its test instead of the whole run.
const LIMIT = { timeout: 60_000 };

for (const host of ["node", "worker"]) {
  test(`${host} host: ${SMOKE.duration} s of mixed traffic with zero errors`, LIMIT, async (t) => {
    const lines = [];
    const result = await runHost(host, SMOKE, (line) => lines.push(line));
    t.diagnostic(lineOf(result));
    const output = lines.join("\n");
    assert.equal(result.errors, 0, `errors:\n${output}`);
    for (const kind of ["api", "refresh", "authorize", "exchange", "revoke", "api-revoked", "refresh-revoked"]) {
      assert.ok(result.latency[kind]?.count > 0, `no ${kind} request while measured:\n${output}`);
    }
    assert.ok(result.revokedGrants > 0 && result.liveGrantsChecked > 0, output);
    assert.ok(result.records.after.total > result.records.before.total, `the store did not grow:\n${output}`);
    assert.ok(Number.isFinite(result.memory.baselineKb) && Number.isFinite(result.memory.endKb), `no memory figures:\n${output}`);
  });
}

test("the runner's checks are not vacuous: a host that accepts revoked tokens, or fails, is caught", async (t) => {
  // A host that answers every request 200 `{}`, and one path with a 503.
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(req.url === "/oauth2/token" ? 503 : 200, { "Content-Type": "application/json" }).end("{}");
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  t.after(() => server.close());
  const client = new Client(`http://127.0.0.1:${server.address().port}`, { ...DEFAULTS, concurrency: 1 });
  t.after(() => client.agent.destroy());
  const grant = { user: { account_id: "dbid:x" }, app: { key: "a", confidential: false }, access: [{ token: "t", expiresAt: Infinity }], refresh: "r" };
  assert.equal(await client.apiRevoked("t"), null);
  assert.equal(await client.refreshRevoked(grant), null);
  assert.equal(await client.api(grant, "t"), null, "a body without the grant's account");
  assert.deepEqual(client.errorsByCategory, { "revoked token accepted": 1, "5xx": 1, "bad response": 1 });
  assert.equal(client.errorCount, 3);
});
