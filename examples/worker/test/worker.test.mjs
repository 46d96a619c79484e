// End to end over real HTTP against the Worker host under `wrangler dev` (started through
// dev.mjs, storage persisted to a temp dir): sign in, consent (Allow and Deny), the PKCE offline
// flow, code display, refresh, revoke, racing exchanges of one code, and a restart.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertNoErrorText, send } from "../../host/sign-in-suite.mjs";
import { SAMPLE_CONFIG, startWorker } from "../dev.mjs";

// RFC 7636 Appendix B.
const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT = "http://127.0.0.1:8788/callback";
const ALICE_ID = "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc";

const dir = mkdtempSync(join(tmpdir(), "edgegrant-worker-"));
const persistTo = join(dir, "state");
let worker;
// A hung request fails its test within a minute instead of waiting out fetch's 5-minute timeout.
const LIMIT = { timeout: 60_000 };
before(async () => {
  worker = await startWorker({ configPath: SAMPLE_CONFIG, port: 0, persistTo, allowSampleSecret: true });
});
// Runs whether the tests passed or not: no wrangler or workerd outlives the file.
after(async () => {
  await worker?.close();
  rmSync(dir, { recursive: true, force: true });
});

const pkceQuery = (state) =>
  new URLSearchParams({
    client_id: "demo-pkce-app",
    response_type: "code",
    redirect_uri: REDIRECT,
    token_access_type: "offline",
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
    state,
  }).toString();

const form = (path, body, headers = {}) => fetch(`${worker.url}${path}`, { method: "POST", headers, body: new URLSearchParams(body), redirect: "manual" });
const exchange = (code) => form("/oauth2/token", { grant_type: "authorization_code", code, client_id: "demo-pkce-app", code_verifier: VERIFIER, redirect_uri: REDIRECT });
const getAccount = (token) => fetch(`${worker.url}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${token}` } });

async function signIn(username, password, returnTo = "/") {
  const response = await form("/signin", { username, password, return_to: returnTo });
  assert.equal(response.status, 303);
  return { cookie: response.headers.get("set-cookie").split(";")[0], location: response.headers.get("location") };
}

/** A fresh code for `query`: straight away when already granted, through Allow otherwise. */
async function codeFor(cookie, query) {
  let response = await fetch(`${worker.url}/oauth2/authorize?${query}`, { headers: { cookie }, redirect: "manual" });
  if (response.status === 200) response = await form("/oauth2/authorize", { query, decision: "allow" }, { cookie, origin: worker.url });
  assert.equal(response.status, 302);
  return new URL(response.headers.get("location")).searchParams.get("code");
}

test("sign in, consent Allow, PKCE offline flow, get_current_account, refresh, revoke, then 401", LIMIT, async () => {
  const query = pkceQuery("w1");
  const signInPage = await fetch(`${worker.url}/oauth2/authorize?${query}`);
  assert.equal(signInPage.status, 200);
  assert.match(await signInPage.text(), /Sign in/);
  const wrong = await form("/signin", { username: "alice", password: "nope", return_to: "/" });
  assert.equal(wrong.status, 403, "credentials given and refused (a 401 would need WWW-Authenticate)");
  const { cookie, location: back } = await signIn("alice", "alice-password", `/oauth2/authorize?${query}`);

  const consent = await fetch(`${worker.url}${back}`, { headers: { cookie } });
  const html = await consent.text();
  assert.equal(consent.status, 200);
  assert.match(html, /Demo PKCE App/);
  assert.match(html, /account_info\.read/);
  assert.match(html, /value="allow"/);
  assert.match(html, /value="deny"/);
  const allow = await form("/oauth2/authorize", { query, decision: "allow" }, { cookie, origin: worker.url });
  assert.equal(allow.status, 302);
  const redirect = new URL(allow.headers.get("location"));
  assert.equal(redirect.origin + redirect.pathname, REDIRECT);
  assert.equal(redirect.searchParams.get("state"), "w1");

  const issued = await exchange(redirect.searchParams.get("code"));
  assert.equal(issued.status, 200);
  const tokens = await issued.json();
  assert.match(tokens.access_token, /^sl\./);
  assert.equal(tokens.account_id, ALICE_ID);
  assert.ok(tokens.refresh_token, "offline access brings a refresh token");

  const account = await getAccount(tokens.access_token);
  assert.equal(account.status, 200);
  const me = await account.json();
  assert.equal(me.account_id, ALICE_ID);
  assert.equal(me.name.display_name, "Alice Example");
  assert.equal(me.email, "alice@example.com");

  const refreshed = await form("/oauth2/token", { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: "demo-pkce-app" });
  assert.equal(refreshed.status, 200);
  const refresh = await refreshed.json();
  assert.notEqual(refresh.access_token, tokens.access_token);
  assert.equal((await getAccount(refresh.access_token)).status, 200);

  const revoke = await fetch(`${worker.url}/2/auth/token/revoke`, { method: "POST", headers: { authorization: `Bearer ${refresh.access_token}` } });
  assert.equal(revoke.status, 200);
  const refused = await getAccount(refresh.access_token);
  assert.equal(refused.status, 401);
  assert.match(refused.headers.get("www-authenticate"), /invalid_token/);
  assert.equal((await getAccount(tokens.access_token)).status, 401, "the whole grant ended");
});

