// Several Node host processes on one PostgreSQL database (a throwaway cluster), selected by the
// configuration's `database: "postgres://…"`: a user signs in and consents on one, redeems and
// refreshes on another, revokes on a third, and every host then refuses the grant's tokens.
// And the purge job: a host started with purge_every_seconds deletes what is due, by itself.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openPostgresStorage } from "../../../pkg/src/adapters/postgres.js";
import { startPostgres } from "../../../tests/postgres/cluster.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const SERVER = fileURLToPath(new URL("../server.mjs", import.meta.url));
const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT = "http://127.0.0.1:8788/callback";

/** The host's command line in a process of its own; resolves its URL and a stop function. */
async function hostProcess(configPath) {
  const child = spawn(process.execPath, [SERVER, configPath], {
    env: { ...process.env, EDGEGRANT_ALLOW_SAMPLE_SECRET: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const url = await new Promise((ok, fail) => {
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const found = /listening on (http:\/\/\S+)/.exec(output);
      if (found) ok(found[1]);
    });
    child.stderr.on("data", (chunk) => (output += chunk));
    child.once("exit", (code) => fail(new Error(`the host exited (${code}): ${output}`)));
  });
  return { url, stop: () => new Promise((ok) => (child.once("exit", ok), child.kill())) };
}

test("three host processes on one PostgreSQL database share every grant and every revocation", { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-node-pg-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const postgres = await startPostgres();
  t.after(() => postgres.stop());
  const path = join(dir, "config.json");
  copyFileSync(join(here, "../config.sample.json"), path);
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), database: postgres.url, listen: { port: 0 } }));
  // All three start at once on an empty database: one creates the table, the others wait for it.
  const hosts = await Promise.all([hostProcess(path), hostProcess(path), hostProcess(path)]);
  t.after(() => Promise.all(hosts.map((h) => h.stop())));
  const [a, b, c] = hosts.map((h) => h.url);

  const query = new URLSearchParams({
    client_id: "demo-pkce-app",
    response_type: "code",
    redirect_uri: REDIRECT,
    token_access_type: "offline",
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
    state: "pg",
  }).toString();
  const signIn = await fetch(`${a}/signin`, {
    method: "POST",
    body: new URLSearchParams({ username: "alice", password: "alice-password", return_to: "/" }),
    redirect: "manual",
  });
  assert.equal(signIn.status, 303);
  const cookie = signIn.headers.get("set-cookie").split(";")[0];
  const allow = await fetch(`${a}/oauth2/authorize`, { method: "POST", headers: { cookie, origin: a }, body: new URLSearchParams({ query, decision: "allow" }), redirect: "manual" });
  assert.equal(allow.status, 302);
  const code = new URL(allow.headers.get("location")).searchParams.get("code");

  const redeem = () =>
    fetch(`${b}/oauth2/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "authorization_code", code, client_id: "demo-pkce-app", code_verifier: VERIFIER, redirect_uri: REDIRECT }),
    });
  const exchange = await redeem();
  assert.equal(exchange.status, 200);
  const tokens = await exchange.json();
  const call = (base, token) => fetch(`${base}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
  for (const base of [a, b, c]) assert.equal((await call(base, tokens.access_token)).status, 200, `served by ${base}`);
  const refreshed = await (await fetch(`${c}/oauth2/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: "demo-pkce-app" }),
  })).json();
  assert.equal((await call(a, refreshed.access_token)).status, 200);

  const revoke = await fetch(`${c}/2/auth/token/revoke`, { method: "POST", headers: { authorization: `Bearer ${refreshed.access_token}` } });
  assert.equal(revoke.status, 200);
  for (const base of [a, b, c]) {
    assert.equal((await call(base, tokens.access_token)).status, 401, `revoked on ${base}`);
    assert.equal((await call(base, refreshed.access_token)).status, 401, `revoked on ${base}`);
  }
  const replay = await (await redeem()).json();
  assert.equal(replay.error, "invalid_grant", "the code stays redeemed on every host");
});

test("the host's purge job deletes what is due from PostgreSQL, through the index", { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-node-pg-purge-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const postgres = await startPostgres();
  t.after(() => postgres.stop());
  // Records written by another process, one long past its purge time and one never due.
  const store = await openPostgresStorage(postgres.url);
  t.after(() => store.close());
  const record = new Uint8Array([1]);
  await store.apply({ puts: [{ key: "p/code:due", expect: null, bytes: record, purgeAfter: 1 }, { key: "p/link:a:b", expect: null, bytes: record, purgeAfter: null }] });
  const path = join(dir, "config.json");
  copyFileSync(join(here, "../config.sample.json"), path);
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), database: postgres.url, listen: { port: 0 }, purge_every_seconds: 1 }));
  const host = await hostProcess(path);
  t.after(() => host.stop());
  const deadline = Date.now() + 20_000;
  while ((await store.read(["p/code:due"])).size > 0 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 100));
  assert.deepEqual([...(await store.read(["p/code:due", "p/link:a:b"])).keys()], ["p/link:a:b"]);
});
