// The Fetch driver end to end on Request/Response, and bad input through it: always the right
// error response, never an exception escaping to the host.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createAuthServer, createCore, isCrossSite, migrateApp, secretDigest } from "../src/node.js";
import { memoryStorage } from "../src/adapters/memory.js";
import { partitionedStorage } from "../src/adapters/partitioned.js";
import { ALICE, CONF_APP, CONF_SECRET, GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, SERVER_KEY, VERIFIER, config, pkceQuery, testServer as server } from "./fixtures.mjs";

const ORIGIN = "http://auth.test";

const tokenRequest = (pairs, headers = {}) =>
  new Request(`${ORIGIN}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(pairs),
  });
const bearer = (path, token) => new Request(`${ORIGIN}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
const consentPost = (query, decision, headers = { origin: ORIGIN }) =>
  new Request(`${ORIGIN}/oauth2/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ query, decision }),
  });

async function codeFor(srv) {
  const page = await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?${pkceQuery("st")}`));
  assert.equal(page.status, 200);
  assert.equal(page.headers.get("x-frame-options"), "DENY");
  assert.match(await page.text(), /Allow/);
  const redirect = await srv.fetch(consentPost(pkceQuery("st"), "allow"));
  assert.equal(redirect.status, 302);
  const location = new URL(redirect.headers.get("location"));
  assert.equal(location.searchParams.get("state"), "st");
  return location.searchParams.get("code");
}

test("the whole PKCE offline flow through fetch()", async () => {
  const { srv, advance, audit } = server();
  const code = await codeFor(srv);
  const exchange = await srv.fetch(
    tokenRequest({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }),
  );
  assert.equal(exchange.status, 200);
  assert.equal(exchange.headers.get("cache-control"), "no-store");
  const tokens = await exchange.json();
  assert.match(tokens.access_token, /^sl\./);
  const account = await srv.fetch(bearer(GET_ACCOUNT, tokens.access_token));
  assert.deepEqual(await account.json(), { account_id: ALICE.account_id });
  advance(14_400);
  const expired = await srv.fetch(bearer(GET_ACCOUNT, tokens.access_token));
  assert.equal(expired.status, 401);
  assert.equal((await expired.json()).error[".tag"], "expired_access_token");
  const refreshed = await (await srv.fetch(tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: PKCE_APP }))).json();
  assert.equal(refreshed.refresh_token, undefined);
  assert.equal((await srv.fetch(bearer(GET_ACCOUNT, refreshed.access_token))).status, 200);
  const revoked = await srv.fetch(bearer("/2/auth/token/revoke", refreshed.access_token));
  assert.equal(revoked.status, 200);
  assert.equal(await revoked.text(), "null");
  assert.equal((await srv.fetch(bearer(GET_ACCOUNT, refreshed.access_token))).status, 401);
  assert.deepEqual(
    audit.map((e) => e.event),
    ["code_issued", "tokens_issued", "access_token_refreshed", "grant_revoked"],
  );
});

test("re-authorization completes without asking again; deny gives access_denied", async () => {
  const { srv } = server();
  await codeFor(srv);
  const again = await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?${pkceQuery("2")}`));
  assert.equal(again.status, 302, "already granted: straight back to the app");
  assert.ok(new URL(again.headers.get("location")).searchParams.get("code"));
  const denied = await srv.fetch(consentPost(pkceQuery("d"), "deny"));
  assert.equal(new URL(denied.headers.get("location")).searchParams.get("error"), "access_denied");
});

test("a signed-out user is sent to sign in; a cross-site consent post is refused", async () => {
  const { srv } = server({ signedIn: false });
  const signIn = await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?${pkceQuery()}`));
  assert.equal(signIn.status, 200);
  assert.match(await signIn.text(), /data-page="sign_in"/);
  const { srv: signedIn } = server();
  const forged = await signedIn.fetch(consentPost(pkceQuery(), "allow", { origin: "https://evil.example" }));
  assert.equal(forged.status, 400);
  assert.equal(forged.headers.get("location"), null);
  const fetchSite = await signedIn.fetch(consentPost(pkceQuery(), "allow", { origin: ORIGIN, "sec-fetch-site": "cross-site" }));
  assert.equal(fetchSite.status, 400, "Sec-Fetch-Site decides over an Origin a page could not forge anyway");
  const opaque = await signedIn.fetch(consentPost(pkceQuery(), "allow", { origin: "null" }));
  assert.equal(opaque.status, 400, "an opaque origin without Sec-Fetch-Site is not ours");
  // What Chromium sends from our own consent page under Referrer-Policy: no-referrer.
  const sameOrigin = await signedIn.fetch(consentPost(pkceQuery(), "allow", { origin: "null", "sec-fetch-site": "same-origin" }));
  assert.equal(sameOrigin.status, 302);
  const incomplete = await signedIn.fetch(consentPost(pkceQuery(), "maybe"));
  assert.equal(incomplete.status, 400);
});