test("Deny sends the user back with error=access_denied and no code", LIMIT, async () => {
  const query = pkceQuery("w2");
  const { cookie } = await signIn("bob", "bob-password");
  const consent = await fetch(`${worker.url}/oauth2/authorize?${query}`, { headers: { cookie } });
  assert.equal(consent.status, 200);
  await consent.arrayBuffer();
  const deny = await form("/oauth2/authorize", { query, decision: "deny" }, { cookie, origin: worker.url });
  assert.equal(deny.status, 302);
  const redirect = new URL(deny.headers.get("location"));
  assert.equal(redirect.origin + redirect.pathname, REDIRECT);
  assert.equal(redirect.searchParams.get("error"), "access_denied");
  assert.equal(redirect.searchParams.get("state"), "w2");
  assert.equal(redirect.searchParams.get("code"), null);
});

test("without redirect_uri the code is displayed, and the confidential app redeems it with its secret", LIMIT, async () => {
  const query = new URLSearchParams({ client_id: "demo-server-app", response_type: "code" }).toString();
  const { cookie } = await signIn("alice", "alice-password");
  const consent = await fetch(`${worker.url}/oauth2/authorize?${query}`, { headers: { cookie } });
  assert.match(await consent.text(), /Demo Server App/);
  const shown = await form("/oauth2/authorize", { query, decision: "allow" }, { cookie, origin: worker.url });
  assert.equal(shown.status, 200);
  const code = (await shown.text()).match(/<code id="code">([^<]+)<\/code>/)?.[1];
  assert.ok(code, "the page shows the code");
  const basic = `Basic ${Buffer.from("demo-server-app:demo-confidential-secret").toString("base64")}`;
  const wrongSecret = await form("/oauth2/token", { grant_type: "authorization_code", code }, { authorization: `Basic ${Buffer.from("demo-server-app:wrong").toString("base64")}` });
  assert.equal(wrongSecret.status, 401);
  assert.equal((await wrongSecret.json()).error, "invalid_client");
  const issued = await form("/oauth2/token", { grant_type: "authorization_code", code }, { authorization: basic });
  assert.equal(issued.status, 200);
  const { access_token, refresh_token } = await issued.json();
  assert.equal(refresh_token, undefined, "online access by default");
  assert.equal((await (await getAccount(access_token)).json()).account_id, ALICE_ID);
});

test("two concurrent exchanges of one code: exactly one 200 and one 400 invalid_grant", LIMIT, async () => {
  const { cookie } = await signIn("alice", "alice-password");
  const query = pkceQuery("race");
  for (let trial = 0; trial < 6; trial++) {
    const code = await codeFor(cookie, query);
    const responses = await Promise.all([exchange(code), exchange(code)]);
    const bodies = await Promise.all(responses.map((r) => r.json()));
    const statuses = responses.map((r) => r.status);
    assert.deepEqual([...statuses].sort(), [200, 400], `trial ${trial}: ${JSON.stringify(bodies)}`);
    const winner = bodies[statuses.indexOf(200)];
    assert.equal(bodies[statuses.indexOf(400)].error, "invalid_grant");
    // The loser came second and replayed the code: what the code produced is revoked too.
    assert.equal((await getAccount(winner.access_token)).status, 401, `trial ${trial}`);
  }
});

test("under wrangler dev a client's own CF-Connecting-IP is no source: 51 wrong secrets behind one such address are never held back as one source's 50", LIMIT, async () => {
  // Only Cloudflare's edge sets that header itself; here the client writes it, and counting by
  // it would let each request pick its source (and name another's to lock it out).
  for (let attempt = 1; attempt <= 51; attempt++) {
    const response = await form(
      "/oauth2/token",
      { grant_type: "refresh_token", refresh_token: "x", client_id: "demo-server-app", client_secret: "wrong" },
      { "CF-Connecting-IP": "198.51.100.7" },
    );
    assert.notEqual(response.status, 429, `attempt ${attempt}`);
    assert.equal((await response.json()).error, "invalid_client", `attempt ${attempt}`);
  }
});

