// The peer side of the Node benchmark: @node-oauth/oauth2-server 5.3.0 with its defaults, driven
// through its own Request/Response classes, over an in-memory model (Maps) that stores tokens in
// plaintext as the package's documented model examples do. The flows mirror edgegrant.mjs: same
// app, redirect URI, scopes, PKCE S256 with a client secret; each throws unless it succeeded.
import OAuth2Server from "@node-oauth/oauth2-server";
import { APP, GET_ACCOUNT, ORIGIN, REDIRECT, SCOPES, SECRET, VERIFIER, authorizationQuery } from "../../lib/shared.mjs";

const { Request: OAuthRequest, Response: OAuthResponse } = OAuth2Server;


/** The v5 model contract for authorization_code, refresh_token and authenticate, on Maps. */
function memoryModel() {
  const clients = new Map([
    [APP, { id: APP, secret: SECRET, redirectUris: [REDIRECT], grants: ["authorization_code", "refresh_token"], scopes: SCOPES.split(" ") }],
  ]);
  const codes = new Map();
  const accessTokens = new Map();
  const refreshTokens = new Map();
  return {
    // clientSecret is null at /authorize; at /token it is what the client sent.
    async getClient(clientId, clientSecret) {
      const client = clients.get(clientId);
      if (!client || (clientSecret != null && clientSecret !== client.secret)) return null;
      return client;
    },
    async saveAuthorizationCode(code, client, user) {
      const record = { ...code, client, user };
      codes.set(code.authorizationCode, record);
      return record;
    },
    getAuthorizationCode: async (code) => codes.get(code),
    revokeAuthorizationCode: async (code) => codes.delete(code.authorizationCode),
    async saveToken(token, client, user) {
      const record = { ...token, client, user };
      accessTokens.set(token.accessToken, record);
      if (token.refreshToken) refreshTokens.set(token.refreshToken, record);
      return record;
    },
    getAccessToken: async (accessToken) => accessTokens.get(accessToken),
    getRefreshToken: async (refreshToken) => refreshTokens.get(refreshToken),
    revokeToken: async (token) => refreshTokens.delete(token.refreshToken),
    // v5: scopes are arrays. No scope asked for means the client's scopes.
    async validateScope(user, client, scope) {
      if (!scope) return client.scopes;
      return scope.every((s) => client.scopes.includes(s)) ? scope : false;
    },
    verifyScope: async (token, scope) => Boolean(token.scope) && scope.every((s) => token.scope.includes(s)),
  };
}

/**
 * The peer's Request from what a web framework would hand it: the URL's query and the
 * url-encoded body, parsed into the plain objects the package expects.
 */
function request(method, url, headers = {}, pairs = null) {
  const body = pairs && new URLSearchParams(pairs).toString(); // the client's encoding …
  const parsed = new URL(url);
  return new OAuthRequest({
    method,
    headers: body ? { ...headers, "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length) } : headers,
    query: Object.fromEntries(parsed.searchParams),
    body: body ? Object.fromEntries(new URLSearchParams(body)) : {}, // … and the server's body parser
  });
}

/** The token response as it would cross the wire: serialized, and parsed by the client. */
const wire = (response) => JSON.parse(JSON.stringify(response.body));

function expect(ok, what, response) {
  if (!ok) throw new Error(`oauth2-server ${what}: unexpected response ${response?.status}`);
}

export async function oauth2ServerSubject() {
  const oauth = new OAuth2Server({ model: memoryModel() });
  let user = null; // the signed-in user of the current iteration
  let users = 0;
  const authenticateHandler = { handle: () => user };
  const tokenRequest = (pairs) => request("POST", `${ORIGIN}/oauth2/token`, {}, pairs);

  /** Authorization of a fresh user (the peer has no consent step of its own), then the code exchange. */
  async function authorizeAndExchange() {
    users++;
    user = { account_id: `dbid:bench-user-${users}`, uid: String(users) };
    const state = `s${users}`;
    const query = authorizationQuery(APP, state);
    const authorized = new OAuthResponse();
    await oauth.authorize(request("GET", `${ORIGIN}/oauth2/authorize?${query}`), authorized, { authenticateHandler });
    const location = authorized.status === 302 ? new URL(authorized.get("location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === state, "authorize", authorized);

    const response = new OAuthResponse();
    await oauth.token(
      tokenRequest({ grant_type: "authorization_code", code, client_id: APP, client_secret: SECRET, code_verifier: VERIFIER, redirect_uri: REDIRECT }),
      response,
    );
    const tokens = response.status === 200 ? wire(response) : {};
    expect(tokens.access_token && tokens.refresh_token, "code exchange", response);
    return tokens;
  }

  const setup = await authorizeAndExchange();
  let refreshToken = setup.refresh_token; // the peer rotates it (alwaysIssueNewRefreshToken): follow it

  return {
    name: "@node-oauth/oauth2-server",
    flows: {
      async exchange() {
        await authorizeAndExchange();
      },
      async refresh() {
        const response = new OAuthResponse();
        await oauth.token(tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: APP, client_secret: SECRET }), response);
        const body = response.status === 200 ? wire(response) : {};
        expect(body.access_token && body.refresh_token && body.token_type === "Bearer", "refresh", response);
        refreshToken = body.refresh_token;
      },
      async bearer() {
        const authenticated = new OAuthResponse();
        const token = await oauth.authenticate(
          request("GET", `${ORIGIN}${GET_ACCOUNT}`, { authorization: `Bearer ${setup.access_token}` }),
          authenticated,
          { scope: "account_info.read" },
        );
        const response = Response.json({ account_id: token.user.account_id });
        const body = response.status === 200 ? await response.json() : {};
        expect(body.account_id === "dbid:bench-user-1", "bearer call", response);
      },
    },
  };
}
