// The official Dropbox JavaScript SDK (npm `dropbox`, pinned in package.json), unchanged, against our
// hosts: authorization URL → browser sign-in and consent → code exchange → get_current_account →
// refresh → get_current_account → revoke → 401, for a public PKCE app and a confidential app.
//
//   node --test tests/e2e/dropbox-sdk.test.mjs   (from the repository root, after npm ci in tests/e2e)
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
// Hosts: the Node host (examples/node), the native host (examples/native) and the Worker host
// (examples/worker/dev.mjs, wrangler dev).
// The hosts, the tap and the browser are in interop.mjs, shared with dropbox-python.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Dropbox, DropboxAuth, DropboxResponseError } from "dropbox";
import { ALICE, REDIRECT, apps, b64url, browse, hosts, startTap, step } from "./interop.mjs";

const DOMAIN = "edgegrant.test";
const SDK_ORIGINS = [`https://meta-${DOMAIN}`, `https://api-${DOMAIN}`]; // authorize page, token + API

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

// ---- steps ---------------------------------------------------------------------------------------

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

// ---- the scenario --------------------------------------------------------------------------------

for (const host of hosts) {
  for (const app of apps) {
    test(`${host.name}: Dropbox SDK, ${app.name}: authorize, exchange, get_current_account, refresh, revoke, 401`, { timeout: host.startTimeout + 120_000 }, async (t) => {
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
      const back = new URL((await browse(server.url + authUrl.slice(origin.length), server.url, ALICE)).redirect);
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