test("bad input gets the right error response, never an exception", async () => {
  const { srv } = server();
  const cases = [
    [tokenRequest(`grant_type=authorization_code&client_id=${CONF_APP}&client_secret=${CONF_SECRET}&code=%ZZ&code=x`), 400, "invalid_request"],
    [tokenRequest({ grant_type: "refresh_token", refresh_token: "x" }, { authorization: "Basic %%%" }), 401, "invalid_client"],
    [tokenRequest({ grant_type: "refresh_token", refresh_token: "x" }, { authorization: `Basic ${btoa("no-colon")}` }), 401, "invalid_client"],
    [tokenRequest({ grant_type: "refresh_token", refresh_token: "x", client_secret: "s" }, { authorization: `Basic ${btoa(`${CONF_APP}:${CONF_SECRET}`)}` }), 400, "invalid_request"],
    [tokenRequest({ grant_type: "refresh_token", refresh_token: "x", pad: "p".repeat(100_000) }), 400, "invalid_request"],
    [new Request(`${ORIGIN}/oauth2/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }), 400, "invalid_request"],
    [new Request(`${ORIGIN}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new Uint8Array([0xff, 0x00, 0x3d, 0x26]) }), 400, "invalid_request"],
    [new Request(`${ORIGIN}/oauth2/token`), 405, "invalid_request"],
  ];
  for (const [request, status, error] of cases) {
    const response = await srv.fetch(request);
    assert.equal(response.status, status);
    assert.equal((await response.json()).error, error);
  }
  const huge = await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?client_id=${PKCE_APP}&state=${"s".repeat(20_000)}`));
  assert.equal(huge.status, 400);
  const malformedBearer = await srv.fetch(new Request(`${ORIGIN}${GET_ACCOUNT}`, { method: "POST", headers: { authorization: "Bearer a b" } }));
  assert.equal(malformedBearer.status, 400);
  assert.equal((await srv.fetch(new Request(`${ORIGIN}/elsewhere`))).status, 404);
});

test("a bad configuration is refused when the server is created", () => {
  assert.throws(() => createAuthServer({ apps: [{ key: "x" }], storage: memoryStorage() }), Error);
  assert.throws(() => createAuthServer({ apps: [], policy: { code_ttl: 3600 }, storage: memoryStorage() }), /code_ttl/);
  assert.throws(() => createAuthServer({ apps: [] }), /storage/);
  assert.throws(() => createAuthServer({ apps: [], storage: memoryStorage() }), /server_key: is missing/);
  assert.ok(createAuthServer({ apps: [], serverKey: SERVER_KEY, storage: memoryStorage() }));
});

test("a misspelled option or setting is refused by name, never ignored; so is a wrong argument", () => {
  const base = { apps: config().apps, serverKey: SERVER_KEY, storage: memoryStorage() };
  const refused = (options, message) => assert.throws(() => createAuthServer(options), message);
  // The options of createAuthServer.
  refused({ ...base, apiEndpoint: { [GET_ACCOUNT]: "account_info.read" } }, /createAuthServer: unknown option apiEndpoint \(did you mean apiEndpoints\?\)/);
  refused({ ...base, api_endpoints: {} }, /unknown option api_endpoints \(did you mean apiEndpoints\?\)/);
  refused({ ...base, config: config() }, /as config or as its parts, not both \(config and serverKey, apps\)/);
  refused({ ...base, hooks: { currentuser: () => null } }, /unknown hook currentuser; the hooks are currentUser, api, sourceOf/);
  refused({ ...base, hooks: { api: { "2/users/get_current_account": () => null } } }, /a path starts with \//);
  refused({ ...base, hooks: { api: { [GET_ACCOUNT]: "handler" } } }, /hooks.api\["\/2\/users\/get_current_account"\] must be a function/);
  refused({ ...base, clock: 1_700_000_000 }, /options.clock must be a function/);
  refused(null, /options must be an object/);
  // The configuration document's settings, by the core: the path to the one that is wrong.
  refused({ ...base, pages: { signin: "<p>" } }, /pages.signin: is not a setting here \(expected consent, code, error, sign_in\)/);
  refused({ ...base, apps: [{ ...config().apps[0], redirect_uri: ["https://x.example/cb"] }] }, /apps\[0\].redirect_uri: is not a setting here/);
  refused({ ...base, policy: { access_token_tll: 600 } }, /policy.access_token_tll: is not a setting here/);
  refused({ ...base, policy: { attempts: { windows: 60 } } }, /policy.attempts.windows: is not a setting here \(expected window, per_source, per_account\)/);
  refused({ ...base, profile: { kind: "standards", issuer: "https://auth.example", rotation: { client: "all" } } }, /profile.rotation.client: is not a setting here/);
  refused({ ...base, policy: { code_ttl: "600" } }, /policy.code_ttl: expected/);
  assert.throws(() => createCore({ ...config(), apiEndpoints: {} }), /apiEndpoints: is not a setting here/);
  // The functions' own arguments.
  assert.throws(() => secretDigest(undefined), { name: "TypeError", message: /secretDigest\(secret\): the secret must be a non-empty string, not undefined/ });
  assert.throws(() => secretDigest(""), { name: "TypeError", message: /not an empty string/ });
  assert.throws(() => secretDigest(42), /not a number/);
  assert.throws(() => createCore("{}"), { name: "TypeError", message: /createCore\(config\)/ });
  assert.throws(() => migrateApp(config(), undefined), { name: "TypeError", message: /app must be an app's key/ });
  assert.throws(() => isCrossSite([], undefined), { name: "TypeError", message: /host must be/ });
});

test("migrateApp rewrites only the legacy app's permissions, with the scopes its access type stands for", () => {
  const legacy = { key: "legacy-app", name: "Legacy", redirect_uris: [PKCE_REDIRECT], permissions: { kind: "legacy", access: "team_information" } };
  const document = { ...config(), apps: [...config().apps, legacy], policy: { code_ttl: 300 } };
  const before = structuredClone(document);
  const migrated = migrateApp(document, "legacy-app");
  assert.deepEqual(document, before, "the document given is not changed");
  assert.deepEqual(migrated, { ...before, apps: [...config().apps, { ...legacy, permissions: { kind: "scoped", scopes: ["team_info.read"] } }] });
  const full = migrateApp({ ...document, apps: [{ ...legacy, permissions: { kind: "legacy", access: "full_dropbox" } }] }, "legacy-app");
  assert.ok(full.apps[0].permissions.scopes.includes("files.content.write"), "a full-Dropbox app keeps what it could do");
  assert.throws(() => migrateApp(document, "nobody"), { name: "Error", message: 'no app is registered as "nobody"' });
  assert.throws(() => migrateApp(document, PKCE_APP), { name: "Error", message: `app ${PKCE_APP} is already scoped` });
  assert.throws(() => migrateApp({ ...document, policy: { code_ttl: 0 } }, "legacy-app"), { name: "Error", message: /^invalid configuration: / });
});

test("every page of the flow forbids framing and leaks nothing through Referer or caches", async () => {
  const { srv } = server();
  const pages = {
    consent: await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?${pkceQuery("st")}`)),
    error: await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?client_id=nobody&response_type=code`)),
    code: await srv.fetch(consentPost(`client_id=${CONF_APP}&response_type=code`, "allow")),
    "cross-site consent": await srv.fetch(consentPost(pkceQuery("st"), "allow", { origin: "https://evil.example" })),
  };
  for (const [kind, page] of Object.entries(pages)) {
    assert.match(page.headers.get("content-type"), /^text\/html/, kind);
    assert.equal(page.headers.get("x-frame-options"), "DENY", kind);
    assert.equal(page.headers.get("content-security-policy"), "frame-ancestors 'none'", kind);
    assert.equal(page.headers.get("referrer-policy"), "no-referrer", kind);
    assert.equal(page.headers.get("cache-control"), "no-store", kind);
  }
  assert.match(await pages.code.text(), /data-page="code"/);
  assert.match(await pages.error.text(), /data-page="error"/);
});

test("the plain-value entry takes node:http's values and answers plain values", async () => {
  const { srv } = server();
  const code = await codeFor(srv);
  const body = new TextEncoder().encode(new URLSearchParams({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }).toString());
  const exchange = await srv.handle({ method: "POST", url: "/oauth2/token", headers: ["Content-Type", "application/x-www-form-urlencoded", "Host", "auth.test"], body });
  assert.equal(exchange.kind, "reply");
  assert.equal(exchange.status, 200);
  assert.equal(exchange.outcome, "tokens");
  assert.deepEqual(exchange.headers.find(([n]) => n === "Cache-Control"), ["Cache-Control", "no-store"]);
  const { access_token } = JSON.parse(exchange.body);
  const call = await srv.handle({ method: "POST", url: `${GET_ACCOUNT}?ignored=1`, headers: ["Authorization", `Bearer ${access_token}`] });
  assert.deepEqual(call, {
    kind: "serve",
    principal: { app: PKCE_APP, subject: "account", account_id: ALICE.account_id, uid: ALICE.uid, scopes: ["account_info.read", "files.metadata.read"], expires_at: 1_700_014_400, props: null },
    // What the host's answer must carry: never cached, never sniffed.
    headers: [
      ["Cache-Control", "no-store"],
      ["X-Content-Type-Options", "nosniff"],
    ],
  });
  const replay = await srv.handle({ method: "POST", url: "/oauth2/token", headers: ["Content-Type", "application/x-www-form-urlencoded"], body });
  assert.deepEqual([replay.status, replay.refusal], [400, "code_reused"]);
  const unlinked = await srv.unlink(PKCE_APP, ALICE.account_id);
  assert.equal(unlinked.outcome, "unlinked");
});

/** A body of `total` bytes made as it is read, and how much of it was read. */
function endlessBody(total = 1024 * 1024 * 1024) {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  const read = { bytes: 0 };
  const body = new ReadableStream({
    pull(controller) {
      if (read.bytes >= total) return controller.close();
      read.bytes += chunk.length;
      controller.enqueue(chunk.slice());
    },
  });
  return { body, read };
}

test("nodeHandler serves the server on node:http: the flow's pages, a body over the limit refused and the connection closed, the socket's peer as the source", async (t) => {
  const { srv } = server();
  const http = await import("node:http");
  const { nodeHandler } = await import("../src/node.js");
  const listener = http.createServer(nodeHandler(srv));
  await new Promise((ok) => listener.listen(0, "127.0.0.1", ok));
  t.after(() => new Promise((ok) => { listener.closeAllConnections(); listener.close(ok); }));
  const origin = `http://127.0.0.1:${listener.address().port}`;
  const consent = await fetch(`${origin}/oauth2/authorize?${pkceQuery()}`);
  assert.equal(consent.status, 200);
  assert.match(await consent.text(), /data-page="consent"/);
  // Past the limit: refused as too large (invalid_request), the rest left unread and the
  // connection closed after the answer.
  const huge = await fetch(`${origin}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "a=".padEnd(srv.core.maxInputBytes() + 1024 * 1024, "b") });
  assert.equal(huge.status, 400);
  assert.match((await huge.json()).error_description, /too large/);
  assert.equal(huge.headers.get("connection"), "close");
  // A wrong secret is counted against the socket's peer: past the limit, 429 for that source.
  const wrong = () => fetch(`${origin}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${Buffer.from(`${CONF_APP}:wrong`).toString("base64")}` }, body: "grant_type=refresh_token&refresh_token=x" });
  const statuses = [];
  for (let i = 0; i < 51; i++) statuses.push((await wrong()).status); // per_source: 50 in the window
  assert.deepEqual([...new Set(statuses)], [401, 429], "a source at its limit is answered 429");
  assert.equal(statuses.indexOf(429), 50);
});

test("an endless body is read only a little past the limit, by fetch and by route: refused as too large at once, not after reading it all", async () => {
  const { srv } = server();
  const endless = () => {
    const { body, read } = endlessBody();
    const request = new Request(`${ORIGIN}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body, duplex: "half" });
    return { request, read };
  };
  // What the core reads, and past it what the driver drops before it stops (100 MiB: what
  // Cloudflare's edge lets through), of a body of 1 GiB.
  const bound = srv.core.maxInputBytes() + 101 * 1024 * 1024;
  const posted = endless();
  const answer = await srv.fetch(posted.request);
  assert.equal(answer.status, 400);
  assert.match((await answer.json()).error_description, /too large/);
  assert.ok(posted.read.bytes < bound, `fetch read ${posted.read.bytes} bytes`);

  const routed = endless();
  const { request: forward } = await srv.route(routed.request);
  assert.ok(routed.read.bytes < bound, `route read ${routed.read.bytes} bytes`);
  assert.equal((await srv.fetch(forward)).status, 400, "what route forwards is refused as too large");
});

