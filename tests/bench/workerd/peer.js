// The @cloudflare/workers-oauth-provider 1.2.3 subject of the workerd benchmark, configured as its
// README's one-Worker OAuthProvider: a defaultHandler owning /authorize (parseAuthRequest,
// lookupClient, completeAuthorization, redirect), its token endpoint, and an apiHandler for the
// API call that checks the scope, as the library leaves scopes to the handler. Its OAUTH_KV is the
// in-memory KV shared with edgegrant. Driven through provider.fetch(request, env, ctx) with real
// Requests; each flow throws unless it got the success response.
import { OAuthProvider, getOAuthApi, insufficientScope } from "../node_modules/@cloudflare/workers-oauth-provider/dist/oauth-provider.js";
import { GET_ACCOUNT, ORIGIN, REDIRECT, SCOPES, VERIFIER, authorizationQuery, expect } from "../lib/shared.mjs";

const REQUIRED = "account_info.read";

export async function peerSubject(kv) {
  let user = null; // the signed-in user of the current iteration (the application's session)
  let users = 0;
  const options = {
    apiRoute: GET_ACCOUNT,
    apiHandler: {
      fetch(request, env, ctx) {
        if (!ctx.auth.scope.includes(REQUIRED)) return insufficientScope(ctx.auth, [REQUIRED]);
        return Response.json({ account_id: ctx.props.account_id });
      },
    },
    defaultHandler: {
      async fetch(request, env) {
        if (new URL(request.url).pathname !== "/authorize") return new Response(null, { status: 404 });
        const oauth = env.OAUTH_PROVIDER;
        const authRequest = await oauth.parseAuthRequest(request);
        const client = await oauth.lookupClient(authRequest.clientId); // what a consent page shows
        if (!client) return new Response("unknown client", { status: 400 });
        const { redirectTo } = await oauth.completeAuthorization({
          request: authRequest,
          userId: user.id,
          metadata: { label: user.id },
          scope: authRequest.scope,
          props: { account_id: user.account_id, uid: user.uid },
        });
        return Response.redirect(redirectTo, 302);
      },
    },
    authorizeEndpoint: "/authorize",
    tokenEndpoint: "/token",
    scopesSupported: SCOPES.split(" "),
    resourceMetadata: { resource: ORIGIN },
    requiredScopes: [REQUIRED],
  };
  const provider = new OAuthProvider(options);
  const env = { OAUTH_KV: kv };
  // Registered once, as a confidential client that sends its secret in the body, like edgegrant's.
  const client = await getOAuthApi(options, env).createClient({
    redirectUris: [REDIRECT],
    clientName: "Bench App",
    tokenEndpointAuthMethod: "client_secret_post",
  });
  const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} });
  const call = (request) => provider.fetch(request, env, ctx());
  const tokenRequest = (pairs) =>
    new Request(`${ORIGIN}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...pairs, client_id: client.clientId, client_secret: client.clientSecret }),
    });

  async function authorizeAndExchange() {
    users++;
    user = { id: `bench-user-${users}`, account_id: `dbid:bench-user-${users}`, uid: String(users) };
    const state = `s${users}`;
    const query = authorizationQuery(client.clientId, state);
    const redirect = await call(new Request(`${ORIGIN}/authorize?${query}`));
    const location = redirect.status === 302 ? new URL(redirect.headers.get("location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === state, "peer authorize", redirect);

    const response = await call(tokenRequest({ grant_type: "authorization_code", code, code_verifier: VERIFIER, redirect_uri: REDIRECT }));
    const tokens = response.status === 200 ? await response.json() : {};
    expect(tokens.access_token && tokens.refresh_token, "peer code exchange", response);
    return tokens;
  }

  const setup = await authorizeAndExchange();
  let refreshToken = setup.refresh_token; // the peer rotates: always present the newest

  return {
    name: "peer",
    flows: {
      async exchange() {
        await authorizeAndExchange();
      },
      async refresh() {
        const response = await call(tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken }));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.access_token && body.token_type === "bearer" && body.refresh_token, "peer refresh", response);
        refreshToken = body.refresh_token;
      },
      async bearer() {
        const response = await call(new Request(`${ORIGIN}${GET_ACCOUNT}`, { headers: { authorization: `Bearer ${setup.access_token}` } }));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.account_id === "dbid:bench-user-1", "peer bearer call", response);
      },
    },
  };
}
