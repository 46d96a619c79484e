// Interop with a published standards-based client library: openid-client (npm, built on
// oauth4webapi), configured from the authorization server metadata alone (RFC 8414): the PKCE
// code flow of a public app with the `iss` of the authorization response checked (RFC 9207), a
// call to the API, refreshes — rotating for the public app (RFC 9700 §4.14.2: a new refresh
// token each time, a retry within the window answered alike, a superseded token presented later
// ends the grant) and not for the confidential one — introspection (RFC 7662) and revocation
// (RFC 7009); unmodified, against the three hosts in the standards profile. Nothing is given to
// it but the issuer URL and its client credentials.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import * as client from "openid-client";
import { freePort } from "../../examples/worker/dev.mjs";
import { ALICE, REDIRECT, SERVER_KEY, apps, browse, root, step } from "./interop.mjs";

/** The host's sample configuration in the standards profile, issuer http://127.0.0.1:<port>/, with `profile` added. */
function standardsConfig(sample, port, dir, profile) {
  const doc = JSON.parse(readFileSync(sample, "utf8"));
  const path = join(dir, "config.json");
  writeFileSync(path, JSON.stringify({ ...doc, profile: { kind: "standards", issuer: `http://127.0.0.1:${port}/`, ...profile }, server_key: SERVER_KEY }));
  return path;
}

const nodeSample = join(root, "examples/node/config.sample.json");
const hosts = {
  node: async (port, dir, profile) => {
    const { startServer } = await import(pathToFileURL(join(root, "examples/node/server.mjs")).href);
    return startServer(standardsConfig(nodeSample, port, dir, profile), { port, allowSampleSecret: true, onAudit: () => {} });
  },
  native: async (port, dir, profile) => {
    const { startNative } = await import(pathToFileURL(join(root, "examples/native/start.mjs")).href);
    return startNative(standardsConfig(nodeSample, port, dir, profile), { port, allowSampleSecret: true });
  },
  worker: async (port, dir, profile) => {
    const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
    const config = standardsConfig(join(root, "examples/worker/config.sample.json"), port, dir, profile);
    return startWorker({ configPath: config, port, persistTo: join(dir, "state"), allowSampleSecret: true });
  },
};

const [publicApp, confidentialApp] = apps;
// The hosts run on http://127.0.0.1; their metadata is at the RFC 8414 well-known path, not OIDC's.
const discoveryOptions = { algorithm: "oauth2", execute: [client.allowInsecureRequests] };

/** Starts the host on a free port with `profile` added to the standards profile; resolves its issuer URL. */
async function serve(t, start, dir, profile = {}) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort("127.0.0.1"); // the issuer names it before the host starts
  const host = await start(port, dir, profile);
  t.after(() => host.close());
  return new URL(`http://127.0.0.1:${port}/`);
}

/** The client's configuration, from the issuer's metadata: public (no secret) or confidential (client_secret_basic). */
const discover = (issuer, app) =>
  app.clientSecret
    ? client.discovery(issuer, app.clientId, app.clientSecret, client.ClientSecretBasic(), discoveryOptions)
    : client.discovery(issuer, app.clientId, undefined, client.None(), discoveryOptions);

/** The code flow with PKCE, the browser playing the user: resolves the callback URL the app receives, and its checks. */
async function authorize(config, issuer, parameters = {}) {
  const pkceCodeVerifier = client.randomPKCECodeVerifier();
  const expectedState = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: "S256",
    state: expectedState,
    token_access_type: "offline",
    ...parameters,
  });
  assert.equal(url.origin, issuer.origin);
  const { redirect } = await browse(url.href, issuer.origin, ALICE);
  return { callback: new URL(redirect), checks: { pkceCodeVerifier, expectedState } };
}

/** Signs Alice in and exchanges the code: resolves the token response. */
async function signIn(config, issuer, parameters) {
  const { callback, checks } = await authorize(config, issuer, parameters);
  return client.authorizationCodeGrant(config, callback, checks);
}

const account = (config, issuer, token) =>
  client.fetchProtectedResource(config, token, new URL("/2/users/get_current_account", issuer), "POST");

/** What `promise` was rejected with (fails if it was not). */
const rejection = (promise) =>
  promise.then(
    (value) => assert.fail(`expected a refusal, got ${JSON.stringify(value)}`),
    (error) => error,
  );

/** The API refuses `token`: a 401 with a Bearer challenge. */
async function assertRefusedByApi(config, issuer, token) {
  const error = await rejection(account(config, issuer, token));
  assert.ok(error instanceof client.WWWAuthenticateChallengeError, String(error));
  assert.equal(error.status, 401);
}

/** The token endpoint refuses the refresh token with invalid_grant. */
async function assertRefreshRefused(config, refreshToken) {
  const error = await rejection(client.refreshTokenGrant(config, refreshToken));
  assert.ok(error instanceof client.ResponseBodyError, String(error));
  assert.equal(error.error, "invalid_grant");
}

