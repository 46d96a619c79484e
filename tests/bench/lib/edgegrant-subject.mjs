// The edgegrant subjects of the side-by-side benchmarks: the npm package driven through its own
// entries. `edgegrantSubject` sends real Fetch `Request`s into `server.fetch` (Node and workerd);
// `edgegrantPlainSubject` calls the plain-value entry `server.handle` with what node:http hands a
// host (the request target, rawHeaders-style headers, the body's bytes, the signed-in user) and
// answers an authorized API call itself, as such a host does. The caller passes the package entry
// it loads in its runtime (Node's or the Workers') and the storage, so this one module runs in
// Node and inside workerd. Each flow throws unless it got its success response.
import { APP, GET_ACCOUNT, authorizationQuery, ORIGIN, REDIRECT, SCOPES, SECRET, VERIFIER, expect } from "./shared.mjs";

const HOST = new URL(ORIGIN).host;
const FORM = "application/x-www-form-urlencoded";
const encoder = new TextEncoder();

/** The server both entries drive: the bench app, one API endpoint, `storage`; `user()` is the signed-in user. */
function benchServer({ createAuthServer, secretDigest }, storage, user) {
  return createAuthServer({
    serverKey: "YmVuY2gtc3ViamVjdC1zZXJ2ZXIta2V5LTMyYnl0ZXM",
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
      currentUser: () => user(),
      api: { [GET_ACCOUNT]: (principal) => Response.json({ account_id: principal.account_id }) },
    },
  });
}

/**
 * The server of the client credentials and token exchange flows (issue 48): the bench app
 * allowed the one, token exchange (RFC 8693) on, which the standards profile offers — a server
 * of its own, so that the other flows stay in the reference profile they have always been
 * measured in.
 */
function machineServer({ createAuthServer, secretDigest }, storage) {
  return createAuthServer({
    serverKey: "YmVuY2gtc3ViamVjdC1zZXJ2ZXIta2V5LTMyYnl0ZXM",
    // DPoP on for the bound flow (issue 49): no nonces, a window as long as a whole run, so
    // that one proof made at setup serves every iteration (the API records no proof).
    profile: { kind: "standards", issuer: ORIGIN, client_credentials: { apps: [APP] }, token_exchange: {}, dpop: { nonces: "none", proof_window: 86400 } },
    apps: [{ key: APP, name: "Bench App", secret_digest: secretDigest(SECRET), redirect_uris: [REDIRECT], permissions: { kind: "scoped", scopes: SCOPES.split(" ") } }],
    apiEndpoints: { [GET_ACCOUNT]: "account_info.read" },
    storage,
    hooks: { currentUser: () => null, api: { [GET_ACCOUNT]: (principal) => Response.json({ client_id: principal.app }) } },
  });
}

/**
 * A DPoP key pair (WebCrypto, P-256) and a proof it signs for `htm` and `htu`, with `ath` of
 * `token`: made once at setup, so the flow measures the server's check, not the client's signing.
 */