test("a stateless front routes a genuine credential to its partition and answers a forged one itself, reaching no partition's store", async () => {
  // As the Worker: one store per partition (a Durable Object each), and a front that asks the
  // core where each request runs. The front's own server reaches partitions only through `addressed`.
  const stores = new Map();
  const addressed = [];
  const storeOf = (name) => {
    addressed.push(name);
    if (!stores.has(name)) stores.set(name, memoryStorage());
    return stores.get(name);
  };
  const { srv: minting } = server({ storage: partitionedStorage(storeOf) });
  const code = await codeFor(minting);
  const tokens = await (await minting.fetch(tokenRequest({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }))).json();
  const { partition } = await minting.route(bearer(GET_ACCOUNT, tokens.access_token));
  assert.match(partition, /^[A-Za-z0-9_-]{16}$/);
  assert.ok(stores.has(partition), "the records were written in the token's partition");
  for (const credential of [code, tokens.access_token, tokens.refresh_token]) {
    assert.ok(!credential.includes(partition), `${credential} shows its partition`);
  }

  const [route, secret] = tokens.access_token.slice("sl.".length).split(".");
  const flipped = `${route.slice(0, 5)}${route[5] === "A" ? "B" : "A"}${route.slice(6)}`;
  const forgeries = [
    `sl.${flipped}.${secret}`, // one character of the route changed
    `sl.${route}.${"s".repeat(43)}`, // a genuine route on a chosen secret
    `sl.${"A".repeat(32)}.${secret}`, // a route of the right shape, never minted
  ];
  const front = createAuthServer({ apps: config().apps, serverKey: SERVER_KEY, apiEndpoints: config().api_endpoints, storage: partitionedStorage(storeOf) });
  addressed.length = 0;
  for (const forged of forgeries) {
    const routed = await front.route(bearer(GET_ACCOUNT, forged));
    assert.equal(routed.partition, null, forged);
    const answer = await front.fetch(routed.request);
    assert.equal(answer.status, 401, forged);
    assert.equal((await answer.json()).error[".tag"], "invalid_access_token");
    const refresh = await front.route(tokenRequest({ grant_type: "refresh_token", refresh_token: forged.slice("sl.".length), client_id: PKCE_APP }));
    assert.equal(refresh.partition, null, forged);
    assert.equal((await front.fetch(refresh.request)).status, 400);
  }
  assert.deepEqual(addressed, [], "no partition's store was reached");
  // Under another deployment's key even a genuine credential is no credential.
  const other = createAuthServer({ apps: config().apps, serverKey: "YW5vdGhlci1zZXJ2ZXIta2V5LW9mLTMyLWJ5dGVzISE", apiEndpoints: config().api_endpoints, storage: partitionedStorage(storeOf) });
  assert.equal((await other.route(bearer(GET_ACCOUNT, tokens.access_token))).partition, null);
  assert.deepEqual(addressed, []);
});

