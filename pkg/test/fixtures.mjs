// Shared fixtures for the package tests: a configuration like the Rust harness's, PKCE values
// from RFC 7636 Appendix B, and small helpers.
import { createAuthServer, secretDigest } from "../src/node.js";
import { memoryStorage } from "../src/adapters/memory.js";

export const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
export const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
export const PKCE_APP = "pkce-app";
export const PKCE_REDIRECT = "http://127.0.0.1:8765/cb";
export const CONF_APP = "conf-app";
export const CONF_SECRET = "conf-secret-0123456789";
export const CONF_REDIRECT = "https://conf.example/cb";
export const GET_ACCOUNT = "/2/users/get_current_account";
export const ALICE = { account_id: "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", uid: "12345" };

/** The tests' server key (32 bytes, base64url): public, for tests only. */
export const SERVER_KEY = "dGVzdHMtZml4dHVyZS1zZXJ2ZXIta2V5LTMyYnl0ZXM";

export function config() {
  return {
    server_key: SERVER_KEY,
    apps: [
      {
        key: PKCE_APP,
        name: "PKCE App",
        redirect_uris: [PKCE_REDIRECT],
        permissions: { kind: "scoped", scopes: ["account_info.read", "files.metadata.read"] },
      },
      {
        key: CONF_APP,
        name: "Confidential App",
        secret_digest: secretDigest(CONF_SECRET),
        redirect_uris: [CONF_REDIRECT],
        permissions: { kind: "scoped", scopes: ["account_info.read", "files.content.write"] },
      },
    ],
    api_endpoints: { [GET_ACCOUNT]: "account_info.read", "/2/files/upload": "files.content.write" },
  };
}

/** The same apps in the standards profile: a public client's refresh token rotates (retry window 60 s). */
export const standardsConfig = () => ({ ...config(), profile: { kind: "standards", issuer: "https://auth.example" } });

export const pkceQuery = (state = "xyz") =>
  new URLSearchParams({
    client_id: PKCE_APP,
    response_type: "code",
    redirect_uri: PKCE_REDIRECT,
    token_access_type: "offline",
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
    state,
  }).toString();

/** Deterministic entropy: a counter in the first bytes. */
export function counterEntropy() {
  let n = 0;
  return () => {
    const bytes = new Uint8Array(112);
    new DataView(bytes.buffer).setUint32(0, ++n);
    new DataView(bytes.buffer).setUint32(32, n);
    new DataView(bytes.buffer).setUint32(64, n);
    return bytes;
  };
}

export const form = (pairs) => ({
  method: "POST",
  headers: [["content-type", "application/x-www-form-urlencoded"]],
  body: new TextEncoder().encode(new URLSearchParams(pairs).toString()),
});

/**
 * The fixture configuration served by `createAuthServer` over memory storage, on a hand-moved
 * clock, with `get_current_account` answering the principal's account id; `user` is who is
 * signed in (with any props the host keeps with a grant).
 */
export function testServer({ signedIn = true, user = ALICE, audit = [], storage = memoryStorage(), onAudit = (event) => audit.push(event), api = {} } = {}) {
  let now = 1_700_000_000;
  const srv = createAuthServer({
    serverKey: SERVER_KEY,
    apps: config().apps,
    apiEndpoints: config().api_endpoints,
    storage,
    clock: () => now,
    onAudit,
    hooks: {
      currentUser: async () => (signedIn ? user : null),
      api: { [GET_ACCOUNT]: async (principal) => Response.json({ account_id: principal.account_id }), ...api },
    },
  });
  return { srv, audit, now: () => now, advance: (s) => (now += s) };
}
