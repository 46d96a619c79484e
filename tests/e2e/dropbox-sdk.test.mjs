// The official Dropbox JavaScript SDK (npm `dropbox`, pinned in package.json), unchanged, against our
// hosts: authorization URL → browser sign-in and consent → code exchange → get_current_account →
// refresh → get_current_account → revoke → 401, for a public PKCE app and a confidential app.
//
//   node --test tests/e2e/*.test.mjs          (from the repository root, after npm ci in tests/e2e)
//
// HOW THE SDK IS POINTED AT A LOCAL HOST — only through its own constructor options.
// The SDK writes every URL as https:// on a fixed host (src/utils.js: OAuth2AuthorizationUrl,
// OAuth2TokenUrl, baseApiUrl). Its `domain` option swaps the domain only, giving
// https://meta-<domain>/oauth2/authorize, https://api-<domain>/oauth2/token, https://api-<domain>/2/<route>.
// So we give it `domain: "edgegrant.test"` (a reserved test name that resolves nowhere) and its `fetch`
// option: a function that replaces exactly the origin https://api-edgegrant.test with the local
// http://127.0.0.1:<port> and hands the SDK's own init object (method, headers, body) untouched to the
// SDK's own default fetch (node-fetch 2 on Node). Anything else it is asked to fetch throws.
// The alternative, serving TLS locally, keeps the scheme but not the rest: the names still need
// resolving to loopback and a self-signed certificate trusting — the SDK has no option for either, so a
// custom fetch is needed anyway — plus a certificate made at test time and a TLS front for hosts that
// serve plain HTTP. More parts, the same rewriting in the end; we chose the plain one.
// To show that nothing else changes, the SDK's requests pass a byte-for-byte TCP tap in front of the
// host, and each request that arrived is compared with what the SDK handed to fetch: method, path and
// query, every header the SDK set, body. Only Host (the local address) differs, and the fetch adds its
// usual transport headers (Accept, User-Agent, Content-Length, …), which are listed and checked.
//
// Hosts: the Node host (examples/node) and the Worker host (examples/worker/dev.mjs, wrangler dev).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Dropbox, DropboxAuth, DropboxResponseError } from "dropbox";

const root = fileURLToPath(new URL("../../", import.meta.url));
const DOMAIN = "edgegrant.test";
const SDK_ORIGINS = [`https://meta-${DOMAIN}`, `https://api-${DOMAIN}`]; // authorize page, token + API
const REDIRECT = "http://127.0.0.1:8788/callback";
const ALICE = { username: "alice", password: "alice-password", account_id: "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", display_name: "Alice Example", email: "alice@example.com" };

const apps = [
  { name: "public PKCE app", clientId: "demo-pkce-app", pkce: true, scopes: ["account_info.read", "files.metadata.read"] },
  { name: "confidential app", clientId: "demo-server-app", clientSecret: "demo-confidential-secret", pkce: false, scopes: null },
];

// ---- hosts ---------------------------------------------------------------------------------------

function tempCopy(sample) {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-sdk-"));
  const path = join(dir, "config.json");
  copyFileSync(sample, path);
  return { dir, path };
}