test("onRefusal tells of every refused request — its name, status, endpoint, the client it named, the source, when — and never a secret, a code or a token; createAuthServer warns of an API handler nobody declared and of an API scope no app can hold", async (t) => {
  const warned = [];
  t.mock.method(console, "warn", (line) => warned.push(line));
  const refusals = [];
  const srv = createAuthServer({
    serverKey: SERVER_KEY,
    apps: config().apps,
    apiEndpoints: { ...config().api_endpoints, "/2/team/get_info": "team_info.read" },
    storage: memoryStorage(),
    clock: () => 1_700_000_000,
    onRefusal: (event) => refusals.push(event),
    hooks: { currentUser: async () => ALICE, api: { "/mcp": () => new Response("never") } },
  });
  assert.deepEqual(warned, [
    "edgegrant: hooks.api has a handler for /mcp, which apiEndpoints does not declare: it is never called (the path answers 404); declare it with its Required Scope",
    'edgegrant: api_endpoints["/2/team/get_info"]: no app can hold its Required Scope team_info.read: no app lists it, so every call to it is refused',
  ]);

  const wrongSecret = `${CONF_SECRET}-wrong`;
  const basic = `Basic ${Buffer.from(`${CONF_APP}:${wrongSecret}`).toString("base64")}`;
  const code = "A".repeat(32) + "." + "B".repeat(43);
  const token = `sl.${"C".repeat(32)}.${"D".repeat(43)}`;
  const answers = [
    await srv.fetch(tokenRequest({ grant_type: "authorization_code", code, redirect_uri: "https://conf.example/cb" }, { authorization: basic }), { source: "203.0.113.7" }),
    await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?client_id=nobody-app&response_type=code`)),
    await srv.fetch(bearer(GET_ACCOUNT, token), { source: "203.0.113.8" }),
    await srv.fetch(new Request(`${ORIGIN}/2/files/upload`, { method: "POST", body: "x".repeat(1024 * 1024 + 1) })),
  ];
  assert.deepEqual(answers.map((answer) => answer.status), [401, 400, 401, 413]);
  assert.deepEqual(refusals, [
    { refusal: "client_authentication_failed", status: 401, method: "POST", endpoint: "/oauth2/token", app: CONF_APP, source: "203.0.113.7", at: 1_700_000_000 },
    { refusal: "unknown_client", status: 400, method: "GET", endpoint: "/oauth2/authorize", app: "nobody-app", source: null, at: 1_700_000_000 },
    { refusal: "unknown_access_token", status: 401, method: "POST", endpoint: GET_ACCOUNT, app: null, source: "203.0.113.8", at: 1_700_000_000 },
    { refusal: "body_too_large", status: 413, method: "POST", endpoint: "/2/files/upload", app: null, source: null, at: 1_700_000_000 },
  ]);
  const told = JSON.stringify(refusals);
  for (const secret of [wrongSecret, code, token, "xxxx"]) assert.ok(!told.includes(secret), "no secret, code, token or body is told");
  // A request that is served is no refusal.
  assert.equal((await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?${pkceQuery()}`))).status, 200);
  assert.equal(refusals.length, 4);
});

