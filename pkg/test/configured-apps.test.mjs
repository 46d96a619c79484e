// The server's module for configured apps only (edgegrant/node/configured-apps and
// edgegrant/workers/configured-apps): the same server for the apps a configuration names — the
// whole conformance corpus but what needs clients that arrive unannounced holds on it
// (conformance/runners/package-configured-apps.test.mjs) — and a configuration naming
// `profile.clients` refused with the reason, in Node and in workerd.
//
// First import: it instantiates the module of this process (the fixtures' edgegrant/node, loaded
// after it, finds a module there and keeps it).
import { checkConfig, createAuthServer } from "../src/node-configured-apps.js";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { memoryStorage } from "../src/adapters/memory.js";
import { ALICE, GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, VERIFIER, config, pkceQuery, standardsConfig } from "./fixtures.mjs";

/** The standards profile letting clients register themselves (RFC 7591). */
const withUnannouncedClients = () => ({
  ...standardsConfig(),
  profile: { kind: "standards", issuer: "https://auth.example", clients: { scopes: ["account_info.read"], registration: {} } },
});
const REFUSAL = /^invalid configuration: profile\.clients: this build has no clients that arrive unannounced/;

test("the module for configured apps refuses a configuration that lets clients arrive unannounced, and takes the rest", () => {
  const answer = checkConfig(withUnannouncedClients());
  assert.equal(answer.tag, "invalid");
  assert.match(answer.content, REFUSAL);
  assert.throws(() => createAuthServer({ config: withUnannouncedClients(), storage: memoryStorage() }), (error) => REFUSAL.test(error.message.replace(/^edgegrant: /, "")));
  assert.deepEqual(checkConfig(standardsConfig()), { tag: "ok" });
  assert.deepEqual(checkConfig(config()), { tag: "ok" });
});

test("the module for configured apps refuses identity providers' assertions (ID-JAG), which only the whole module checks", () => {
  const providers = [{ issuer: "https://idp.example", jwks: { keys: [] }, accounts: {} }];
  const answer = checkConfig({ ...standardsConfig(), profile: { kind: "standards", issuer: "https://auth.example", identity_assertions: { providers } } });
  assert.equal(answer.tag, "invalid");
  assert.match(answer.content, /^invalid configuration: profile\.identity_assertions: this build has no clients that arrive unannounced and checks no signed assertion/);
});

test("the module for configured apps refuses DPoP, whose proofs only the whole module verifies", () => {
  const answer = checkConfig({ ...standardsConfig(), profile: { kind: "standards", issuer: "https://auth.example", dpop: {} } });
  assert.equal(answer.tag, "invalid");
  assert.match(answer.content, /^invalid configuration: profile\.dpop: this build has no clients that arrive unannounced and checks no signed assertion/);
});

test("the module for configured apps is the smaller one the package ships", () => {
  const gzipped = (name) => gzipSync(readFileSync(new URL(`../dist/${name}_bg.wasm`, import.meta.url)), { level: 9 }).length;
  const [whole, configured] = [gzipped("edgegrant_wasm"), gzipped("edgegrant_configured_apps")];
  assert.ok(configured < whole - 10 * 1024, `configured apps ${configured} bytes gzipped, the whole module ${whole}`);
});

const ORIGIN = "http://auth.test";
const mf = new Miniflare({
  modules: true,
  scriptPath: fileURLToPath(new URL("./workerd-configured-apps.js", import.meta.url)),
  modulesRoot: fileURLToPath(new URL("../", import.meta.url)),
  modulesRules: [
    { type: "ESModule", include: ["**/*.js"] },
    { type: "CompiledWasm", include: ["**/*.wasm"] },
  ],
  bindings: { CONFIG: JSON.stringify(standardsConfig()) },
});
after(() => mf.dispose());

test("in workerd, edgegrant/workers/configured-apps serves the PKCE offline flow and refuses profile.clients", async () => {
  const signedIn = { "x-test-user": JSON.stringify(ALICE) };
  const post = (path, body, headers = {}) =>
    mf.dispatchFetch(`${ORIGIN}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(body).toString(), redirect: "manual" });
  const consentPage = await mf.dispatchFetch(`${ORIGIN}/oauth2/authorize?${pkceQuery("c")}`, { headers: signedIn });
  assert.equal(consentPage.status, 200);
  const formQuery = (await consentPage.text()).match(/name="query" value="([^"]*)"/)[1].replaceAll("&amp;", "&");
  const redirect = await post("/oauth2/authorize", { query: formQuery, decision: "allow" }, { ...signedIn, "sec-fetch-site": "same-origin" });
  assert.equal(redirect.status, 302);
  const code = new URL(redirect.headers.get("location")).searchParams.get("code");
  const issued = await post("/oauth2/token", { grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT });
  assert.equal(issued.status, 200);
  const tokens = await issued.json();
  assert.ok(tokens.refresh_token, "offline access");
  const call = await mf.dispatchFetch(`${ORIGIN}${GET_ACCOUNT}`, { method: "POST", headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.deepEqual(await call.json(), { account_id: ALICE.account_id });
  // The metadata offers no registration, and the registration endpoint is not there.
  const metadata = await (await mf.dispatchFetch(`${ORIGIN}/.well-known/oauth-authorization-server`)).json();
  assert.equal(metadata.registration_endpoint, undefined);
  assert.equal((await mf.dispatchFetch(`${ORIGIN}/oauth2/register`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status, 404);
  const check = await (await mf.dispatchFetch(`${ORIGIN}/check`, { method: "POST", body: JSON.stringify(withUnannouncedClients()) })).json();
  assert.equal(check.tag, "invalid");
  assert.match(check.content, REFUSAL);
});
