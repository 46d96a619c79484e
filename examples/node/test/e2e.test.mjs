// End to end over real HTTP on loopback against the Node host: sign in, consent, PKCE offline
// flow, API call, refresh, API call, revoke, 401 — then a restart keeps a still-valid token valid.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../server.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT = "http://127.0.0.1:8788/callback";

function freshConfig() {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-node-"));
  const path = join(dir, "config.json");
  copyFileSync(join(here, "../config.sample.json"), path);
  return { dir, path };
}

test("sign in, consent, PKCE offline flow, refresh, revoke, 401, and a restart", async (t) => {
  const { dir, path } = freshConfig();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let server = await startServer(path, { port: 0, allowSampleSecret: true });
  const base = server.url;
  const query = new URLSearchParams({
    client_id: "demo-pkce-app",
    response_type: "code",
    redirect_uri: REDIRECT,
    token_access_type: "offline",
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
    state: "e2e",
  }).toString();

  // Not signed in: the sign-in form.
  const signInPage = await fetch(`${base}/oauth2/authorize?${query}`);
  assert.equal(signInPage.status, 200);
  assert.match(await signInPage.text(), /Sign in/);
  const wrong = await fetch(`${base}/signin`, { method: "POST", body: new URLSearchParams({ username: "alice", password: "nope", return_to: "/" }), redirect: "manual" });
  assert.equal(wrong.status, 403, "credentials given and refused (a 401 would need WWW-Authenticate)");
  const signIn = await fetch(`${base}/signin`, {
    method: "POST",
    body: new URLSearchParams({ username: "alice", password: "alice-password", return_to: `/oauth2/authorize?${query}` }),
    redirect: "manual",
  });
  assert.equal(signIn.status, 303);
  const cookie = signIn.headers.get("set-cookie").split(";")[0];

  // The consent page names the app and the scopes.
  const consent = await fetch(`${base}${signIn.headers.get("location")}`, { headers: { cookie } });
  const html = await consent.text();
  assert.equal(consent.status, 200);
  assert.match(html, /Demo PKCE App/);
  assert.match(html, /account_info\.read/);
  assert.match(html, /Allow/);
  assert.match(html, /Deny/);
  const allow = await fetch(`${base}/oauth2/authorize`, {
    method: "POST",
    headers: { cookie, origin: base },
    body: new URLSearchParams({ query, decision: "allow" }),
    redirect: "manual",
  });
  assert.equal(allow.status, 302);
  const location = new URL(allow.headers.get("location"));
  assert.equal(location.origin + location.pathname, REDIRECT);
  assert.equal(location.searchParams.get("state"), "e2e");

  const exchange = await fetch(`${base}/oauth2/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "authorization_code", code: location.searchParams.get("code"), client_id: "demo-pkce-app", code_verifier: VERIFIER, redirect_uri: REDIRECT }),
  });
  assert.equal(exchange.status, 200);
  const tokens = await exchange.json();
  const call = (token) => fetch(`${base}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
  const me = await (await call(tokens.access_token)).json();
  assert.equal(me.account_id, "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc");
  assert.equal(me.name.display_name, "Alice Example");
  assert.equal(me.email, "alice@example.com");

  const refresh = await (await fetch(`${base}/oauth2/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: "demo-pkce-app" }),
  })).json();
  assert.equal(refresh.refresh_token, undefined);
  assert.equal((await call(refresh.access_token)).status, 200);
  const revoke = await fetch(`${base}/2/auth/token/revoke`, { method: "POST", headers: { authorization: `Bearer ${refresh.access_token}` } });
  assert.equal(revoke.status, 200);
  assert.equal((await call(refresh.access_token)).status, 401);
  assert.equal((await call(tokens.access_token)).status, 401, "the whole grant ended");

  // A second grant, then a restart: its token stays valid.
  const again = await fetch(`${base}/oauth2/authorize?${query}`, { headers: { cookie }, redirect: "manual" });
  assert.equal(again.status, 302, "already granted: no second consent");
  const code = new URL(again.headers.get("location")).searchParams.get("code");
  const second = await (await fetch(`${base}/oauth2/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "authorization_code", code, client_id: "demo-pkce-app", code_verifier: VERIFIER, redirect_uri: REDIRECT }),
  })).json();
  await server.close();
  server = await startServer(path, { port: 0, allowSampleSecret: true });
  t.after(() => server.close());
  const afterRestart = await fetch(`${server.url}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${second.access_token}` } });
  assert.equal(afterRestart.status, 200);
  assert.equal((await fetch(`${server.url}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${tokens.access_token}` } })).status, 401);
});

test("a bad configuration file stops the server with a clear message", () => {
  const { dir, path } = freshConfig();
  const withAlice = (fields) => {
    const doc = JSON.parse(readFileSync(path, "utf8"));
    doc.users[0] = { ...doc.users[0], ...fields };
    return JSON.stringify(doc);
  };
  try {
    const server = fileURLToPath(new URL("../server.mjs", import.meta.url));
    const cases = [
      ["{ not json", /cannot read configuration/],
      [JSON.stringify({ users: [] }), /users must be a non-empty list/],
      [JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), policy: { code_ttl: 0 } }), /code_ttl/],
      [JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), session_secret: "short" }), /session_secret/],
      // Users whose account the official SDKs would refuse (their FullAccount type): refused at start.
      [withAlice({ account_id: "dbid:AAH4f99T0taONIb" }), /user alice: account_id must be 40 visible ASCII characters/],
      [withAlice({ uid: "12 345" }), /user alice: uid must be a whole number or 1-128 letters, digits/],
      [withAlice({ uid: undefined }), /user alice: uid must be/],
      [withAlice({ country: "USA" }), /user alice: country must be a two-letter country code/],
      [withAlice({ name: 42 }), /user alice: name must be a string/],
    ];
    for (const [text, message] of cases) {
      writeFileSync(path, text);
      // The sample's placeholder secret allowed, as in the demo: each case is about another fault.
      const run = spawnSync(process.execPath, [server, path], { encoding: "utf8", timeout: 20_000, env: { ...process.env, EDGEGRANT_ALLOW_SAMPLE_SECRET: "1" } });
      assert.equal(run.status, 1, run.stderr);
      assert.match(run.stderr, message);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
