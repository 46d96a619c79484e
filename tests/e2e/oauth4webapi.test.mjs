// Interop with a published standards-based client: oauth4webapi (npm), which finds the server
// from a challenge of its API (RFC 9728) and discovers it from its issuer (RFC 8414), runs the
// code flow with PKCE, checks the `iss` of the authorization response (RFC 9207), refreshes (the
// public client's refresh token rotates), introspects (RFC 7662) and revokes (RFC 7009), and
// gets the confidential app a token for itself (client credentials, RFC 6749 §4.4), exchanges a
// token (RFC 8693) and, on the Node and Worker hosts, presents an identity assertion (ID-JAG,
// the JWT-bearer grant of RFC 7523) that a test identity provider — a process of its own, with
// its own key, published at its jwks_uri over https — minted for alice — unmodified, against the
// three hosts in the standards profile. Nothing is given to it but the issuer URL and its client
// credentials.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as oauth from "oauth4webapi";
import { freePort } from "../../examples/worker/dev.mjs";
import { ALICE, REDIRECT, SERVER_KEY, apps, browse, fetchTrusting, root, testCertificates } from "./interop.mjs";
import { startIdentityProvider } from "./identity-provider.mjs";


/**
 * The host's sample configuration in the standards profile, issuer http://127.0.0.1:<port>/;
 * the confidential app is the resource server of the API served there (RFC 7662 §4: it may
 * introspect the access tokens issued for it).
 */
function standardsConfig(sample, port, dir, idp) {
  const doc = JSON.parse(readFileSync(sample, "utf8"));
  const path = join(dir, "config.json");
  const origin = `http://127.0.0.1:${port}`;
  const resource_servers = [{ app: apps[1].clientId, resources: [origin] }];
  // The confidential app may also get tokens for itself (the client credentials grant), and
  // exchange tokens it holds (RFC 8693).
  const client_credentials = { apps: [apps[1].clientId] };
  const token_exchange = {};
  // The enterprise's identity provider, trusted by its jwks_uri; its alice is alice here.
  const identity_assertions = idp && { providers: [{ issuer: idp.issuer, jwks_uri: idp.jwksUri, accounts: { [IDP_ALICE]: { account_id: ALICE.account_id, uid: "12345" } } }] };
  writeFileSync(path, JSON.stringify({ ...doc, profile: { kind: "standards", issuer: `${origin}/`, resource_servers, client_credentials, token_exchange, identity_assertions }, server_key: SERVER_KEY }));
  return path;
}

/** Alice at her enterprise's identity provider, and her password there. */
const IDP_ALICE = "alice@corp.example";
const IDP_PASSWORD = "alice-at-corp";
const certificates = testCertificates(mkdtempSync(join(tmpdir(), "edgegrant-oauth4webapi-tls-")));
let idp;

// The Node and the Worker hosts fetch the provider's keys (on loopback, under the test's CA); the
// native host's fetcher admits no loopback address and no CA of a test's own, so it runs without.
const hosts = {
  node: async (port, dir) => {
    const { startServer } = await import(pathToFileURL(join(root, "examples/node/server.mjs")).href);
    const { fetchDocumentNode } = await import(pathToFileURL(join(root, "pkg/src/documents-node.js")).href);
    const fetchDocument = (fetch) => fetchDocumentNode(fetch, { allowLoopback: true, ca: certificates.ca });
    return startServer(standardsConfig(join(root, "examples/node/config.sample.json"), port, dir, idp), { port, allowSampleSecret: true, onAudit: () => {}, fetchDocument });
  },
  native: async (port, dir) => {
    const { startNative } = await import(pathToFileURL(join(root, "examples/native/start.mjs")).href);
    return startNative(standardsConfig(join(root, "examples/node/config.sample.json"), port, dir), { port, allowSampleSecret: true });
  },
  worker: async (port, dir) => {
    const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
    return startWorker({
      configPath: standardsConfig(join(root, "examples/worker/config.sample.json"), port, dir, idp),
      port,
      persistTo: join(dir, "state"),
      allowSampleSecret: true,
      loopbackDocuments: true,
      extraCaCerts: certificates.caPath,
    });
  },
};