for (const [name, start] of Object.entries(hosts)) {
  test(`openid-client against the ${name} host: discovery, PKCE code flow with iss checked, API, refresh rotation, introspection, revocation`, { timeout: 20 * 60_000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), `edgegrant-openid-client-${name}-`));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const issuer = await serve(t, start, join(dir, "host")); // rotation as by default: a 60 s retry window

    const publicConfig = (
      await step(t, "discovery from the issuer alone", async () => {
        const config = await discover(issuer, publicApp);
        const as = config.serverMetadata();
        assert.equal(as.issuer, issuer.href);
        assert.equal(as.authorization_response_iss_parameter_supported, true);
        assert.ok(as.revocation_endpoint && as.introspection_endpoint, JSON.stringify(as));
        return config;
      })
    )?.value;
    if (!publicConfig) return;

    const first = (
      await step(t, "public app: PKCE code flow (a forged iss refused), then the API", async () => {
        const { callback, checks } = await authorize(publicConfig, issuer);
        // openid-client checks iss against the discovered issuer (RFC 9207) before it spends the code.
        const forged = new URL(callback);
        forged.searchParams.set("iss", "https://evil.example/");
        const refused = await rejection(client.authorizationCodeGrant(publicConfig, forged, checks));
        assert.match(String(refused.cause?.message), /unexpected "iss" \(issuer\)/, String(refused));
        const tokens = await client.authorizationCodeGrant(publicConfig, callback, checks);
        assert.equal(tokens.token_type, "bearer");
        assert.ok(tokens.refresh_token, "offline access");
        const response = await account(publicConfig, issuer, tokens.access_token);
        assert.equal(response.status, 200);
        assert.equal((await response.json()).account_id, ALICE.account_id);
        return tokens;
      })
    )?.value;

    if (first) {
      await step(t, "public app: a refresh rotates the refresh token; a retry within the window gets the same answer", async () => {
        const refreshed = await client.refreshTokenGrant(publicConfig, first.refresh_token);
        assert.ok(refreshed.refresh_token, "a rotating refresh returns a refresh token");
        assert.notEqual(refreshed.refresh_token, first.refresh_token, "the refresh token rotates");
        // The answer was lost, say: the old token again, before the new one is used, within the window.
        const retried = await client.refreshTokenGrant(publicConfig, first.refresh_token);
        assert.deepEqual(
          { access_token: retried.access_token, refresh_token: retried.refresh_token },
          { access_token: refreshed.access_token, refresh_token: refreshed.refresh_token },
          "a retry within the window gets the same tokens",
        );
        const response = await account(publicConfig, issuer, refreshed.access_token);
        assert.equal(response.status, 200);
        // The new token is the one that works from now on, and rotates in turn.
        const next = await client.refreshTokenGrant(publicConfig, refreshed.refresh_token);
        assert.ok(next.refresh_token && next.refresh_token !== refreshed.refresh_token, "the new refresh token rotates in turn");
      });
    }

    await step(t, "confidential app (client_secret_basic): code flow, refresh without rotation, introspection, revocation", async () => {
      const config = await discover(issuer, confidentialApp);
      assert.ok(config.serverMetadata().token_endpoint_auth_methods_supported?.includes("client_secret_basic"));
      const scope = "account_info.read files.content.read";
      const tokens = await signIn(config, issuer, { scope });
      assert.ok(tokens.refresh_token, "offline access");
      // A refresh with the client's secret does not rotate: the refresh token stays the same,
      // whether the answer repeats it or leaves it out (RFC 6749 §6), and keeps working.
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
      assert.equal(refreshed.refresh_token ?? tokens.refresh_token, tokens.refresh_token, "the refresh token stays the same");
      const again = await client.refreshTokenGrant(config, tokens.refresh_token);
      assert.equal(again.refresh_token ?? tokens.refresh_token, tokens.refresh_token);

      const live = await client.tokenIntrospection(config, again.access_token);
      assert.equal(live.active, true);
      assert.equal(live.client_id, confidentialApp.clientId);
      assert.deepEqual(live.scope.split(" ").sort(), scope.split(" ").sort());
      assert.equal(live.sub, ALICE.account_id);
      assert.equal(live.iss, issuer.href);
      assert.equal((await client.tokenIntrospection(config, tokens.refresh_token)).active, true);
      assert.equal((await account(config, issuer, again.access_token)).status, 200);

      // Revoking the access token ends the whole grant: every token of it, refresh token included.
      await client.tokenRevocation(config, again.access_token);
      for (const token of [again.access_token, refreshed.access_token, tokens.access_token, tokens.refresh_token]) {
        assert.deepEqual({ ...(await client.tokenIntrospection(config, token)) }, { active: false });
      }
      await assertRefusedByApi(config, issuer, again.access_token);
      await assertRefreshRefused(config, tokens.refresh_token);
    });

    // A second host with no retry window: a superseded refresh token is never answered again.
    await step(t, "public app, retry window 0: a superseded refresh token presented again is refused and ends the grant", async () => {
      const issuer = await serve(t, start, join(dir, "no-retry-window"), { rotation: { retry_window: 0 } });
      const config = await discover(issuer, publicApp);
      const tokens = await signIn(config, issuer);
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
      assert.ok(refreshed.refresh_token, "a rotating refresh returns a refresh token");
      assert.notEqual(refreshed.refresh_token, tokens.refresh_token, "the refresh token rotates");
      await sleep(1_500); // past the rotation's second, whichever way the window's edge is counted
      await assertRefreshRefused(config, tokens.refresh_token);
      // Two hands held that token: the grant ends, the current tokens with it.
      await assertRefusedByApi(config, issuer, refreshed.access_token);
      await assertRefreshRefused(config, refreshed.refresh_token);
    });
  });
}