test("grant props: given with the user at consent, handed to the API handler with the principal, carried over refreshes, ended with the grant — and never in clear in the store (read back from the SQLite file)", async (t) => {
  const { openSqliteStorage } = await import("../src/adapters/sqlite.js");
  const { mkdtempSync, readFileSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-props-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "tokens.sqlite");
  const storage = await openSqliteStorage(file);
  // What an MCP server keeps with the grant: the token of the upstream API it calls for the user.
  const UPSTREAM = "gho_upstream-token-0123456789abcdef";
  const props = { upstream: { token: UPSTREAM, expires: 1_700_003_600 } };
  const seen = [];
  const api = { [GET_ACCOUNT]: (principal) => (seen.push(principal.props), Response.json({ ok: true })) };
  const { srv, advance } = server({ storage, user: { ...ALICE, props }, api });
  const code = await codeFor(srv);
  const exchanged = await srv.fetch(tokenRequest({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT, token_access_type: "offline" }));
  const tokens = await exchanged.json();
  assert.equal(exchanged.status, 200, JSON.stringify(tokens));
  assert.equal((await srv.fetch(bearer(GET_ACCOUNT, tokens.access_token))).status, 200);
  assert.deepEqual(seen, [props], "the handler gets the props with the principal");

  // A refresh mints a token that carries them too.
  advance(60);
  const refreshed = await (await srv.fetch(tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: PKCE_APP }))).json();
  assert.ok(refreshed.access_token, JSON.stringify(refreshed));
  assert.equal((await srv.fetch(bearer(GET_ACCOUNT, refreshed.access_token))).status, 200);
  assert.deepEqual(seen, [props, props]);

  // Nowhere in the store in clear: not in any record, not anywhere in the database file.
  storage.close?.();
  const Database = (await import("better-sqlite3")).default;
  const db = new Database(file, { readonly: true });
  const rows = db.prepare("SELECT key, bytes FROM edgegrant_store").all();
  db.close();
  assert.ok(rows.length >= 5, `the code, the grant, the tokens and the link are stored (${rows.length} records)`);
  for (const { key, bytes } of rows) assert.ok(!Buffer.from(bytes).includes(UPSTREAM), `${key} holds the upstream token in clear`);
  assert.ok(!readFileSync(file).includes(UPSTREAM), "the database file holds it nowhere");
  assert.ok(!readFileSync(file).includes("upstream"), "nor the props' names");

  // The grant ends: its tokens are refused, and the handler sees the props no more.
  const { srv: reopened, advance: advanceReopened } = server({ storage: await openSqliteStorage(file), signedIn: false, api });
  advanceReopened(60);
  assert.equal((await reopened.fetch(bearer(GET_ACCOUNT, refreshed.access_token))).status, 200, "the props outlive the process, sealed");
  assert.deepEqual(seen.at(-1), props);
  assert.equal((await reopened.fetch(new Request(`${ORIGIN}/2/auth/token/revoke`, { method: "POST", headers: { authorization: `Bearer ${refreshed.access_token}` } }))).status, 200);
  assert.equal((await reopened.fetch(bearer(GET_ACCOUNT, refreshed.access_token))).status, 401);
  assert.equal(seen.length, 3, "no call is served after the grant ended");
});

