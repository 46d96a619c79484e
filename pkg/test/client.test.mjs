// The PKCE client through the package: `createPkceClient` against `createAuthServer`, in
// process over a shared hand-moved clock, `fetch` routed to the server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { IDLE, createAuthServer, createDpopKey, createPkceClient, createPkceMachine } from "../src/node.js";
import { memoryStorage } from "../src/adapters/memory.js";
import { ALICE, GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, SERVER_KEY, config, testServer } from "./fixtures.mjs";

const ORIGIN = "http://auth.test";
const ORIGIN_REFERENCE = ORIGIN;
/** The standards profile's issuer (https: a server that binds tokens needs it). */
const ISSUER = "https://auth.test";

/**
 * The server in the standards profile at ORIGIN with `profile.dpop` as `dpop` says, on the
 * fixture's apps and API, over a hand-moved clock.
 */
function dpopServer(dpop) {
  let now = 1_700_000_000;
  const srv = createAuthServer({
    config: { ...config(), profile: { kind: "standards", issuer: `${ISSUER}/`, dpop }, server_key: SERVER_KEY },
    storage: memoryStorage(),
    clock: () => now,
    onAudit: () => {},
    hooks: { currentUser: async () => ALICE, api: { [GET_ACCOUNT]: async (principal) => Response.json({ account_id: principal.account_id }) } },
  });
  return { srv, now: () => now, advance: (s) => (now += s) };
}

/** A client of the fixture's server (or `served`'s), binding its tokens to `dpop` if given. */
function world(accessType, { served = testServer(), dpop, origin: ORIGIN = ORIGIN_REFERENCE } = {}) {
  const { srv: server, now, advance } = served;
  const exchanges = [];
  const client = createPkceClient(
    {
      client_id: PKCE_APP,
      authorize_url: `${ORIGIN}/oauth2/authorize`,
      token_url: `${ORIGIN}/oauth2/token`,
      revoke_url: `${ORIGIN}/2/auth/token/revoke`,
      redirect_uri: PKCE_REDIRECT,
      scopes: ["account_info.read"],
      access_type: accessType,
    },
    { clock: now, fetch: (input, init) => server.fetch(new Request(input, init)), onExchange: (request, response) => exchanges.push([request, response]), dpop },
  );
  /** Plays the browser: consent to the authorization URL, return the redirect. */
  async function consent(url, decision = "allow") {
    const query = new URL(url).search.slice(1);
    const body = new URLSearchParams({ query, decision });
    const answer = await server.fetch(new Request(`${ORIGIN}/oauth2/authorize`, { method: "POST", headers: { origin: ORIGIN }, body }));
    assert.equal(answer.status, 302);
    return answer.headers.get("location");
  }
  return { client, consent, exchanges, advance, server };
}

async function signIn({ client, consent }) {
  const begun = client.step(IDLE, { kind: "begin" });
  assert.equal(begun.step.step, "navigate");
  const done = await client.run(begun.state, { kind: "redirected", url: await consent(begun.step.url) });
  assert.equal(done.step.step, "authorized", JSON.stringify(done.step));
  return done;
}

test("offline: sign in, call, refresh when due, revoke, and the 401 after", async () => {
  const w = world("offline");
  let { state, step } = await signIn(w);
  assert.equal(step.session.account_id, ALICE.account_id);
  assert.equal(step.session.expires_at, 1_700_000_000 + 14_400);
  assert.equal(typeof state.session.refresh_token, "string");
  let called = await w.client.call(state, `${ORIGIN}${GET_ACCOUNT}`);
  assert.equal(called.response.status, 200);
  w.advance(14_400 - 300);
  called = await w.client.call(called.state, `${ORIGIN}${GET_ACCOUNT}`);
  assert.equal(called.response?.status, 200, JSON.stringify(called));
  assert.deepEqual(
    w.exchanges.map(([request, response]) => [new URLSearchParams(request.body).get("grant_type"), response.status]),
    [["authorization_code", 200], ["refresh_token", 200]],
  );
  const old = state.session.access_token;
  assert.notEqual(called.state.session.access_token, old);
  const revoked = await w.client.run(called.state, { kind: "revoke" });
  assert.deepEqual(revoked, { state: IDLE, step: { step: "signed_out" } });
  const afterRevoke = await w.client.call(called.state, `${ORIGIN}${GET_ACCOUNT}`);
  assert.equal(afterRevoke.step.step, "reauthorize", "the revoked session's 401 leads to a refused refresh, then to authorization");
});

