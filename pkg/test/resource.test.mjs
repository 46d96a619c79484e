// The resource server's helper (edgegrant/resource) for an API on another host: an authorization
// server in the standards profile that lists the API as a resource, and the API on its own
// port using the helper — metadata, challenges, and the token check by introspection (live,
// for this resource, with the scope).
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Readable } from "node:stream";
import { createAuthServer } from "../src/node.js";
import { memoryStorage } from "../src/adapters/memory.js";
import { protectedResource } from "../src/resource.js";
import { canonicalResource } from "../src/core.js";
import { ALICE, CONF_APP, CONF_REDIRECT, CONF_SECRET, PKCE_APP, PKCE_REDIRECT, SERVER_KEY, VERIFIER, config, form, pkceQuery } from "./fixtures.mjs";

/** A node:http server for a Fetch handler set later (the ports must be known first). */
async function listen(t) {
  const slot = {};
  const server = http.createServer(async (req, res) => {
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : Readable.toWeb(req);
    const response = await slot.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers: req.headers, body, duplex: "half" }));
    res.writeHead(response.status, [...response.headers].flat());
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  t.after(() => new Promise((ok) => (server.closeAllConnections(), server.close(ok))));
  slot.url = `http://127.0.0.1:${server.address().port}`;
  return slot;
}

/**
 * An authorization server in the standards profile and an API's host beside it: the API's
 * `/mcp` (and `also(api)`) are resources, which the confidential app introspects as their
 * resource server (RFC 7662 §4); `profile` joins the profile's settings.
 */
async function servers(t, { also = () => [], profile = {} } = {}) {
  const as = await listen(t);
  const api = await listen(t);
  const issuer = `${as.url}/`;
  const resource = `${api.url}/mcp`;
  const resources = [resource, ...also(api)];
  const auth = createAuthServer({
    config: { ...config(), profile: { kind: "standards", issuer, resources, resource_servers: [{ app: CONF_APP, resources }], ...profile }, server_key: SERVER_KEY },
    storage: memoryStorage(),
    onAudit: () => {},
    hooks: { currentUser: () => ALICE },
  });
  // The requests reach it as http://127.0.0.1/…: give them the port they came to (the core
  // checks a consent form's origin against it).
  as.fetch = (request) => {
    const url = new URL(request.url);
    return auth.fetch(new Request(`${as.url}${url.pathname}${url.search}`, request));
  };
  return { as, api, issuer, resource, auth };
}

/** Alice's consent to `query` at `auth`: the code. */
async function consentCode(auth, query) {
  const consent = await auth.handle({
    method: "POST",
    path: "/oauth2/authorize",
    headers: [["content-type", "application/x-www-form-urlencoded"], ["sec-fetch-site", "same-origin"]],
    body: new TextEncoder().encode(new URLSearchParams({ query, decision: "allow" }).toString()),
    user: ALICE,
  });
  return new URL(consent.headers.find(([n]) => n.toLowerCase() === "location")[1]).searchParams.get("code");
}

/** A token for alice from the PKCE app at `auth`, naming `resources`. */
async function accessTokenFor(auth, resources) {
  const code = await consentCode(auth, `${pkceQuery()}${resources.map((r) => `&resource=${encodeURIComponent(r)}`).join("")}`);
  const exchange = await auth.handle({ path: "/oauth2/token", ...form({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }) });
  assert.equal(exchange.status, 200, exchange.body);
  return JSON.parse(exchange.body).access_token;
}