test("a body past every limit (8 MiB) is refused: the sign-in form 413 (read 4 KiB at most), the token endpoint the core's 400; the Worker serves on", LIMIT, async () => {
  const MiB = 1024 * 1024;
  for (const [path, refused] of [["/signin", 413], ["/oauth2/token", 400]]) {
    // 8 MiB, made as it is sent: far more than a form or the core reads (the Worker reads the
    // rest to its end and drops it: workerd cannot answer over an unread body).
    let sent = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (sent >= 8 * MiB) return controller.close();
        sent += 64 * 1024;
        controller.enqueue(new Uint8Array(64 * 1024).fill(0x61));
      },
    });
    const answer = await fetch(`${worker.url}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body, duplex: "half" }).catch((error) => error);
    // The Worker may close the connection under the rest of the body; the answer came first.
    assert.ok(!(answer instanceof Error), `${path}: ${answer?.cause?.message ?? answer}`);
    assert.equal(answer.status, refused, `${path}: ${(await answer.text()).slice(0, 300)}`);
    assert.equal((await fetch(`${worker.url}/`)).status, 200, `after ${path}: the next request is served`);
  }
});

test("a GET or HEAD with a body answers as the same request without one (the body of a GET means nothing), never a 5xx", LIMIT, async () => {
  const { cookie } = await signIn("alice", "alice-password");
  const target = `/oauth2/authorize?${pkceQuery("get-with-body")}`;
  const kind = (html) => /data-page="([a-z_]+)"/.exec(html)?.[1];
  const formType = ["Content-Type", "application/x-www-form-urlencoded"];
  // Signed out, it runs in the Worker (no partition: the sign-in page); signed in, in alice's object (consent).
  for (const method of ["GET", "HEAD"]) {
    for (const headers of [[], [["Cookie", cookie]]]) {
      const plain = await send(worker.url, { method, target, headers });
      for (const body of ["x", "client_id=evil&response_type=token", "z".repeat(100_000)]) {
        const answer = await send(worker.url, { method, target, headers: [...headers, formType], body });
        const what = `${method} ${headers.length ? "signed in" : "signed out"} with ${body.length} bytes`;
        assertNoErrorText(answer, what);
        assert.equal(answer.status, plain.status, `${what}: ${answer.body.slice(0, 300)}`);
        assert.equal(kind(answer.body), kind(plain.body), what);
      }
    }
  }
  // Every kind of route, with a body where none belongs: a 4xx or an answer, never a 5xx.
  for (const path of ["/", "/signin", "/signout", "/oauth2/token", "/2/auth/token/revoke", "/2/users/get_current_account", "/nowhere"]) {
    for (const method of ["GET", "HEAD", "DELETE", "OPTIONS"]) {
      const answer = await send(worker.url, { method, target: path, headers: [["Cookie", cookie], formType], body: "grant_type=x" });
      assert.ok(answer.status < 500, `${method} ${path}: ${answer.status} ${answer.body.slice(0, 300)}`);
    }
  }
});

test("a restart of wrangler dev on the same persist dir keeps a still-valid token valid", LIMIT, async () => {
  const { cookie } = await signIn("alice", "alice-password");
  const query = pkceQuery("restart");
  const kept = await (await exchange(await codeFor(cookie, query))).json();
  const revoked = await (await exchange(await codeFor(cookie, pkceQuery("revoked")))).json();
  assert.equal((await getAccount(kept.access_token)).status, 200);
  // Revoking the second grant leaves the first: they are separate grants of one link.
  assert.equal((await fetch(`${worker.url}/2/auth/token/revoke`, { method: "POST", headers: { authorization: `Bearer ${revoked.access_token}` } })).status, 200);
  assert.equal((await getAccount(kept.access_token)).status, 200);

  const port = Number(new URL(worker.url).port);
  await worker.close();
  worker = undefined;
  worker = await startWorker({ configPath: SAMPLE_CONFIG, port, persistTo, allowSampleSecret: true });
  assert.equal((await getAccount(kept.access_token)).status, 200, "the token survived the restart");
  assert.equal((await getAccount(revoked.access_token)).status, 401, "so did the revocation");
  const refreshed = await form("/oauth2/token", { grant_type: "refresh_token", refresh_token: kept.refresh_token, client_id: "demo-pkce-app" });
  assert.equal(refreshed.status, 200);
  // The session cookie is signed, not stored: it is still good too.
  assert.ok(await codeFor(cookie, query));
});

test("a bad configuration stops dev.mjs at once with a clear message", LIMIT, async () => {
  const path = join(dir, "bad.json");
  const sample = JSON.parse(readFileSync(SAMPLE_CONFIG, "utf8"));
  writeFileSync(path, JSON.stringify({ ...sample, session_secret: "short" }));
  await assert.rejects(startWorker({ configPath: path, port: 0, persistTo }), /invalid configuration .*session_secret/);
  writeFileSync(path, "{ not json");
  const dev = fileURLToPath(new URL("../dev.mjs", import.meta.url));
  const run = spawnSync(process.execPath, [dev, path], { encoding: "utf8", timeout: 20_000 });
  assert.equal(run.status, 1, run.stderr);
  assert.match(run.stderr, /cannot read configuration/);
});
