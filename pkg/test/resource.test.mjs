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

test("an API on another host serves only live tokens issued for it, with the scope, and points clients to its authorization server", async (t) => {
  const as = await listen(t);
  const api = await listen(t);
  const issuer = `${as.url}/`;
  const resource = `${api.url}/mcp`;
  const auth = createAuthServer({
    // The API's own origin is a resource too, listed without a trailing slash. The API
    // introspects as the confidential app: its resource server (RFC 7662 §4).
    config: {
      ...config(),
      profile: { kind: "standards", issuer, resources: [resource, api.url], resource_servers: [{ app: CONF_APP, resources: [resource, api.url] }] },
      server_key: SERVER_KEY,
    },
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

  /** Alice's consent to `query`: the code. */
  async function codeFor(query) {
    const consent = await auth.handle({
      method: "POST",
      path: "/oauth2/authorize",
      headers: [["content-type", "application/x-www-form-urlencoded"], ["sec-fetch-site", "same-origin"]],
      body: new TextEncoder().encode(new URLSearchParams({ query, decision: "allow" }).toString()),
      user: ALICE,
    });
    return new URL(consent.headers.find(([n]) => n.toLowerCase() === "location")[1]).searchParams.get("code");
  }
  /** A token for alice from the PKCE app, naming `resources`. */
  async function tokenFor(resources) {
    const code = await codeFor(`${pkceQuery()}${resources.map((r) => `&resource=${encodeURIComponent(r)}`).join("")}`);
    const exchange = await auth.handle({ path: "/oauth2/token", ...form({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }) });
    assert.equal(exchange.status, 200, exchange.body);
    return JSON.parse(exchange.body).access_token;
  }
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
