// The peer side of the Node benchmark: @node-oauth/oauth2-server 5.3.0 with its defaults, over an
// in-memory model (Maps) that stores tokens in plaintext as the package's documented model
// examples do, in two setups:
// - `oauth2ServerSubject`: driven directly through its own Request/Response classes, with the
//   plain values a node:http framework hands it (the query and url-encoded body parsed into
//   objects, the token response serialized as JSON) and no Fetch objects; the counterpart of
//   edgegrant's plain-value entry.
// - `oauth2ServerFetchSubject`: behind a Fetch shim, a small Fetch handler doing what a framework
//   does (parse the URL and the url-encoded form, run the peer, answer Response.json); the
//   counterpart of edgegrant's `server.fetch`.
// The flows mirror edgegrant's (../../lib/edgegrant-subject.mjs): same app, redirect URI, scopes,
// PKCE S256 with a client secret; each throws unless it succeeded.
import OAuth2Server from "@node-oauth/oauth2-server";
import { APP, GET_ACCOUNT, ORIGIN, REDIRECT, SCOPES, SECRET, VERIFIER, authorizationQuery } from "../../lib/shared.mjs";

const { Request: OAuthRequest, Response: OAuthResponse } = OAuth2Server;
const HOST = new URL(ORIGIN).host;
const FORM = "application/x-www-form-urlencoded";
const REQUIRED = "account_info.read";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The v5 model contract for authorization_code, refresh_token and authenticate, on Maps. */
function memoryModel() {
  const clients = new Map([
    [APP, { id: APP, secret: SECRET, redirectUris: [REDIRECT], grants: ["authorization_code", "refresh_token", "client_credentials"], scopes: SCOPES.split(" ") }],
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
    // The client credentials grant: the user its tokens are for is the client itself.
    getUserFromClient: async (client) => ({ client_id: client.id }),
  };
}

function expect(ok, what, response) {
  if (!ok) throw new Error(`oauth2-server ${what}: unexpected response ${response?.status}`);
}

/** The peer with its model and a signed-in user that changes per first-time authorization. */
function peer() {
  const oauth = new OAuth2Server({ model: memoryModel() });
  let user = null;
  let users = 0;
  return {
    oauth,
    authenticateHandler: { handle: () => user },
    /** A fresh user; the authorization query and its state. */
    next() {
      users++;
      user = { account_id: `dbid:bench-user-${users}`, uid: String(users) };
      return { state: `s${users}`, query: authorizationQuery(APP, `s${users}`) };
    },
  };
}

const tokenForm = (pairs) => new URLSearchParams({ ...pairs, client_id: APP, client_secret: SECRET });
const exchangeForm = (code) => tokenForm({ grant_type: "authorization_code", code, code_verifier: VERIFIER, redirect_uri: REDIRECT });
const refreshForm = (refreshToken) => tokenForm({ grant_type: "refresh_token", refresh_token: refreshToken });
const machineForm = () => tokenForm({ grant_type: "client_credentials", scope: "account_info.read" });

/**
 * The peer's Request from what node:http and a web framework hand it: the headers object, the
 * URL's query and the url-encoded body (bytes as they arrived, decoded and parsed), as plain
 * objects.
 */
function plainRequest(method, url, headers = {}, form = null) {
  const bytes = form && encoder.encode(form.toString()); // the client's encoding, the wire …
  const at = url.indexOf("?");
  return new OAuthRequest({
    method,
    headers: bytes ? { host: HOST, ...headers, "content-type": FORM, "content-length": String(bytes.length) } : { host: HOST, ...headers },
    query: at < 0 ? {} : Object.fromEntries(new URLSearchParams(url.slice(at + 1))),
    body: bytes ? Object.fromEntries(new URLSearchParams(decoder.decode(bytes))) : {}, // … and the server's body parser
  });
}

/** The token response as it crosses the wire: serialized by the server, parsed by the client. */
const wire = (response) => JSON.parse(JSON.stringify(response.body));

/** The peer driven directly: its own Request/Response classes, no Fetch objects. */
export async function oauth2ServerSubject({ name = "@node-oauth/oauth2-server (direct)" } = {}) {
  const { oauth, authenticateHandler, next } = peer();

  /** Authorization of a fresh user (the peer has no consent step of its own), then the code exchange. */
  async function authorizeAndExchange() {
    const { state, query } = next();
    const authorized = new OAuthResponse();
    await oauth.authorize(plainRequest("GET", `/oauth2/authorize?${query}`), authorized, { authenticateHandler });
    const location = authorized.status === 302 ? new URL(authorized.get("location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === state, "authorize", authorized);

    const response = new OAuthResponse();
    await oauth.token(plainRequest("POST", "/oauth2/token", {}, exchangeForm(code)), response);
    const tokens = response.status === 200 ? wire(response) : {};
    expect(tokens.access_token && tokens.refresh_token, "code exchange", response);
    return tokens;
  }

  const setup = await authorizeAndExchange();
  let refreshToken = setup.refresh_token; // the peer rotates it (alwaysIssueNewRefreshToken): follow it

  return {
    name,
    flows: {
      async exchange() {
        await authorizeAndExchange();
      },
      async refresh() {
        const response = new OAuthResponse();
        await oauth.token(plainRequest("POST", "/oauth2/token", {}, refreshForm(refreshToken)), response);
        const body = response.status === 200 ? wire(response) : {};
        expect(body.access_token && body.refresh_token && body.token_type === "Bearer", "refresh", response);
        refreshToken = body.refresh_token;
      },
      async bearer() {
        const authenticated = new OAuthResponse();
        const token = await oauth.authenticate(plainRequest("GET", GET_ACCOUNT, { authorization: `Bearer ${setup.access_token}` }), authenticated, {
          scope: REQUIRED,
        });
        // The host answers the authorized call; the client reads the JSON.
        const sent = JSON.stringify({ account_id: token.user.account_id });
        expect(JSON.parse(sent).account_id === "dbid:bench-user-1", "bearer call", authenticated);
      },
      async machine() {
        const response = new OAuthResponse();
        await oauth.token(plainRequest("POST", "/oauth2/token", {}, machineForm()), response);
        const body = response.status === 200 ? wire(response) : {};
        expect(body.access_token && !body.refresh_token, "client credentials", response);
      },
    },
  };
}

/**
 * The peer behind a Fetch handler, as a framework mounts it: the URL parsed, the headers copied
 * into an object, a POST's url-encoded form read and parsed, the peer run, its answer sent as
 * Response.json (a redirect as it is); a refusal answers the peer's error status and body.
 */
function fetchShim({ oauth, authenticateHandler }) {
  return async function handler(request) {
    const url = new URL(request.url);
    const headers = Object.fromEntries(request.headers);
    let body = {};
    if (request.method === "POST") {
      const text = await request.text();
      // Over node:http the Content-Length arrives with the request; a Fetch Request built in
      // process has none, and the peer asks for one (type-is) before it reads a form.
      headers["content-length"] ??= String(Buffer.byteLength(text));
      body = Object.fromEntries(new URLSearchParams(text));
    }
    const req = new OAuthRequest({ method: request.method, headers, query: Object.fromEntries(url.searchParams), body });
    const res = new OAuthResponse();
    try {
      switch (url.pathname) {
        case "/oauth2/authorize":
          await oauth.authorize(req, res, { authenticateHandler });
          return new Response(null, { status: res.status, headers: res.headers });
        case "/oauth2/token":
          await oauth.token(req, res);
          return Response.json(res.body, { status: res.status, headers: res.headers });
        case GET_ACCOUNT: {
          const token = await oauth.authenticate(req, res, { scope: REQUIRED });
          return Response.json({ account_id: token.user.account_id });
        }
        default:
          return new Response(null, { status: 404 });
      }
    } catch (error) {
      return Response.json(res.body ?? {}, { status: error.code ?? 500, headers: res.headers });
    }
  };
}

/** The peer behind the Fetch shim, driven with the same Fetch Requests as edgegrant's `server.fetch`. */
export async function oauth2ServerFetchSubject({ name = "@node-oauth/oauth2-server (Fetch shim)" } = {}) {
  const state = peer();
  const fetch = fetchShim(state);
  const tokenRequest = (form) => new Request(`${ORIGIN}/oauth2/token`, { method: "POST", headers: { "content-type": FORM }, body: form });

  async function authorizeAndExchange() {
    const { state: expected, query } = state.next();
    const redirect = await fetch(new Request(`${ORIGIN}/oauth2/authorize?${query}`));
    const location = redirect.status === 302 ? new URL(redirect.headers.get("location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === expected, "authorize (Fetch shim)", redirect);

    const response = await fetch(tokenRequest(exchangeForm(code)));
    const tokens = response.status === 200 ? await response.json() : {};
    expect(tokens.access_token && tokens.refresh_token, "code exchange (Fetch shim)", response);
    return tokens;
  }

  const setup = await authorizeAndExchange();
  let refreshToken = setup.refresh_token; // rotated: follow it

  return {
    name,
    flows: {
      async exchange() {
        await authorizeAndExchange();
      },
      async refresh() {
        const response = await fetch(tokenRequest(refreshForm(refreshToken)));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.access_token && body.refresh_token && body.token_type === "Bearer", "refresh (Fetch shim)", response);
        refreshToken = body.refresh_token;
      },
      async bearer() {
        const response = await fetch(new Request(`${ORIGIN}${GET_ACCOUNT}`, { headers: { authorization: `Bearer ${setup.access_token}` } }));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.account_id === "dbid:bench-user-1", "bearer call (Fetch shim)", response);
      },
      async machine() {
        const response = await fetch(tokenRequest(machineForm()));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.access_token && !body.refresh_token, "client credentials (Fetch shim)", response);
      },
    },
  };
}
