// The Workers entry point and quick-start inside workerd (Miniflare): the whole PKCE offline flow
// against an authorization server living in a Durable Object, with the host's page templates.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { ALICE, GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, VERIFIER, config, pkceQuery, standardsConfig } from "./fixtures.mjs";

const ORIGIN = "http://auth.test";
const mf = new Miniflare({
  modules: true,
  scriptPath: fileURLToPath(new URL("./workerd-quickstart.js", import.meta.url)),
  modulesRoot: fileURLToPath(new URL("../", import.meta.url)),
  modulesRules: [
    { type: "ESModule", include: ["**/*.js"] },
    { type: "CompiledWasm", include: ["**/*.wasm"] },
  ],
  durableObjects: { AUTH: "AuthServer" },
  bindings: { CONFIG: JSON.stringify(config()) },
});
after(() => mf.dispose());

const signedIn = { "x-test-user": JSON.stringify(ALICE) };
// What a browser sends with a form posted from the consent page itself. (Miniflare delivers the
// request with `Host: 127.0.0.1:<port>` beside the URL's host, so an Origin alone cannot match.)
const sameOrigin = { "sec-fetch-site": "same-origin" };
const post = (path, body, headers = {}) =>
  mf.dispatchFetch(`${ORIGIN}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(body).toString(), redirect: "manual" });
const bearer = (path, token) => mf.dispatchFetch(`${ORIGIN}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}` } });

test("the Workers quick-start serves the whole PKCE offline flow from a Durable Object", async () => {
  const consentPage = await mf.dispatchFetch(`${ORIGIN}/oauth2/authorize?${pkceQuery("w")}`, { headers: signedIn });
  assert.equal(consentPage.status, 200);
  assert.equal(consentPage.headers.get("x-frame-options"), "DENY", "the core's page headers come with the host's template");
  const html = await consentPage.text();
  assert.match(html, /<main data-page="consent"[^>]*><h1>Quick-start: PKCE App wants access<\/h1>/, "the consent page is the host's template");
  assert.match(html, new RegExp(`for ${ALICE.account_id}, also while you are away`));
  assert.match(html, /<li>account_info.read<\/li><li>files.metadata.read<\/li>/);
  const formQuery = html.match(/name="query" value="([^"]*)"/)[1].replaceAll("&amp;", "&");
  assert.equal(formQuery, pkceQuery("w"), "the form carries the authorization request back");
  const redirect = await post("/oauth2/authorize", { query: formQuery, decision: "allow" }, { ...signedIn, ...sameOrigin, origin: ORIGIN });
  assert.equal(redirect.status, 302);
  const location = new URL(redirect.headers.get("location"));
  assert.equal(location.searchParams.get("state"), "w");
  const exchange = { grant_type: "authorization_code", code: location.searchParams.get("code"), client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT };
  const issued = await post("/oauth2/token", exchange);
  assert.equal(issued.status, 200);
  const tokens = await issued.json();
  assert.deepEqual(await (await bearer(GET_ACCOUNT, tokens.access_token)).json(), { account_id: ALICE.account_id });
  const replay = await post("/oauth2/token", exchange);
  assert.equal(replay.status, 400);
  assert.equal((await replay.json()).error, "invalid_grant");
  assert.equal((await bearer(GET_ACCOUNT, tokens.access_token)).status, 401, "a replayed code revokes what it produced");
  const refreshed = await post("/oauth2/token", { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: PKCE_APP });
  assert.equal(refreshed.status, 400, "so does the refresh token");
  assert.equal((await refreshed.json()).error, "invalid_grant");
});

test("the Workers quick-start shows its sign-in template without a user, and refuses a cross-site consent form", async () => {
  const signIn = await mf.dispatchFetch(`${ORIGIN}/oauth2/authorize?${pkceQuery("s")}`);
  assert.equal(signIn.status, 200);
  const html = await signIn.text();
  assert.match(html, /<main data-page="sign_in"[^>]*><a href="\/signin\?return_to=\/oauth2\/authorize\?client_id=pkce-app&amp;[^"]*">Quick-start sign-in<\/a>/);
  for (const elsewhere of [{ "sec-fetch-site": "cross-site", origin: ORIGIN }, { origin: "https://evil.example" }]) {
    const crossSite = await post("/oauth2/authorize", { query: pkceQuery("s"), decision: "allow" }, { ...signedIn, ...elsewhere });
    assert.equal(crossSite.status, 400);
    assert.equal(crossSite.headers.get("location"), null, "no code leaves for a form posted from elsewhere");
    assert.match(await crossSite.text(), /data-page="error"/);
  }
  assert.equal((await mf.dispatchFetch(`${ORIGIN}/elsewhere`)).status, 404);
});

// The Workers entry's default fetcher is the web fetch, which cannot check the addresses a name
// resolves to: documents from any host need the operator's word (workerd-documents.js).
test("the Workers entry refuses documents from any host with its default fetcher, unless the operator opts out by name", async () => {
  const worker = new Miniflare({
    modules: true,
    scriptPath: fileURLToPath(new URL("./workerd-documents.js", import.meta.url)),
    modulesRoot: fileURLToPath(new URL("../", import.meta.url)),
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
  });
  try {
    const create = async (documents, options = {}) => {
      const base = standardsConfig();
      const profile = { ...base.profile, clients: { scopes: ["account_info.read"], ...(documents && { documents }) } };
      const answer = await worker.dispatchFetch(`${ORIGIN}/create`, { method: "POST", body: JSON.stringify({ config: { ...base, profile }, ...options }) });
      return answer.json();
    };
    const refused = await create({});
    assert.match(refused.error ?? "", /profile\.clients\.documents is on for any host/);
    assert.match(refused.error, /anyDocumentHostWithoutAddressCheck: true/, "the error names the opt-out");
    assert.match(refused.error, /profile\.clients\.documents\.hosts/, "and the allow-list");
    assert.match((await create({ hosts: [] })).error ?? "", /anyDocumentHostWithoutAddressCheck/);
    assert.deepEqual(await create({}, { anyDocumentHostWithoutAddressCheck: true }), { created: true });
    assert.deepEqual(await create({ hosts: ["*.example.com"] }), { created: true });
    assert.deepEqual(await create({}, { ownFetcher: true }), { created: true }, "a fetcher of the host's own is the host's to vet");
    assert.deepEqual(await create(null), { created: true }, "no documents, nothing fetched");
  } finally {
    await worker.dispose();
  }
});
