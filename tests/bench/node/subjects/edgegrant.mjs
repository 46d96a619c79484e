// The edgegrant side of the Node benchmark: the npm package driven through its own interface,
// real Fetch `Request`s into `server.fetch`, over the package's in-memory storage adapter.
// Each flow throws unless it got the success response, so a broken flow never looks fast.
import { createAuthServer, secretDigest } from "../../../../pkg/src/node.js";
import { memoryStorage } from "../../../../pkg/src/adapters/memory.js";

const ORIGIN = "https://auth.example.com";
const APP = "bench-app";
const SECRET = "bench-secret-7f3a9c2e41d8b605";
const REDIRECT = "https://app.example.com/oauth/callback";
const SCOPES = "account_info.read files.metadata.read";
const GET_ACCOUNT = "/2/users/get_current_account";
// RFC 7636 Appendix B: the client's verifier and its S256 challenge (client-side work, not measured).
const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

const tokenRequest = (pairs) =>
  new Request(`${ORIGIN}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(pairs),
  });

function expect(ok, what, response) {
  if (!ok) throw new Error(`edgegrant ${what}: unexpected response ${response?.status}`);
}

export async function edgegrantSubject() {
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
    storage: memoryStorage(),
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
    expect(page.status === 200 && (await page.text()).includes('data-page="consent"'), "consent page", page);

    const consent = await server.fetch(
      new Request(`${ORIGIN}/oauth2/authorize`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
        body: new URLSearchParams({ query, decision: "allow" }),
      }),
    );
    const location = consent.status === 302 ? new URL(consent.headers.get("location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === state, "consent", consent);

    const response = await server.fetch(
      tokenRequest({ grant_type: "authorization_code", code, client_id: APP, client_secret: SECRET, code_verifier: VERIFIER, redirect_uri: REDIRECT }),
    );
    const tokens = response.status === 200 ? await response.json() : {};
    expect(tokens.access_token && tokens.refresh_token, "code exchange", response);
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
        expect(body.access_token && body.token_type === "bearer", "refresh", response);
      },
      async bearer() {
        const response = await server.fetch(
          new Request(`${ORIGIN}${GET_ACCOUNT}`, { headers: { authorization: `Bearer ${setup.access_token}` } }),
        );
        const body = response.status === 200 ? await response.json() : {};
        expect(body.account_id === "dbid:bench-user-1", "bearer call", response);
      },
    },
  };
}