test("an API on another host serves only live tokens issued for it, with the scope, and points clients to its authorization server", async (t) => {
  // The API's own origin is a resource too, listed without a trailing slash.
  const { as, api, issuer, resource, auth } = await servers(t, { also: (api) => [api.url] });
  const rs = protectedResource({
    resource,
    issuer,
    scopes: ["account_info.read"],
    introspection: { endpoint: `${as.url}/oauth2/introspect`, clientId: CONF_APP, clientSecret: CONF_SECRET },
  });
  api.fetch = async (request) => {
    const url = new URL(request.url);
    if (url.pathname === rs.metadataPath) return rs.metadata();
    const { token, response } = await rs.check(request, url.searchParams.get("scope") ?? "account_info.read");
    return response ?? Response.json({ sub: token.sub });
  };

  const codeFor = (query) => consentCode(auth, query);
  const tokenFor = (resources) => accessTokenFor(auth, resources);
  const call = (token, scope) =>
    fetch(`${api.url}/mcp/tools${scope ? `?scope=${scope}` : ""}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  // The metadata, at the well-known path with the resource's path (RFC 9728 §3.1).
  assert.equal(rs.metadataPath, "/.well-known/oauth-protected-resource/mcp");
  const metadata = await (await fetch(`${api.url}${rs.metadataPath}`)).json();
  assert.deepEqual(metadata, { authorization_servers: [issuer], bearer_methods_supported: ["header"], resource, scopes_supported: ["account_info.read"] });

  // No token: the challenge names the metadata, and the scope this call requires.
  const bare = await call(null);
  assert.equal(bare.status, 401);
  assert.equal(bare.headers.get("www-authenticate"), `Bearer realm="api", scope="account_info.read", resource_metadata="${api.url}/.well-known/oauth-protected-resource/mcp"`);

  // A malformed header: 400 invalid_request, as the core answers at its own API (one parsing,
  // one challenge: the helper used to answer 401 without an error code here).
  const malformed = await fetch(`${api.url}/mcp/tools`, { headers: { authorization: "Bearer not a token" } });
  assert.equal(malformed.status, 400);
  assert.match(malformed.headers.get("www-authenticate"), /^Bearer realm="api", error="invalid_request", error_description="[^"]+", resource_metadata="/);

  // A token issued for this resource: served.
  const mine = await tokenFor([resource]);
  const served = await call(mine);
  assert.equal(served.status, 200);
  assert.deepEqual(await served.json(), { sub: ALICE.account_id });
  // Without the scope the endpoint requires: 403 insufficient_scope.
  const narrow = await call(mine, "files.content.write");
  assert.equal(narrow.status, 403);
  assert.match(narrow.headers.get("www-authenticate"), /error="insufficient_scope", scope="files.content.write"/);

  // A token issued for no resource (the authorization server's own API): not this API's.
  const theirs = await tokenFor([]);
  const refused = await call(theirs);
  assert.equal(refused.status, 401);
  assert.match(refused.headers.get("www-authenticate"), /error="invalid_token"/);

  // An identifier spelled another way names the same resource (RFC 3986 §6.2.3): a client
  // naming the origin with its "/" (as the MCP TypeScript SDK does) gets a token that a
  // resource server configured either way accepts.
  const rootToken = await tokenFor([`${api.url}/`]);
  for (const spelling of [`${api.url}/`, api.url]) {
    const root = protectedResource({ resource: spelling, issuer, introspection: { endpoint: `${as.url}/oauth2/introspect`, clientId: CONF_APP, clientSecret: CONF_SECRET } });
    const checked = await root.check(new Request(`${api.url}/`, { headers: { authorization: `Bearer ${rootToken}` } }));
    assert.ok(checked.token, `${spelling}: ${checked.response?.status}`);
  }
  assert.equal((await call(rootToken)).status, 401, "the origin's token is not the /mcp resource's");

  // A refresh token is no access token: refused even where introspection describes it (here
  // the resource server is the token's own app), so its holder cannot call the API with it.
  const offline = new URLSearchParams({ client_id: CONF_APP, response_type: "code", redirect_uri: CONF_REDIRECT, token_access_type: "offline", resource });
  const conf = await auth.handle({
    path: "/oauth2/token",
    ...form({ grant_type: "authorization_code", code: await codeFor(offline.toString()), redirect_uri: CONF_REDIRECT, client_id: CONF_APP, client_secret: CONF_SECRET }),
  });
  const { access_token: confAccess, refresh_token: confRefresh } = JSON.parse(conf.body);
  assert.equal((await call(confAccess)).status, 200, "its access token is served");
  const byRefresh = await call(confRefresh);
  assert.equal(byRefresh.status, 401, "its refresh token is not");
  assert.match(byRefresh.headers.get("www-authenticate"), /error="invalid_token"/);

  // Revoked at the authorization server: refused at once.
  const revoked = await auth.handle({ path: "/oauth2/revoke", ...form({ token: mine, client_id: PKCE_APP }) });
  assert.equal(revoked.status, 200);
  assert.equal((await call(mine)).status, 401);
});

test("the helper names resources as the core does: no query, and paths compared as written", () => {
  const introspection = { endpoint: "https://auth.example/oauth2/introspect", clientId: CONF_APP, clientSecret: CONF_SECRET };
  const rs = (resource) => protectedResource({ resource, issuer: "https://auth.example/", scopes: ["b.read", "a.read", "b.read"], introspection });
  // The core refuses a resource with a query or a fragment (RFC 8707 §2): so does the helper.
  for (const refused of ["https://mcp.example/mcp?tenant=1", "https://mcp.example/mcp#x", "ftp://mcp.example/mcp"]) {
    assert.throws(() => rs(refused), /resource must be an http\(s\) URL/, refused);
  }
  // Host case and the default port are normalized; dot segments are not (the core keeps a
  // path as written, so `/x/../mcp` names another resource than `/mcp`).
  assert.equal(canonicalResource("HTTPS://MCP.example:443/mcp"), "https://mcp.example/mcp");
  assert.equal(canonicalResource("https://mcp.example/x/../mcp"), "https://mcp.example/x/../mcp");
  assert.equal(canonicalResource("https://mcp.example/mcp?x=1"), null);
  // The metadata document and its place are the core's.
  const helper = rs("https://mcp.example/mcp/");
  assert.equal(helper.metadataPath, "/.well-known/oauth-protected-resource/mcp");
  assert.equal(helper.challenge(), 'Bearer realm="api", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"');
});

/** A DPoP key pair, and proofs it signs (RFC 9449 §4.2) for `htm` and `htu`, with `ath` of `token`. */
async function dpopKey() {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
  const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const b64 = (bytes) => Buffer.from(bytes).toString("base64url");
  const thumbprint = b64(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify({ crv, kty, x, y }))));
  let jti = 0;
  const proof = async (htm, htu, token, iat = Math.floor(Date.now() / 1000)) => {
    const claims = { jti: `p${(jti += 1)}`, htm, htu, iat };
    if (token) claims.ath = b64(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
    const input = `${b64(JSON.stringify({ typ: "dpop+jwt", alg: "ES256", jwk: { kty, crv, x, y } }))}.${b64(JSON.stringify(claims))}`;
    const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey, new TextEncoder().encode(input));
    return `${input}.${b64(signature)}`;
  };
  return { thumbprint, proof };
}

test("with dpop, an API on another host serves a bound token only with a proof of its key", async (t) => {
  const { as, api, issuer, resource, auth } = await servers(t, { profile: { dpop: { nonces: "none" } } });
  const now = Date.now();
  const rs = protectedResource({
    resource,
    issuer,
    scopes: ["account_info.read"],
    introspection: { endpoint: `${as.url}/oauth2/introspect`, clientId: CONF_APP, clientSecret: CONF_SECRET },
    dpop: true,
    clock: () => now,
  });
  api.fetch = async (request) => {
    const url = new URL(request.url);
    if (url.pathname === rs.metadataPath) return rs.metadata();
    const { token, response } = await rs.check(new Request(`${api.url}${url.pathname}`, request), "account_info.read");
    return response ?? Response.json({ sub: token.sub, jkt: token.cnf?.jkt ?? null });
  };
  const metadata = await (await fetch(`${api.url}${rs.metadataPath}`)).json();
  assert.deepEqual(metadata.dpop_signing_alg_values_supported, ["ES256", "RS256"]);

  // Alice's token for the resource, bound to the client's key at the exchange.
  const key = await dpopKey();
  const consent = await auth.handle({
    method: "POST",
    path: "/oauth2/authorize",
    headers: [["content-type", "application/x-www-form-urlencoded"], ["sec-fetch-site", "same-origin"]],
    body: new TextEncoder().encode(new URLSearchParams({ query: `${pkceQuery()}&resource=${encodeURIComponent(resource)}`, decision: "allow" }).toString()),
    user: ALICE,
  });
  const code = new URL(consent.headers.find(([n]) => n.toLowerCase() === "location")[1]).searchParams.get("code");
  const exchange = form({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT });
  exchange.headers.push(["DPoP", await key.proof("POST", `${as.url}/oauth2/token`)]);
  const answer = await auth.handle({ path: "/oauth2/token", ...exchange });
  assert.equal(answer.status, 200, answer.body);
  const { access_token: bound, token_type } = JSON.parse(answer.body);
  assert.equal(token_type, "DPoP");

  const url = `${api.url}/mcp/tools`;
  const call = async (headers) => fetch(url, { method: "POST", headers });
  // With a proof of its key, for this request and this token: served; the key is the token's.
  const served = await call({ authorization: `DPoP ${bound}`, dpop: await key.proof("POST", url, bound) });
  assert.equal(served.status, 200);
  assert.deepEqual(await served.json(), { sub: ALICE.account_id, jkt: key.thumbprint });
  // As a bearer token: refused, and the challenge names the DPoP algorithms.
  const asBearer = await call({ authorization: `Bearer ${bound}` });
  assert.equal(asBearer.status, 401);
  assert.match(asBearer.headers.get("www-authenticate"), /^Bearer realm="api", error="invalid_token".*, DPoP algs="ES256 RS256"$/);
  // With another key's valid proof: refused, on the DPoP challenge (the token came under it).
  const other = await dpopKey();
  const stolen = await call({ authorization: `DPoP ${bound}`, dpop: await other.proof("POST", url, bound) });
  assert.equal(stolen.status, 401);
  assert.match(stolen.headers.get("www-authenticate"), /^DPoP realm="api", error="invalid_token".*, algs="ES256 RS256"$/);
  // A proof for another URL, or another token, or made more than the window ago: invalid_dpop_proof.
  for (const proof of [
    await key.proof("POST", `${api.url}/mcp/other`, bound),
    await key.proof("POST", url, "sl.another"),
    await key.proof("GET", url, bound),
    await key.proof("POST", url, bound, Math.floor(now / 1000) - 301),
  ]) {
    const refused = await call({ authorization: `DPoP ${bound}`, dpop: proof });
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get("www-authenticate"), /^DPoP realm="api", error="invalid_dpop_proof"/);
  }
  // Under the DPoP scheme without a proof: invalid_dpop_proof too.
  assert.match((await call({ authorization: `DPoP ${bound}` })).headers.get("www-authenticate"), /error="invalid_dpop_proof"/);
  // A resource server that takes no proofs refuses a bound token outright.
  const strict = protectedResource({ resource, issuer, introspection: { endpoint: `${as.url}/oauth2/introspect`, clientId: CONF_APP, clientSecret: CONF_SECRET } });
  const checked = await strict.check(new Request(url, { method: "POST", headers: { authorization: `Bearer ${bound}` } }), "account_info.read");
  assert.equal(checked.response?.status, 401);
});

test("with a cache, a token's next calls cost no introspection for maxAge seconds — never past its exp, at most maxEntries tokens — and a revocation shows after maxAge at most; without one, every call is introspected", async (t) => {
  const { as, issuer, resource, auth } = await servers(t);
  let introspections = 0;
  const serve = as.fetch;
  as.fetch = (request) => {
    if (new URL(request.url).pathname === "/oauth2/introspect") introspections++;
    return serve(request);
  };
  let now = Date.now();
  const helper = (cache) =>
    protectedResource({ resource, issuer, introspection: { endpoint: `${as.url}/oauth2/introspect`, clientId: CONF_APP, clientSecret: CONF_SECRET }, cache, clock: () => now });
  const check = async (rs, token) => {
    const { token: served, response } = await rs.check(new Request(resource, { headers: { authorization: `Bearer ${token}` } }), "account_info.read");
    return served ? 200 : response.status;
  };
  const [alice, bob] = [await accessTokenFor(auth, [resource]), await accessTokenFor(auth, [resource])];

  // Off by default: every call asks.
  const plain = helper(undefined);
  assert.deepEqual([await check(plain, alice), await check(plain, alice)], [200, 200]);
  assert.equal(introspections, 2);

  // maxAge 60: the second call within it asks nothing; past it, the token is asked about again.
  introspections = 0;
  const cached = helper({ maxAge: 60 });
  assert.deepEqual([await check(cached, alice), await check(cached, alice)], [200, 200]);
  assert.equal(introspections, 1);
  now += 59_999;
  assert.equal(await check(cached, alice), 200);
  assert.equal(introspections, 1, "at maxAge - 1 ms: still kept");
  now += 1;
  assert.equal(await check(cached, alice), 200);
  assert.equal(introspections, 2, "at maxAge: asked again");

  // The delay it adds: revoked at the authorization server, the token is served from the cache
  // until its entry is maxAge old, then refused.
  const revoked = await auth.handle({ path: "/oauth2/revoke", ...form({ token: alice, client_id: PKCE_APP }) });
  assert.equal(revoked.status, 200);
  assert.equal(await check(cached, alice), 200, "within maxAge of its last introspection");
  now += 60_000;
  assert.equal(await check(cached, alice), 401, "after it");
  const asked = introspections;
  assert.equal(await check(cached, alice), 401);
  assert.equal(introspections, asked + 1, "a refused token is never kept");

  // Never past the token's exp, however long maxAge is.
  const long = helper({ maxAge: 86_400 });
  introspections = 0;
  assert.equal(await check(long, bob), 200);
  const { exp } = await (await serve(new Request(`${as.url}/oauth2/introspect`, { method: "POST", headers: { authorization: `Basic ${btoa(`${CONF_APP}:${CONF_SECRET}`)}`, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ token: bob }) }))).json();
  now = exp * 1000 - 1;
  assert.equal(await check(long, bob), 200);
  assert.equal(introspections, 1);
  now = exp * 1000;
  assert.equal(await check(long, bob), 401, "at exp: no longer kept, and expired");
  assert.equal(introspections, 2);

  // maxEntries: the oldest goes first.
  now = Date.now();
  const small = helper({ maxAge: 60, maxEntries: 1 });
  const carol = await accessTokenFor(auth, [resource]);
  introspections = 0;
  for (const token of [bob, carol, bob, carol]) assert.equal(await check(small, token), 200);
  assert.equal(introspections, 4, "one entry: two tokens in turn are each asked about every time");
  assert.equal(await check(small, carol), 200);
  assert.equal(introspections, 4, "the last one is kept");

  assert.throws(() => helper({ maxAge: 0 }), /cache\.maxAge must be a number of seconds above 0/);
  assert.throws(() => helper({ maxAge: 60, max_entries: 5 }), /unknown cache option max_entries/);
});