const hosts = [
  {
    name: "node",
    async start() {
      const { startServer } = await import(pathToFileURL(join(root, "examples/node/server.mjs")).href);
      const { dir, path } = tempCopy(join(root, "examples/node/config.sample.json"));
      const server = await startServer(path, { port: 0 });
      return { url: server.url, close: async () => (await server.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  {
    name: "worker",
    async start() {
      const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
      const { dir, path } = tempCopy(join(root, "examples/worker/config.sample.json"));
      const worker = await startWorker({ configPath: path, port: 0, persistTo: join(dir, "state") });
      return { url: worker.url, close: async () => (await worker.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
];

// ---- the tap: a TCP relay that keeps a copy of every byte the client sent -------------------------

async function startTap(target) {
  const { hostname, port } = new URL(target);
  // The client's bytes, one list per connection of { seq, data } chunks; `seq` orders requests
  // across connections (a keep-alive pool may send the next request on any of them).
  const connections = [];
  const sockets = new Set();
  let seq = 0;
  const server = net.createServer((client) => {
    const chunks = [];
    connections.push(chunks);
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => (client.destroy(), upstream.destroy()));
    }
    client.on("data", (data) => chunks.push({ seq: seq++, data }));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** Every HTTP/1.1 request that went through, parsed from the raw bytes, in the order sent. */
    requests: () => connections.flatMap(parseRequests).sort((a, b) => a.seq - b.seq),
    close: () => new Promise((ok) => (sockets.forEach((s) => s.destroy()), server.close(ok))),
  };
}

function parseRequests(chunks) {
  const bytes = Buffer.concat(chunks.map((c) => c.data));
  const seqAt = (offset) => {
    for (const c of chunks) {
      if (offset < c.data.length) return c.seq;
      offset -= c.data.length;
    }
  };
  const requests = [];
  let at = 0;
  while (at < bytes.length) {
    const seq = seqAt(at);
    const end = bytes.indexOf("\r\n\r\n", at);
    if (end < 0) throw new Error(`tap: incomplete request head: ${bytes.subarray(at).toString("latin1")}`);
    const [line, ...fields] = bytes.subarray(at, end).toString("latin1").split("\r\n");
    const [method, target] = line.split(" ");
    const headers = fields.map((f) => [f.slice(0, f.indexOf(":")), f.slice(f.indexOf(":") + 1).trim()]);
    const get = (name) => headers.find(([n]) => n.toLowerCase() === name)?.[1];
    at = end + 4;
    let body;
    if (/chunked/i.test(get("transfer-encoding") ?? "")) {
      const parts = [];
      for (;;) {
        const eol = bytes.indexOf("\r\n", at);
        const size = parseInt(bytes.subarray(at, eol).toString("latin1"), 16);
        at = eol + 2;
        if (size === 0) break;
        parts.push(bytes.subarray(at, at + size));
        at += size + 2;
      }
      at = bytes.indexOf("\r\n", at) + 2; // after the (empty) trailer
      body = Buffer.concat(parts);
    } else {
      const length = Number(get("content-length") ?? 0);
      body = bytes.subarray(at, at + length);
      at += length;
    }
    requests.push({ seq, method, target, headers, body });
  }
  return requests;
}

// Headers an HTTP client adds on its own (node-fetch 2: Accept, User-Agent, Accept-Encoding,
// Content-Length; node:http: Host, Connection; undici also Accept-Language, Sec-Fetch-Mode).
const TRANSPORT_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding", "accept", "accept-encoding", "accept-language", "user-agent", "sec-fetch-mode"]);

// ---- the SDK's fetch option ------------------------------------------------------------------------

/**
 * The `fetch` given to the SDK: maps its https://{meta,api}-edgegrant.test origins onto `local` (scheme
 * and host only; the rest of the URL string is kept as the SDK wrote it) and passes the SDK's init
 * object as is to the SDK's own default fetch. `calls` keeps what the SDK asked for.
 */
function localFetch(local) {
  const sdkFetch = new DropboxAuth().fetch; // what the SDK would use without the option
  const calls = [];
  const fetch = (url, init) => {
    const origin = SDK_ORIGINS.find((o) => url.startsWith(`${o}/`));
    if (!origin) throw new Error(`the SDK fetched an unexpected URL: ${url}`);
    calls.push({ url, path: url.slice(origin.length), method: init?.method ?? "GET", headers: { ...init?.headers }, body: init?.body });
    return sdkFetch(local + url.slice(origin.length), init);
  };
  return { fetch, calls };
}

/** Every request the SDK made arrived at the host as the SDK wrote it. */
function assertArrivedUnchanged(calls, arrived, tapUrl) {
  assert.equal(arrived.length, calls.length, "one request at the host per SDK fetch");
  calls.forEach((call, i) => {
    const got = arrived[i];
    const where = `request ${i + 1} (${call.method} ${call.path})`;
    assert.equal(got.method, call.method, `${where}: method`);
    assert.equal(got.target, call.path, `${where}: path and query`);
    const header = (name) => got.headers.filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v);
    for (const [name, value] of Object.entries(call.headers)) assert.deepEqual(header(name), [String(value)], `${where}: header ${name}`);
    assert.deepEqual(header("host"), [new URL(tapUrl).host], `${where}: Host is the local address (the one rewrite)`);
    const sdkNames = new Set(Object.keys(call.headers).map((n) => n.toLowerCase()));
    const added = got.headers.map(([n]) => n.toLowerCase()).filter((n) => !sdkNames.has(n));
    assert.deepEqual(added.filter((n) => !TRANSPORT_HEADERS.has(n)), [], `${where}: no header beyond the SDK's and the transport's`);
    const body = call.body == null ? Buffer.alloc(0) : Buffer.from(typeof call.body === "string" ? call.body : String(call.body));
    assert.deepEqual(got.body, body, `${where}: body`);
  });
}

// ---- the browser --------------------------------------------------------------------------------

const unescapeHtml = (s) => s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[e]);
const attr = (tag, name) => {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`, "i"));
  return m ? unescapeHtml(m[1]) : undefined;
};

/**
 * Plays the user's browser from the authorization URL to the app's redirect: follows redirects, keeps
 * cookies, fills the sign-in form and presses Allow on the consent form, sending Origin as a browser
 * does. Returns the redirect URL the app receives.
 */
async function browse(startUrl, hostUrl, user) {
  const cookies = new Map();
  let url = startUrl;
  let init = {};
  for (let hop = 0; hop < 10; hop++) {
    const headers = { ...init.headers, ...(cookies.size && { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") }) };
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      cookies.set(pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1));
    }
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get("location"), url).href;
      if (new URL(next).origin !== new URL(hostUrl).origin) return next; // left the host: the app's redirect URI
      url = next;
      init = {};
      continue;
    }
    const html = await res.text();
    assert.equal(res.status, 200, `the browser got ${res.status} at ${url}: ${html.slice(0, 500)}`);
    const form = html.match(/<form\b[^>]*>[\s\S]*?<\/form>/i)?.[0];
    assert.ok(form, `no form on the page at ${url}: ${html.slice(0, 500)}`);
    const fields = new URLSearchParams();
    for (const input of form.match(/<input\b[^>]*>/gi) ?? []) {
      const name = attr(input, "name");
      if (!name) continue;
      if (name === "username") fields.set(name, user.username);
      else if (attr(input, "type") === "password") fields.set(name, user.password);
      else fields.set(name, attr(input, "value") ?? "");
    }
    if (!fields.has("username")) {
      // The consent page: press Allow.
      const allow = (form.match(/<button\b[^>]*>/gi) ?? []).find((b) => /^allow$/i.test(attr(b, "value") ?? ""));
      assert.ok(allow, `no Allow button on the consent page: ${form}`);
      fields.set(attr(allow, "name"), attr(allow, "value"));
    }
    url = new URL(attr(form.match(/<form\b[^>]*>/i)[0], "action") ?? "", url).href;
    init = { method: "POST", body: fields, headers: { origin: new URL(hostUrl).origin } };
  }
  throw new Error(`the browser did not reach the app's redirect within 10 hops (last at ${url})`);
}

// ---- steps ---------------------------------------------------------------------------------------

/** Runs `fn` as a subtest; returns `{ value }`, or null when the subtest failed (the test fails too). */
async function step(t, name, fn) {
  let outcome = null;
  await t.test(name, async () => {
    outcome = { value: await fn() };
  });
  return outcome;
}

/** The SDK call, with the exchange spelled out when the host refuses it. */
async function sdk(calls, promise) {
  try {
    return await promise;
  } catch (error) {
    if (!(error instanceof DropboxResponseError)) throw error;
    const call = calls.at(-1);
    assert.fail(
      `the host answered ${error.status} ${JSON.stringify(error.error)} to the SDK's request ` +
        `${call.method} ${call.path} headers ${JSON.stringify(call.headers)} body ${call.body === undefined ? "(none)" : JSON.stringify(call.body)}`,
    );
  }
}

const b64url = (bytes) => Buffer.from(bytes).toString("base64url");

// ---- the scenario --------------------------------------------------------------------------------

for (const host of hosts) {
  for (const app of apps) {
    test(`${host.name}: Dropbox SDK, ${app.name}: authorize, exchange, get_current_account, refresh, revoke, 401`, { timeout: 180_000 }, async (t) => {
      const server = await host.start();
      t.after(() => server.close());
      const tap = await startTap(server.url);
      t.after(() => tap.close());
      const { fetch: sdkFetch, calls } = localFetch(tap.url);

      const auth = new DropboxAuth({ clientId: app.clientId, clientSecret: app.clientSecret, domain: DOMAIN, fetch: sdkFetch });
      const dbx = new Dropbox({ auth });
      const state = `st-${app.clientId}-${Date.now()}`;

      const authUrl = await auth.getAuthenticationUrl(REDIRECT, state, "code", "offline", app.scopes, undefined, app.pkce);
      await t.test("the SDK's authorization URL", () => {
        const u = new URL(authUrl);
        assert.equal(u.origin + u.pathname, `https://meta-${DOMAIN}/oauth2/authorize`);
        const q = u.searchParams;
        assert.equal(q.get("response_type"), "code");
        assert.equal(q.get("client_id"), app.clientId);
        assert.equal(q.get("redirect_uri"), REDIRECT);
        assert.equal(q.get("state"), state);
        assert.equal(q.get("token_access_type"), "offline");
        assert.equal(q.get("scope"), app.scopes?.join(" ") ?? null);
        if (app.pkce) {
          assert.equal(q.get("code_challenge_method"), "S256");
          assert.equal(q.get("code_challenge"), b64url(createHash("sha256").update(auth.getCodeVerifier()).digest()));
        } else {
          assert.equal(q.get("code_challenge"), null);
        }
      });

      // The user's browser opens the URL (the authorization page is on the host, like meta-… is Dropbox's).
      const origin = SDK_ORIGINS.find((o) => authUrl.startsWith(`${o}/`));
      const back = new URL(await browse(server.url + authUrl.slice(origin.length), server.url, ALICE));
      assert.equal(back.origin + back.pathname, REDIRECT);
      assert.equal(back.searchParams.get("state"), state, "state comes back unchanged");
      const code = back.searchParams.get("code");
      assert.ok(code, `a code in the redirect: ${back}`);

      let tokens = (
        await step(t, "getAccessTokenFromCode", async () => {
          const res = await sdk(calls, auth.getAccessTokenFromCode(REDIRECT, code));
          assert.equal(res.status, 200);
          const r = res.result;
          assert.match(r.access_token, /^sl\./);
          assert.equal(r.token_type, "bearer");
          assert.equal(typeof r.expires_in, "number");
          assert.equal(typeof r.refresh_token, "string", "offline: a refresh token");
          assert.equal(r.account_id, ALICE.account_id);
          assert.equal(typeof r.uid, "string");
          assert.equal(r.scope, (app.scopes ?? r.scope.split(" ")).join(" "));
          return r;
        })
      )?.value;
      assert.ok(tokens, "the rest of the scenario needs the SDK's code exchange");
      // What an app does with the result (the SDK's examples do the same).
      auth.setAccessToken(tokens.access_token);
      auth.setRefreshToken(tokens.refresh_token);
      auth.setAccessTokenExpiresAt(new Date(Date.now() + tokens.expires_in * 1000));

      await t.test("usersGetCurrentAccount", async () => {
        const res = await sdk(calls, dbx.usersGetCurrentAccount());
        assert.equal(res.status, 200);
        assert.equal(res.result.account_id, ALICE.account_id);
        assert.equal(res.result.name.display_name, ALICE.display_name);
        assert.equal(res.result.email, ALICE.email);
      });

      // The access token has (as far as the SDK knows) expired: its next call refreshes first, on its
      // own (checkAndRefreshAccessToken), then calls with the new token.
      const first = auth.getAccessToken();
      auth.setAccessTokenExpiresAt(new Date(Date.now() - 1000));
      const refreshed = await step(t, "refresh on expiry (checkAndRefreshAccessToken), then usersGetCurrentAccount", async () => {
        const res = await sdk(calls, dbx.usersGetCurrentAccount());
        assert.ok(calls.at(-2)?.path.startsWith("/oauth2/token"), "the SDK refreshed before the call");
        assert.notEqual(auth.getAccessToken(), first, "a new access token");
        assert.ok(auth.getAccessTokenExpiresAt() > new Date(), "with an expiry from expires_in");
        assert.equal(res.result.account_id, ALICE.account_id);
      });
      assert.ok(refreshed, "the rest of the scenario needs the SDK's refresh");

      await t.test("authTokenRevoke", async () => {
        const res = await sdk(calls, dbx.authTokenRevoke());
        assert.equal(res.status, 200);
      });

      await t.test("usersGetCurrentAccount after revoke rejects with the SDK's 401 error", async () => {
        const error = await dbx.usersGetCurrentAccount().then(
          (res) => assert.fail(`expected a rejection, got ${res.status}`),
          (e) => e,
        );
        assert.ok(error instanceof DropboxResponseError, `a DropboxResponseError, got ${error}`);
        assert.equal(error.status, 401);
        assert.equal(error.error?.error?.[".tag"], "invalid_access_token");
        assert.match(error.error?.error_summary ?? "", /^invalid_access_token\//);
        assert.match(error.headers.get("www-authenticate") ?? "", /^Bearer .*error="invalid_token"/);
      });

      await t.test("refreshAccessToken after revoke rejects: the refresh token ended with the grant", async () => {
        const error = await auth.refreshAccessToken().then(
          () => assert.fail("expected a rejection"),
          (e) => e,
        );
        assert.ok(error instanceof DropboxResponseError, `a DropboxResponseError, got ${error}`);
        assert.equal(error.status, 400);
        assert.equal(error.error?.error, "invalid_grant", `the SDK sent ${calls.at(-1).method} ${calls.at(-1).path} ${JSON.stringify(calls.at(-1).headers)}`);
      });

      await t.test("every SDK request arrived unchanged (method, path, headers, body)", () => {
        assertArrivedUnchanged(calls, tap.requests(), tap.url);
      });
    });
  }
}