const insecure = { [oauth.allowInsecureRequests]: true }; // the hosts run on http://127.0.0.1
const [publicApp, confidentialApp] = apps;

before(async () => {
  idp = await startIdentityProvider({ key: certificates.key, cert: certificates.cert, users: { [IDP_ALICE]: IDP_PASSWORD } });
});
after(() => idp?.close());

for (const [name, start] of Object.entries(hosts)) {
  test(`oauth4webapi against the ${name} host: discovery, PKCE code flow with iss checked, refresh, introspection, revocation, client credentials, token exchange${name === "native" ? "" : ", an identity assertion (ID-JAG) of a provider's jwks_uri"}`, { timeout: 20 * 60_000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), `edgegrant-oauth4webapi-${name}-`));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort("127.0.0.1"); // the issuer names it before the host starts
    const host = await start(port, dir);
    t.after(() => host.close());
    const issuer = new URL(`http://127.0.0.1:${port}/`);

    // As an MCP client starts, knowing only the API: a call with a dead token is challenged, the
    // challenge names the API's metadata (RFC 9728), and that names the authorization server.
    const challenged = await oauth
      .protectedResourceRequest("sl.AAAAAAAAAAAAAAAA.nothing", "POST", new URL("/2/users/get_current_account", issuer), new Headers(), null, insecure)
      .then(() => null, (error) => error);
    assert.ok(challenged instanceof oauth.WWWAuthenticateChallengeError, String(challenged));
    const bearer = challenged.cause.find((c) => c.scheme === "bearer");
    // The challenge names the metadata of the endpoint called, whose resource is that endpoint's
    // URL: oauth4webapi checks it (RFC 9728 §3.3) as it reads the document.
    const endpoint = new URL("/2/users/get_current_account", issuer);
    assert.equal(bearer.parameters.resource_metadata, new URL("/.well-known/oauth-protected-resource/2/users/get_current_account", issuer).href);
    const endpointMetadata = await oauth.processResourceDiscoveryResponse(endpoint, await oauth.resourceDiscoveryRequest(endpoint, insecure));
    assert.equal(endpointMetadata.resource, endpoint.href);
    assert.deepEqual(endpointMetadata.authorization_servers, [issuer.href]);
    // And the whole API's, at the origin.
    const resource = await oauth.processResourceDiscoveryResponse(issuer, await oauth.resourceDiscoveryRequest(issuer, insecure));
    assert.deepEqual(resource.authorization_servers, [issuer.href]);

    // Discovery from the issuer alone.
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
    assert.equal(as.issuer, issuer.href);
    assert.equal(as.authorization_response_iss_parameter_supported, true);
    assert.ok(as.revocation_endpoint && as.introspection_endpoint);

    // The code flow of a public client with PKCE; the browser plays the user.
    const client = { client_id: publicApp.clientId };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorize = new URL(as.authorization_endpoint);
    for (const [k, v] of Object.entries({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: "code",
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      token_access_type: "offline",
    })) authorize.searchParams.set(k, v);
    const { redirect } = await browse(authorize.href, `http://127.0.0.1:${port}`, ALICE);
    // The client checks iss against the discovered issuer (RFC 9207): a forged one is refused.
    const forged = new URL(redirect);
    forged.searchParams.set("iss", "https://evil.example/");
    assert.throws(() => oauth.validateAuthResponse(as, client, forged, state), /iss/);
    const params = oauth.validateAuthResponse(as, client, new URL(redirect), state);

    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure),
    );
    assert.equal(tokens.token_type, "bearer");
    assert.ok(tokens.refresh_token, "offline access");
    // A resource server (the confidential app, with its secret) asks whether tokens are live.
    const server = { client_id: confidentialApp.clientId };
    const serverAuth = oauth.ClientSecretBasic(confidentialApp.clientSecret);
    const introspect = async (token) =>
      oauth.processIntrospectionResponse(as, server, await oauth.introspectionRequest(as, server, serverAuth, token, insecure));
    const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token, insecure));
    assert.match(refreshed.access_token, /^sl\./);
    // A public client's refresh token rotates (RFC 9700 §4.14.2); the client keeps the new one.
    assert.ok(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token, "rotated");
    // A resource server learns of access tokens only: of a refresh token, nothing.
    assert.deepEqual(await introspect(refreshed.refresh_token), { active: false }, "a refresh token is not a resource server's to learn of");

    const live = await introspect(refreshed.access_token);
    assert.equal(live.active, true);
    assert.equal(live.client_id, publicApp.clientId);
    assert.equal(live.sub, ALICE.account_id);
    assert.equal(live.iss, issuer.href);

    // The resource server passes the user's token on narrowed (RFC 8693, by oauth4webapi's
    // generic grant request): one scope, and itself named the actor by its own client
    // credentials token. Introspection shows it holds the new token, for alice, acting.
    const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
    const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";
    assert.ok(as.grant_types_supported.includes(TOKEN_EXCHANGE));
    const own = await oauth.processClientCredentialsResponse(
      as,
      server,
      await oauth.clientCredentialsGrantRequest(as, server, serverAuth, new URLSearchParams({ scope: "account_info.read" }), insecure),
    );
    const exchange = (parameters) => oauth.genericTokenEndpointRequest(as, server, serverAuth, TOKEN_EXCHANGE, parameters, insecure);
    const narrowed = await oauth.processGenericTokenEndpointResponse(
      as,
      server,
      await exchange({
        subject_token: refreshed.access_token,
        subject_token_type: ACCESS_TOKEN,
        actor_token: own.access_token,
        actor_token_type: ACCESS_TOKEN,
        scope: "account_info.read",
      }),
    );
    assert.equal(narrowed.issued_token_type, ACCESS_TOKEN);
    assert.equal(narrowed.scope, "account_info.read");
    assert.equal(narrowed.refresh_token, undefined);
    const passedOn = await introspect(narrowed.access_token);
    assert.equal(passedOn.active, true);
    assert.equal(passedOn.sub, ALICE.account_id);
    assert.equal(passedOn.client_id, confidentialApp.clientId);
    assert.deepEqual(passedOn.act, { sub: confidentialApp.clientId });
    // Never wider than the token it came from: a scope the user's token lacks is refused.
    const widened = await exchange({ subject_token: refreshed.access_token, subject_token_type: ACCESS_TOKEN, scope: "account_info.read files.content.read" });
    assert.equal(widened.status, 400);
    assert.equal((await widened.json()).error, "invalid_scope");

    // The public client revokes its first refresh token, superseded as it is: the whole grant
    // ends (only the grant's holders have that token).
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), tokens.refresh_token, insecure));
    // The token exchanged from it ends with the grant.
    for (const token of [tokens.access_token, refreshed.access_token, refreshed.refresh_token, narrowed.access_token]) {
      assert.deepEqual(await introspect(token), { active: false });
    }
    const api = await fetch(`http://127.0.0.1:${port}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${refreshed.access_token}` } });
    assert.equal(api.status, 401);

    // The confidential app, as a machine: a token for itself (RFC 6749 §4.4), by its secret, for
    // one of its scopes; no refresh token. The API serves it as the client, introspection names
    // the client as sub, and its revocation (RFC 7009) ends it.
    assert.ok(as.grant_types_supported.includes("client_credentials"));
    const machine = await oauth.processClientCredentialsResponse(
      as,
      server,
      await oauth.clientCredentialsGrantRequest(as, server, serverAuth, new URLSearchParams({ scope: "account_info.read" }), insecure),
    );
    assert.equal(machine.scope, "account_info.read");
    assert.equal(machine.refresh_token, undefined);
    const served = await fetch(`http://127.0.0.1:${port}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${machine.access_token}` } });
    assert.equal(served.status, 200);
    assert.deepEqual(await served.json(), { client_id: confidentialApp.clientId });
    const itself = await introspect(machine.access_token);
    assert.equal(itself.active, true);
    assert.equal(itself.sub, confidentialApp.clientId);
    assert.equal(itself.client_id, confidentialApp.clientId);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, server, serverAuth, machine.access_token, insecure));
    assert.deepEqual(await introspect(machine.access_token), { active: false });

    if (name === "native") return;
    // Enterprise-managed authorization: alice signs in at her enterprise's identity provider, the
    // confidential app has it turn her ID token into an identity assertion for this server (the
    // provider's RFC 8693 token exchange, by oauth4webapi), and presents that with the JWT-bearer
    // grant: alice's token, no consent page, no refresh token. The provider's keys are fetched
    // from its jwks_uri once and kept; the same assertion again is refused.
    const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
    const ID_JAG = "urn:ietf:params:oauth:token-type:id-jag";
    assert.ok(as.grant_types_supported.includes(JWT_BEARER));
    assert.deepEqual(as.authorization_grant_profiles_supported, ["urn:ietf:params:oauth:grant-profile:id-jag"]);
    const viaProvider = { [oauth.customFetch]: fetchTrusting(certificates.ca) };
    const signedIn = await fetchTrusting(certificates.ca)(idp.sessionEndpoint, { method: "POST", body: new URLSearchParams({ username: IDP_ALICE, password: IDP_PASSWORD }) });
    const { id_token } = await signedIn.json();
    const enterprise = { issuer: idp.issuer, token_endpoint: idp.tokenEndpoint };
    const fetchesBefore = await idp.keyFetches();
    const mint = async () =>
      oauth.processGenericTokenEndpointResponse(
        enterprise,
        server,
        await oauth.genericTokenEndpointRequest(enterprise, server, oauth.None(), TOKEN_EXCHANGE, {
          subject_token: id_token,
          subject_token_type: "urn:ietf:params:oauth:token-type:id_token",
          requested_token_type: ID_JAG,
          audience: as.issuer,
          scope: "account_info.read",
        }, viaProvider),
        { recognizedTokenTypes: { n_a: () => {} } },
      );
    const jag = await mint();
    assert.equal(jag.issued_token_type, ID_JAG);
    const present = (assertion) => oauth.genericTokenEndpointRequest(as, server, serverAuth, JWT_BEARER, { assertion: assertion }, insecure);
    const hers = await oauth.processGenericTokenEndpointResponse(as, server, await present(jag.access_token));
    assert.equal(hers.scope, "account_info.read");
    assert.equal(hers.refresh_token, undefined, "no refresh token: the provider is asked again");
    const asAlice = await introspect(hers.access_token);
    assert.equal(asAlice.active, true);
    assert.equal(asAlice.sub, ALICE.account_id);
    assert.equal(asAlice.client_id, confidentialApp.clientId);
    const me = await fetch(`http://127.0.0.1:${port}/2/users/get_current_account`, { method: "POST", headers: { authorization: `Bearer ${hers.access_token}` } });
    assert.equal(me.status, 200);
    assert.equal((await me.json()).account_id, ALICE.account_id);
    // Used once.
    const replayed = await present(jag.access_token);
    assert.equal(replayed.status, 400);
    assert.equal((await replayed.json()).error, "invalid_grant");
    // A second assertion: the provider's keys are not fetched again (kept for their max-age).
    const again = await oauth.processGenericTokenEndpointResponse(as, server, await present((await mint()).access_token));
    assert.ok(again.access_token);
    assert.equal((await idp.keyFetches()) - fetchesBefore, 1, "the provider's key set fetched once, then kept");
  });
}