test("the Fetch driver cuts a Request's URL into exactly the scheme, host, path and query new URL gives", async () => {
  const { urlParts } = await import("../src/server.js");
  const hosts = ["auth.example", "auth.example:8443", "127.0.0.1:8787", "[::1]:3000", "xn--bcher-kva.example"];
  const paths = ["", "/", "/oauth2/token", "/a/b/", "/%2F%3F/x", "/caf%C3%A9", "/a:b@c", "/.well-known/oauth-protected-resource/mcp"];
  const queries = ["", "?", "?a=1", "?a=1&b=%3F/x", "??", "?x=https://c.example/cb?y=1"];
  const fragments = ["", "#", "#f", "#f?g/h"];
  let checked = 0;
  for (const scheme of ["http", "https"]) {
    for (const host of hosts) {
      for (const path of paths) {
        for (const query of queries) {
          for (const fragment of fragments) {
            // As a runtime hands it over: parsed and serialized by the Request constructor.
            const url = new Request(`${scheme}://${host}${path}${query}${fragment}`).url;
            const parsed = new URL(url);
            assert.deepEqual(urlParts(url), { scheme: parsed.protocol.slice(0, -1), host: parsed.host, path: parsed.pathname, query: parsed.search.slice(1) }, url);
            checked++;
          }
        }
      }
    }
  }
  assert.equal(checked, 2 * 5 * 8 * 6 * 4);
});
