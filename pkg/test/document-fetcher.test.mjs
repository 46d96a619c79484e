// Which fetcher each entry point uses for client metadata documents by default. On Node every
// entry point that can fetch — the package root's createAuthServer and runRequest (resolved by
// package.json's "node" condition, imported here by the package's own name) and edgegrant/node's —
// must use the one that checks the addresses a name resolves to; the web fetch (./documents.js),
// the default elsewhere, refuses a configuration that takes documents from any host unless the
// operator opts out by name.
//
// A name that resolves to loopback: this machine has no resolver that maps a dotted name there
// (it is offline, and /etc/hosts names only single labels, which the URL guard refuses before
// any lookup). So `dns.lookup`, the system resolver both Node's fetch and node:https call, answers
// 127.0.0.1 for one name, `docs.example`, and passes every other name on; a plain TCP server on
// 127.0.0.1 counts the connections that reach it. The control below shows that the web fetch,
// given the same name, does connect: what the entry points are tested for is that they do not.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import dns from "node:dns";
import { syncBuiltinESMExports } from "node:module";
import { createServer as createTcpServer } from "node:net";
import * as node from "edgegrant/node";
import * as root from "edgegrant";
import * as web from "../src/index.js";
import { memoryStorage } from "../src/adapters/memory.js";
import { ALICE, CHALLENGE, standardsConfig } from "./fixtures.mjs";

const NAME = "docs.example";
let port;
let connections = 0;
const lookups = [];
const sockets = [];
let tcp;
const systemLookup = dns.lookup;

before(async () => {
  tcp = createTcpServer((socket) => {
    connections++;
    sockets.push(socket);
    socket.destroy();
  });
  await new Promise((resolve) => tcp.listen(0, "127.0.0.1", resolve));
  port = tcp.address().port;
  dns.lookup = function lookup(hostname, options, callback) {
    if (typeof options === "function") [options, callback] = [{}, options];
    if (hostname !== NAME) return systemLookup.call(this, hostname, options, callback);
    lookups.push(hostname);
    const all = typeof options === "object" && options?.all;
    process.nextTick(() => (all ? callback(null, [{ address: "127.0.0.1", family: 4 }]) : callback(null, "127.0.0.1", 4)));
  };
  // The ESM bindings of node:dns (documents-node.js imports `lookup` by name) follow the change.
  syncBuiltinESMExports();
});

after(async () => {
  dns.lookup = systemLookup;
  syncBuiltinESMExports();
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => tcp.close(resolve));
});

/** The standards fixture taking clients by metadata document from any host. */
const anyHostConfig = () => {
  const config = standardsConfig();
  return { ...config, profile: { ...config.profile, clients: { scopes: ["account_info.read"], documents: {} } } };
};

/** A signed-in user's authorization request for the client named by the document on `docs.example`: the core asks for the document. */
const authorization = () => ({
  method: "GET",
  path: "/oauth2/authorize",
  query: new URLSearchParams({
    client_id: `https://${NAME}:${port}/client.json`,
    response_type: "code",
    redirect_uri: "http://127.0.0.1:33418/callback",
    state: "s",
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
    scope: "account_info.read",
  }).toString(),
  headers: [],
  user: ALICE,
  source: "203.0.113.9",
});

/** What a fetch of the document through `run` did: the lookups of the name and the connections that reached 127.0.0.1. */
async function attempt(run) {
  const before = { connections, lookups: lookups.length };
  const reply = await run();
  await new Promise((resolve) => setTimeout(resolve, 50)); // a connection would have arrived by now
  return { reply, lookups: lookups.length - before.lookups, connections: connections - before.connections };
}

/** Through runRequest of `entry`, with `options` (none: the entry's default fetcher). */
const viaRunRequest = (entry, options) => () => {
  const core = entry.createCore(anyHostConfig());
  const request = core.request(authorization(), 1_700_000_000, crypto.getRandomValues(new Uint8Array(entry.entropyLength())));
  return entry.runRequest(request, memoryStorage(), options);
};