async function dpopProofs() {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
  const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const b64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(typeof bytes === "string" ? encoder.encode(bytes) : bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  let jti = 0;
  return async (htm, htu, token) => {
    const claims = { jti: `bench-${(jti += 1)}`, htm, htu, iat: Math.floor(Date.now() / 1000) };
    if (token) claims.ath = b64(await crypto.subtle.digest("SHA-256", encoder.encode(token)));
    const input = `${b64(JSON.stringify({ typ: "dpop+jwt", alg: "ES256", jwk: { kty, crv, x, y } }))}.${b64(JSON.stringify(claims))}`;
    return `${input}.${b64(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey, encoder.encode(input)))}`;
  };
}

/** The client credentials request: the app's secret in the body, one of its scopes. */
const machineForm = () => new URLSearchParams({ grant_type: "client_credentials", scope: "account_info.read", client_id: APP, client_secret: SECRET });

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
/** The token exchange request: the app's own token (`subject`) for one with the same scope. */
const narrowForm = (subject) =>
  new URLSearchParams({ grant_type: TOKEN_EXCHANGE, subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, scope: "account_info.read", client_id: APP, client_secret: SECRET });

/** A fresh user for each first-time authorization. */
function users() {
  let count = 0;
  let current = null;
  return {
    next() {
      count++;
      current = { account_id: `dbid:bench-user-${count}`, uid: String(count) };
      return { state: `s${count}`, query: authorizationQuery(APP, `s${count}`, { token_access_type: "offline" }) };
    },
    current: () => current,
  };
}

const tokenForm = (pairs) => new URLSearchParams({ ...pairs, client_id: APP, client_secret: SECRET });
const exchangeForm = (code) => tokenForm({ grant_type: "authorization_code", code, code_verifier: VERIFIER, redirect_uri: REDIRECT });
const refreshForm = (refreshToken) => tokenForm({ grant_type: "refresh_token", refresh_token: refreshToken });

/**
 * `{ name, flows: { exchange, refresh, bearer, machine?, narrow? } }` through `server.fetch`, over
 * `storage`, with the package's `createAuthServer` and `secretDigest`; `machine` (the client
 * credentials grant) and `narrow` (token exchange) when `machineStorage` is given.
 */
export async function edgegrantSubject(pkg, storage, { name = "edgegrant", machineStorage } = {}) {
  const user = users();
  const server = benchServer(pkg, storage, user.current);
  const tokenRequest = (form) => new Request(`${ORIGIN}/oauth2/token`, { method: "POST", headers: { "content-type": FORM }, body: form });
  const machines = machineStorage && machineServer(pkg, machineStorage);

  /** First-time authorization of a fresh user: consent page, consent, code exchange. */
  async function authorizeAndExchange() {
    const { state, query } = user.next();

    const page = await server.fetch(new Request(`${ORIGIN}/oauth2/authorize?${query}`));
    expect(page.status === 200 && (await page.text()).includes('data-page="consent"'), "edgegrant consent page", page);

    const consent = await server.fetch(
      new Request(`${ORIGIN}/oauth2/authorize`, {
        method: "POST",
        headers: { "content-type": FORM, "sec-fetch-site": "same-origin" },
        body: new URLSearchParams({ query, decision: "allow" }),
      }),
    );
    const location = consent.status === 302 ? new URL(consent.headers.get("location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === state, "edgegrant consent", consent);

    const response = await server.fetch(tokenRequest(exchangeForm(code)));
    const tokens = response.status === 200 ? await response.json() : {};
    expect(tokens.access_token && tokens.refresh_token, "edgegrant code exchange", response);
    return tokens;
  }

  const setup = await authorizeAndExchange();
  // The token the narrow flow exchanges: the app's own, by client credentials.
  const subject = machines && (await (await machines.fetch(tokenRequest(machineForm()))).json()).access_token;
  // The bound flow's: the app's own too, bound to a key by a proof at the token endpoint, and
  // the proof its API call carries.
  let boundCall;
  if (machines) {
    const proof = await dpopProofs();
    const request = tokenRequest(machineForm());
    request.headers.set("dpop", await proof("POST", `${ORIGIN}/oauth2/token`));
    const bound = await (await machines.fetch(request)).json();
    expect(bound.token_type === "DPoP", "edgegrant bound token", bound);
    boundCall = { authorization: `DPoP ${bound.access_token}`, dpop: await proof("GET", `${ORIGIN}${GET_ACCOUNT}`, bound.access_token) };
  }

  return {
    name,
    flows: {
      async exchange() {
        await authorizeAndExchange();
      },
      // edgegrant's refresh tokens are reusable: the same one every time, a new access token back.
      async refresh() {
        const response = await server.fetch(tokenRequest(refreshForm(setup.refresh_token)));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.access_token && body.token_type === "bearer", "edgegrant refresh", response);
      },
      async bearer() {
        const response = await server.fetch(new Request(`${ORIGIN}${GET_ACCOUNT}`, { headers: { authorization: `Bearer ${setup.access_token}` } }));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.account_id === "dbid:bench-user-1", "edgegrant bearer call", response);
      },
      ...(machines && {
        async machine() {
          const response = await machines.fetch(tokenRequest(machineForm()));
          const body = response.status === 200 ? await response.json() : {};
          expect(body.access_token && !body.refresh_token, "edgegrant client credentials", response);
        },
        async narrow() {
          const response = await machines.fetch(tokenRequest(narrowForm(subject)));
          const body = response.status === 200 ? await response.json() : {};
          expect(body.access_token && body.issued_token_type === ACCESS_TOKEN_TYPE, "edgegrant token exchange", response);
        },
        // A bearer check of a DPoP-bound token with its proof (the proof read and checked, its
        // ES256 signature verified by WebCrypto), on the client credentials server.
        async bound() {
          const response = await machines.fetch(new Request(`${ORIGIN}${GET_ACCOUNT}`, { headers: boundCall }));
          const body = response.status === 200 ? await response.json() : {};
          expect(body.client_id === APP, "edgegrant DPoP-bound call", response);
        },
      }),
    },
  };
}

/** A header of a reply (pairs), by lower-case name. */
const header = (reply, name) => reply.headers.find(([key]) => key.toLowerCase() === name)?.[1];

/**
 * `{ name, flows: { exchange, refresh, bearer, machine?, narrow? } }` through the plain-value entry `server.handle`:
 * each request as node:http has it (`req.url`, `req.rawHeaders`, the body's bytes), the signed-in
 * user passed along; a reply is read as sent (status, headers, body text), and an authorized API
 * call is answered by the host with a small JSON string, as the Fetch subject's api hook does.
 */
export async function edgegrantPlainSubject(pkg, storage, { name = "edgegrant (handle)", machineStorage } = {}) {
  const user = users();
  const server = benchServer(pkg, storage, user.current);
  const machines = machineStorage && machineServer(pkg, machineStorage);
  // A url-encoded POST as it arrives: the client's encoding, the bytes on the wire.
  const post = (url, form, extra = []) => {
    const body = encoder.encode(form.toString());
    return { method: "POST", url, headers: ["host", HOST, "content-type", FORM, "content-length", String(body.length), ...extra], body };
  };

  async function authorizeAndExchange() {
    const { state, query } = user.next();

    const page = await server.handle({ method: "GET", url: `/oauth2/authorize?${query}`, headers: ["host", HOST], user: user.current() });
    expect(page.kind === "reply" && page.status === 200 && page.body.includes('data-page="consent"'), "edgegrant (handle) consent page", page);

    const consent = await server.handle({
      ...post("/oauth2/authorize", new URLSearchParams({ query, decision: "allow" }), ["sec-fetch-site", "same-origin"]),
      user: user.current(),
    });
    const location = consent.kind === "reply" && consent.status === 302 ? new URL(header(consent, "location")) : null;
    const code = location?.searchParams.get("code");
    expect(code && location.searchParams.get("state") === state, "edgegrant (handle) consent", consent);

    const reply = await server.handle(post("/oauth2/token", exchangeForm(code)));
    const tokens = reply.kind === "reply" && reply.status === 200 ? JSON.parse(reply.body) : {};
    expect(tokens.access_token && tokens.refresh_token, "edgegrant (handle) code exchange", reply);
    return tokens;
  }

  const setup = await authorizeAndExchange();
  const subject = machines && JSON.parse((await machines.handle(post("/oauth2/token", machineForm()))).body).access_token;
  let boundCall;
  if (machines) {
    const proof = await dpopProofs();
    const reply = await machines.handle(post("/oauth2/token", machineForm(), ["dpop", await proof("POST", `${ORIGIN}/oauth2/token`)]));
    const bound = JSON.parse(reply.body);
    expect(bound.token_type === "DPoP", "edgegrant (handle) bound token", reply);
    const dpop = await proof("GET", `${ORIGIN}${GET_ACCOUNT}`, bound.access_token);
    boundCall = { method: "GET", url: GET_ACCOUNT, headers: ["host", HOST, "authorization", `DPoP ${bound.access_token}`, "dpop", dpop] };
  }
  const bearer = { method: "GET", url: GET_ACCOUNT, headers: ["host", HOST, "authorization", `Bearer ${setup.access_token}`] };

  return {
    name,
    /** The access token the bearer flow presents (the floor of that check hashes the same). */
    accessToken: setup.access_token,
    flows: {
      async exchange() {
        await authorizeAndExchange();
      },
      async refresh() {
        const reply = await server.handle(post("/oauth2/token", refreshForm(setup.refresh_token)));
        const body = reply.kind === "reply" && reply.status === 200 ? JSON.parse(reply.body) : {};
        expect(body.access_token && body.token_type === "bearer", "edgegrant (handle) refresh", reply);
      },
      async bearer() {
        const result = await server.handle(bearer);
        // The host answers the authorized call; the client reads the JSON.
        const sent = result.kind === "serve" ? JSON.stringify({ account_id: result.principal.account_id }) : "{}";
        expect(JSON.parse(sent).account_id === "dbid:bench-user-1", "edgegrant (handle) bearer call", result);
      },
      ...(machines && {
        async machine() {
          const reply = await machines.handle(post("/oauth2/token", machineForm()));
          const body = reply.kind === "reply" && reply.status === 200 ? JSON.parse(reply.body) : {};
          expect(body.access_token && !body.refresh_token, "edgegrant (handle) client credentials", reply);
        },
        async narrow() {
          const reply = await machines.handle(post("/oauth2/token", narrowForm(subject)));
          const body = reply.kind === "reply" && reply.status === 200 ? JSON.parse(reply.body) : {};
          expect(body.access_token && body.issued_token_type === ACCESS_TOKEN_TYPE, "edgegrant (handle) token exchange", reply);
        },
        async bound() {
          const result = await machines.handle(boundCall);
          const sent = result.kind === "serve" ? JSON.stringify({ client_id: result.principal.app }) : "{}";
          expect(JSON.parse(sent).client_id === APP, "edgegrant (handle) DPoP-bound call", result);
        },
      }),
    },
  };
}
