// DPoP end to end (RFC 9449, issue 49) with published clients, unmodified: oauth4webapi and
// openid-client, each with a key pair of its own, against the Node and the Worker hosts in the
// standards profile with `profile.dpop` on (nonces at the token endpoint). The code is bound to
// the key (`dpop_jkt`); the exchange meets `use_dpop_nonce` once and retries with the nonce the
// server handed out; the tokens come back `token_type: DPoP`; the API serves the bound token
// with a proof and refuses it as a bearer token; the public client's refresh token works only
// with a proof of its key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as oauth from "oauth4webapi";
import * as client from "openid-client";
import { freePort } from "../../examples/worker/dev.mjs";
import { ALICE, REDIRECT, SERVER_KEY, apps, browse, root } from "./interop.mjs";

/** The host's sample configuration in the standards profile with DPoP on. */
function dpopConfig(sample, port, dir) {
  const doc = JSON.parse(readFileSync(sample, "utf8"));
  const path = join(dir, "config.json");
  const origin = `http://127.0.0.1:${port}`;
  const resource_servers = [{ app: apps[1].clientId, resources: [origin] }];
  writeFileSync(path, JSON.stringify({ ...doc, profile: { kind: "standards", issuer: `${origin}/`, resource_servers, dpop: {} }, server_key: SERVER_KEY }));
  return path;
}

const hosts = {
  node: async (port, dir) => {
    const { startServer } = await import(pathToFileURL(join(root, "examples/node/server.mjs")).href);
    return startServer(dpopConfig(join(root, "examples/node/config.sample.json"), port, dir), { port, allowSampleSecret: true, onAudit: () => {} });
  },
  worker: async (port, dir) => {
    const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
    return startWorker({ configPath: dpopConfig(join(root, "examples/worker/config.sample.json"), port, dir), port, persistTo: join(dir, "state"), allowSampleSecret: true });
  },
};

const insecure = { [oauth.allowInsecureRequests]: true }; // the hosts run on http://127.0.0.1
const [publicApp, confidentialApp] = apps;
const API = "/2/users/get_current_account";

/** `request()` again once, when its answer is a DPoP nonce error (oauth4webapi leaves that to us). */
async function withNonceRetry(request) {
  try {
    return await request();
  } catch (error) {
    if (!oauth.isDPoPNonceError(error)) throw error;
    return request();
  }
}

/** Alice's consent to `parameters` of the public app: the redirect's URL. */
async function consent(as, port, parameters) {
  const authorize = new URL(as.authorization_endpoint);
  for (const [k, v] of Object.entries({ client_id: publicApp.clientId, redirect_uri: REDIRECT, response_type: "code", token_access_type: "offline", ...parameters })) {
    authorize.searchParams.set(k, v);
  }
  const { redirect } = await browse(authorize.href, `http://127.0.0.1:${port}`, ALICE);
  return new URL(redirect);
}