/** Through createAuthServer of `entry` (`handle`, the plain-value entry). */
const viaServer = (entry, options = {}) => () => {
  const server = entry.createAuthServer({ config: anyHostConfig(), storage: memoryStorage(), clock: () => 1_700_000_000, ...options });
  const { path, query, ...rest } = authorization();
  return server.handle({ ...rest, url: `${path}?${query}` });
};

test("control: the web fetch, given a name that resolves to loopback, connects there", async () => {
  const { reply, lookups: looked, connections: reached } = await attempt(viaRunRequest(root, { fetchDocument: web.fetchDocument }));
  assert.equal(reply.kind, "reply");
  assert.ok(looked >= 1, "the name was looked up");
  assert.ok(reached >= 1, "the web fetch reached 127.0.0.1: the check below is not vacuous");
});

for (const [name, entry] of [
  ["the package root (edgegrant, Node's condition)", root],
  ["edgegrant/node", node],
]) {
  test(`${name}: runRequest checks the addresses a name resolves to by default (resolved, refused, never connected)`, async () => {
    const { reply, lookups: looked, connections: reached } = await attempt(viaRunRequest(entry));
    assert.equal(reply.kind, "reply");
    assert.ok(reply.status < 500, `answered ${reply.status}`);
    assert.equal(looked, 1, "the name was looked up once");
    assert.equal(reached, 0, "no connection to the loopback address");
  });

  test(`${name}: createAuthServer checks the addresses a name resolves to by default, and takes documents from any host without the opt-out`, async () => {
    const { reply, lookups: looked, connections: reached } = await attempt(viaServer(entry));
    assert.equal(reply.kind, "reply");
    assert.ok(reply.status < 500, `answered ${reply.status}`);
    assert.equal(looked, 1, "the name was looked up once");
    assert.equal(reached, 0, "no connection to the loopback address");
  });
}

test("the package root on Node is its own module, with the same names as the web root", () => {
  assert.notEqual(root.createAuthServer, web.createAuthServer);
  assert.notEqual(root.runRequest, web.runRequest);
  assert.deepEqual(Object.keys(root).sort(), Object.keys(web).sort());
});

// The web root, as workerd and browsers resolve it (workers.test.mjs runs the same under workerd).
test("the web fetch refuses documents from any host unless the operator opts out by name", async () => {
  const create = (config, options = {}) => web.createAuthServer({ config, storage: memoryStorage(), ...options });
  assert.throws(() => create(anyHostConfig()), /profile\.clients\.documents is on for any host.*anyDocumentHostWithoutAddressCheck: true/s);
  const emptyHosts = anyHostConfig();
  emptyHosts.profile.clients.documents = { hosts: [] };
  assert.throws(() => create(emptyHosts), /anyDocumentHostWithoutAddressCheck/, "an empty list is any host");
  // Each way out: a list of hosts, the opt-out by name, a fetcher of the host's own.
  const listed = anyHostConfig();
  listed.profile.clients.documents = { hosts: ["*.example"] };
  create(listed);
  create(anyHostConfig(), { anyDocumentHostWithoutAddressCheck: true });
  create(anyHostConfig(), { fetchDocument: async () => ({ failed: "unreachable" }) });
  assert.throws(() => create(anyHostConfig(), { anyDocumentHostWithoutAddressCheck: false }), /anyDocumentHostWithoutAddressCheck/);
  assert.throws(() => create(anyHostConfig(), { anyDocumentHostWithoutAddressCheck: "yes" }), /must be true or false/);
  // Without documents there is nothing to fetch, and nothing to refuse.
  create(standardsConfig());

  // Opted out, it fetches as before (the URL guard only): the name's loopback address is reached.
  const { connections: reached } = await attempt(viaServer(web, { anyDocumentHostWithoutAddressCheck: true }));
  assert.ok(reached >= 1);
});
