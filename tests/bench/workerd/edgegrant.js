// The edgegrant subject of the workerd benchmark: the npm package's Workers entry (the .wasm
// imported as a compiled module), driven through server.fetch with real Requests, its access and
// refresh tokens in the shared in-memory KV (kvTokenStorage) and its grants, consent records and
// codes in the memory adapter standing in for the strong store. Each flow throws unless it got
// the success response, so a broken flow never looks fast.
import { createAuthServer, secretDigest } from "../../../pkg/src/workers.js";
import { kvTokenStorage } from "../../../pkg/src/adapters/kv.js";
import { memoryStorage } from "../../../pkg/src/adapters/memory.js";
import { CHALLENGE, GET_ACCOUNT, ORIGIN, REDIRECT, SCOPES, SECRET, VERIFIER, expect } from "./shared.js";

const APP = "bench-app";

const tokenRequest = (pairs) =>
  new Request(`${ORIGIN}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(pairs),
  });

export async function edgegrantSubject(kv) {
  let user = null; // the signed-in user of the current iteration
  let users = 0;
  const server = createAuthServer({
    apps: [
      {
        key: APP,
        name: "Bench App",
        secret_digest: secretDigest(SECRET),
        redirect_uris: [REDIRECT],
        permissions: { kind: "scoped", scopes: SCOPES.split(" ") },
      },
    ],
    apiEndpoints: { [GET_ACCOUNT]: "account_info.read" },
    storage: kvTokenStorage(kv, memoryStorage()),
    hooks: {
      currentUser: async () => user,
      api: { [GET_ACCOUNT]: async (principal) => Response.json({ account_id: principal.account_id }) },
    },
  });

  /** First-time authorization of a fresh user: consent page, consent, code exchange. */
  async function authorizeAndExchange() {
    users++;
    user = { account_id: `dbid:bench-user-${users}`, uid: String(users) };
    const state = `s${users}`;
    const query = new URLSearchParams({
      client_id: APP,
      response_type: "code",
      redirect_uri: REDIRECT,
      scope: SCOPES,
      token_access_type: "offline",
      code_challenge: CHALLENGE,
      code_challenge_method: "S256",
      state,
    }).toString();

    const page = await server.fetch(new Request(`${ORIGIN}/oauth2/authorize?${query}`));
    expect(page.status === 200 && (await page.text()).includes('data-page="consent"'), "edgegrant consent page", page);

    const consent = await server.fetch(
      new Request(`${ORIGIN}/oauth2/authorize`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
        body: new URLSearchParams({ query, decision: "allow" }),
      }),
    );
    const location = consent.status === 302 ? new URL(consent.headers.get("location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === state, "edgegrant consent", consent);

    const response = await server.fetch(
      tokenRequest({ grant_type: "authorization_code", code, client_id: APP, client_secret: SECRET, code_verifier: VERIFIER, redirect_uri: REDIRECT }),
    );
    const tokens = response.status === 200 ? await response.json() : {};
    expect(tokens.access_token && tokens.refresh_token, "edgegrant code exchange", response);
    return tokens;
  }

  const setup = await authorizeAndExchange();

  return {
    name: "edgegrant",
    flows: {
      async exchange() {
        await authorizeAndExchange();
      },
      // edgegrant's refresh tokens are reusable: the same one every time, a new access token back.
      async refresh() {
        const response = await server.fetch(
          tokenRequest({ grant_type: "refresh_token", refresh_token: setup.refresh_token, client_id: APP, client_secret: SECRET }),
        );
        const body = response.status === 200 ? await response.json() : {};
        expect(body.access_token && body.token_type === "bearer", "edgegrant refresh", response);
      },
      async bearer() {
        const response = await server.fetch(new Request(`${ORIGIN}${GET_ACCOUNT}`, { headers: { authorization: `Bearer ${setup.access_token}` } }));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.account_id === "dbid:bench-user-1", "edgegrant bearer call", response);
      },
    },
  };
}