test("online: the token ends at expiry and the client says to authorize again", async () => {
  const w = world("online");
  const { state } = await signIn(w);
  assert.equal(state.session.refresh_token, null);
  w.advance(14_399);
  assert.equal((await w.client.call(state, `${ORIGIN}${GET_ACCOUNT}`)).response.status, 200);
  w.advance(1);
  const ended = await w.client.call(state, `${ORIGIN}${GET_ACCOUNT}`);
  assert.equal(ended.step.step, "reauthorize");
  assert.deepEqual(ended.state, IDLE);
});

test("a forged redirect changes nothing; a denial surfaces access_denied", async () => {
  const w = world("offline");
  const begun = w.client.step(IDLE, { kind: "begin" });
  const forged = w.client.step(begun.state, { kind: "redirected", url: `${PKCE_REDIRECT}?code=x&state=forged` });
  assert.deepEqual(forged, { state: begun.state, step: { step: "failed", error: { kind: "state_mismatch" } } });
  const denied = w.client.step(begun.state, { kind: "redirected", url: await w.consent(begun.step.url, "deny") });
  assert.equal(denied.step.error.kind, "authorization_refused");
  assert.equal(denied.step.error.error, "access_denied");
});

test("the machine is pure, and malformed arguments throw real Errors", () => {
  const machine = createPkceMachine({ client_id: "a", authorize_url: "https://a.test/x", token_url: "https://a.test/t", revoke_url: "https://a.test/r", access_type: "offline" });
  const entropy = new Uint8Array(48).fill(9);
  const one = machine.handle(IDLE, { kind: "begin" }, 1_700_000_000n, entropy);
  assert.deepEqual(machine.handle(IDLE, { kind: "begin" }, 1_700_000_000, entropy), one);
  assert.throws(() => machine.handle(IDLE, { kind: "begin" }, 1, new Uint8Array(47)), (e) => e instanceof Error && /48 bytes/.test(e.message));
  assert.throws(() => machine.handle({ phase: "nowhere" }, { kind: "begin" }, 1, entropy), Error);
  assert.throws(() => createPkceMachine({ client_id: "", authorize_url: "x", token_url: "x", revoke_url: "x", access_type: "offline" }), Error);
});

test("DPoP: tokens bound to a key WebCrypto will not export, each nonce met, calls and the revocation proven", async () => {
  const key = await createDpopKey();
  assert.equal(key.privateKey.extractable, false, "the private half stays inside WebCrypto");
  const w = world("offline", { served: dpopServer({ nonces: "everywhere" }), dpop: key, origin: ISSUER });
  const begun = w.client.step(IDLE, { kind: "begin" });
  assert.match(begun.step.url, /&dpop_jkt=[\w-]{43}$/);
  const done = await w.client.run(begun.state, { kind: "redirected", url: await w.consent(begun.step.url) });
  assert.equal(done.step.step, "authorized", JSON.stringify(done.step));
  assert.equal(done.step.session.bound, true);
  const grants = () => w.exchanges.map(([request, response]) => [new URLSearchParams(request.body).get("grant_type"), response.status, request.headers.some(([name]) => name === "DPoP")]);
  // The first exchange is told to use the server's nonce; the second, with it, is taken.
  assert.deepEqual(grants(), [["authorization_code", 400, true], ["authorization_code", 200, true]]);

  // The API asks for its nonce too: the call is made again with it, and served.
  const url = `${ISSUER}${GET_ACCOUNT}`;
  let called = await w.client.call(done.state, url);
  assert.equal(called.response?.status, 200, JSON.stringify(called));
  assert.deepEqual(await called.response.json(), { account_id: ALICE.account_id });
  assert.equal(typeof called.state.session.api_nonce, "string");
  // The bound token is nothing as a bearer token.
  const token = called.state.session.access_token;
  const bearer = await w.server.fetch(new Request(url, { method: "POST", headers: { Authorization: `Bearer ${token}` } }));
  assert.equal(bearer.status, 401);
  assert.match(bearer.headers.get("WWW-Authenticate"), /^Bearer [^]*error="invalid_token"[^]*, DPoP algs="ES256 RS256"$/);

  // Four hours on: the refresh goes with a proof; both nonces have aged out and are met again.
  w.advance(14_400 - 300);
  called = await w.client.call(called.state, url);
  assert.equal(called.response?.status, 200, JSON.stringify(called));
  assert.deepEqual(grants().slice(2), [["refresh_token", 400, true], ["refresh_token", 200, true]]);
  assert.notEqual(called.state.session.access_token, token);

  const revoked = await w.client.run(called.state, { kind: "revoke" });
  assert.deepEqual(revoked, { state: IDLE, step: { step: "signed_out" } });
  const [request, response] = w.exchanges.at(-1);
  assert.equal(response.status, 200);
  assert.ok(request.headers.some(([name, value]) => name === "Authorization" && value.startsWith("DPoP ")));
});