for (const [name, start] of Object.entries(hosts)) {
  test(`DPoP against the ${name} host: oauth4webapi and openid-client bind the code, the tokens and the refresh token to their keys`, { timeout: 10 * 60_000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), `edgegrant-dpop-${name}-`));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort("127.0.0.1");
    const host = await start(port, dir);
    t.after(() => host.close());
    const issuer = new URL(`http://127.0.0.1:${port}/`);
    const api = new URL(API, issuer);

    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
    assert.deepEqual(as.dpop_signing_alg_values_supported, ["ES256", "RS256"]);
    const resource = await oauth.processResourceDiscoveryResponse(issuer, await oauth.resourceDiscoveryRequest(issuer, insecure));
    assert.deepEqual(resource.dpop_signing_alg_values_supported, ["ES256", "RS256"]);

    await t.test("oauth4webapi", async () => {
      const app = { client_id: publicApp.clientId };
      const keys = await oauth.generateKeyPair("ES256");
      const DPoP = oauth.DPoP(app, keys);
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const redirect = await consent(as, port, {
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
        dpop_jkt: await DPoP.calculateThumbprint(),
      });
      const params = oauth.validateAuthResponse(as, app, redirect, state);
      // The first exchange meets use_dpop_nonce; the handle keeps the nonce for the retry.
      let nonceErrors = 0;
      const tokens = await withNonceRetry(async () => {
        try {
          const response = await oauth.authorizationCodeGrantRequest(as, app, oauth.None(), params, REDIRECT, verifier, { DPoP, ...insecure });
          return await oauth.processAuthorizationCodeResponse(as, app, response);
        } catch (error) {
          if (oauth.isDPoPNonceError(error)) nonceErrors += 1;
          throw error;
        }
      });
      assert.equal(nonceErrors, 1, "one use_dpop_nonce, then the nonce");
      assert.equal(tokens.token_type, "dpop");
      assert.ok(tokens.refresh_token);

      // The bound token at the API: with a proof of the key; never as a bearer token.
      const served = await oauth.protectedResourceRequest(tokens.access_token, "POST", api, new Headers(), null, { DPoP, ...insecure });
      assert.equal(served.status, 200, await served.clone().text());
      assert.equal((await served.json()).account_id, ALICE.account_id);
      const asBearer = await fetch(api, { method: "POST", headers: { authorization: `Bearer ${tokens.access_token}` } });
      assert.equal(asBearer.status, 401);
      assert.match(asBearer.headers.get("www-authenticate"), /error="invalid_token".*DPoP algs="ES256 RS256"/);
      // With another key's proof: refused too.
      const otherKey = oauth.DPoP(app, await oauth.generateKeyPair("ES256"));
      const stolen = await oauth
        .protectedResourceRequest(tokens.access_token, "POST", api, new Headers(), null, { DPoP: otherKey, ...insecure })
        .then((response) => response.status, (error) => error.status ?? error.response?.status ?? error);
      assert.equal(stolen, 401);

      // The public client's refresh token: with the key, a new bound token; without it, refused.
      const refreshed = await withNonceRetry(async () =>
        oauth.processRefreshTokenResponse(as, app, await oauth.refreshTokenGrantRequest(as, app, oauth.None(), tokens.refresh_token, { DPoP, ...insecure })),
      );
      assert.equal(refreshed.token_type, "dpop");
      const bare = await oauth.refreshTokenGrantRequest(as, app, oauth.None(), refreshed.refresh_token, insecure);
      assert.equal(bare.status, 400);
      assert.equal((await bare.json()).error, "invalid_grant");
      // (Its first try meets use_dpop_nonce: the other handle has no nonce yet; it keeps the
      // one that answer carries.)
      const otherRefresh = () => oauth.refreshTokenGrantRequest(as, app, oauth.None(), refreshed.refresh_token, { DPoP: otherKey, ...insecure });
      let withOtherKey = await otherRefresh();
      if ((await withOtherKey.clone().json()).error === "use_dpop_nonce") withOtherKey = await otherRefresh();
      assert.equal(withOtherKey.status, 400);
      assert.equal((await withOtherKey.json()).error, "invalid_grant");

      // The resource server sees the binding (RFC 9449 §6.2).
      const server = { client_id: confidentialApp.clientId };
      const introspected = await oauth.processIntrospectionResponse(
        as,
        server,
        await oauth.introspectionRequest(as, server, oauth.ClientSecretBasic(confidentialApp.clientSecret), refreshed.access_token, insecure),
      );
      assert.equal(introspected.active, true);
      assert.equal(introspected.token_type, "DPoP");
      assert.equal(introspected.cnf.jkt, await DPoP.calculateThumbprint());
    });

    await t.test("openid-client", async () => {
      const config = await client.discovery(issuer, publicApp.clientId, undefined, client.None(), { algorithm: "oauth2", execute: [client.allowInsecureRequests] });
      const keys = await client.randomDPoPKeyPair("ES256");
      const DPoP = client.getDPoPHandle(config, keys);
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const redirect = await consent(as, port, {
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
      });
      // openid-client retries use_dpop_nonce by itself.
      const tokens = await client.authorizationCodeGrant(config, redirect, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP });
      assert.equal(tokens.token_type, "dpop");
      const served = await client.fetchProtectedResource(config, tokens.access_token, api, "POST", undefined, undefined, { DPoP });
      assert.equal(served.status, 200);
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP });
      assert.equal(refreshed.token_type, "dpop");
      const asBearer = await fetch(api, { method: "POST", headers: { authorization: `Bearer ${refreshed.access_token}` } });
      assert.equal(asBearer.status, 401);
    });
  });
}
