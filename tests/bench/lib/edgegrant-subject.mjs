// The edgegrant subject of both side-by-side benchmarks: the npm package driven through its own
// interface, real Fetch `Request`s into `server.fetch`. The caller passes the package entry it
// loads in its runtime (Node's or the Workers') and the storage, so this one module runs in Node
// and inside workerd. Each flow throws unless it got the success response.
import { APP, GET_ACCOUNT, authorizationQuery, ORIGIN, REDIRECT, SCOPES, SECRET, VERIFIER, expect } from "./shared.mjs";

const tokenRequest = (pairs) =>
  new Request(`${ORIGIN}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(pairs),
  });

/** `{ name, flows: { exchange, refresh, bearer } }` over `storage`, with the package's `createAuthServer` and `secretDigest`. */
export async function edgegrantSubject({ createAuthServer, secretDigest }, storage) {
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
    storage,
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
    const query = authorizationQuery(APP, state, { token_access_type: "offline" });

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
