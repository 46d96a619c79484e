// A test enterprise identity provider, in a process of its own with a signing key of its own,
// for enterprise-managed authorization (ID-JAG): it publishes its public key at its `jwks_uri`
// (over https, with a certificate of the test's CA), signs its users in, and — as the ID-JAG
// draft's §4.3 token exchange says — turns a signed-in user's ID token into an Identity Assertion
// JWT Authorization Grant for one client at one authorization server. Nothing here is
// edgegrant's: the server under test only ever sees its jwks_uri and the assertions it signs.
//
//   const idp = await startIdentityProvider({ key, cert, users: { "alice@corp.example": "pw" } });
//   idp.issuer, idp.jwksUri, idp.keyFetches(), await idp.close()
//
// Its token endpoint (RFC 8693): grant_type token-exchange, subject_token an ID token it issued
// (`POST /session` with username and password gives one), subject_token_type id_token,
// requested_token_type id-jag, audience the authorization server's issuer, client_id the client
// there (this test provider knows each client by that id), optional scope and resource.
import { fork } from "node:child_process";
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import https from "node:https";
import { fileURLToPath } from "node:url";

const ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG = "urn:ietf:params:oauth:token-type:id-jag";
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";

/** Starts the provider in a child process; resolves its handle once it listens. */
export async function startIdentityProvider({ key, cert, users }) {
  const child = fork(fileURLToPath(import.meta.url), [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const pending = new Map();
  let next = 0;
  child.on("message", ({ id, result }) => {
    pending.get(id)?.(result);
    pending.delete(id);
  });
  const call = (message) =>
    new Promise((ok) => {
      const id = next++;
      pending.set(id, ok);
      child.send({ id, ...message });
    });
  const { issuer } = await call({ op: "start", key: String(key), cert: String(cert), users });
  return {
    issuer,
    jwksUri: `${issuer}/jwks.json`,
    tokenEndpoint: `${issuer}/token`,
    sessionEndpoint: `${issuer}/session`,
    /** How often its key set was fetched. */
    keyFetches: async () => (await call({ op: "stats" })).keyFetches,
    close: () =>
      new Promise((ok) => {
        child.once("exit", ok);
        child.disconnect();
      }),
  };
}

/** The provider itself (the child process). */
function serve({ key, cert, users }) {
  const signing = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const kid = randomBytes(6).toString("base64url");
  const jwk = { ...signing.publicKey.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" };
  const sessions = new Map(); // ID token -> subject
  const stats = { keyFetches: 0 };
  let issuer;
  const b64 = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
  const jwt = (header, claims) => {
    const input = `${b64(header)}.${b64(claims)}`;
    return `${input}.${sign("sha256", Buffer.from(input), { key: signing.privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")}`;
  };
  const answer = (res, status, body, headers = {}) => res.writeHead(status, { "Content-Type": "application/json", "Cache-Control": "no-store", ...headers }).end(JSON.stringify(body));
  const server = https.createServer({ key, cert }, async (req, res) => {
    const url = new URL(req.url, issuer);
    if (req.method === "GET" && url.pathname === "/jwks.json") {
      stats.keyFetches++;
      return answer(res, 200, { keys: [jwk] }, { "Cache-Control": "max-age=300" });
    }
    let body = "";
    for await (const chunk of req) body += chunk;
    const form = new URLSearchParams(body);
    if (req.method === "POST" && url.pathname === "/session") {
      const subject = form.get("username");
      if (!users[subject] || users[subject] !== form.get("password")) return answer(res, 401, { error: "access_denied" });
      const idToken = randomBytes(24).toString("base64url");
      sessions.set(idToken, subject);
      return answer(res, 200, { id_token: idToken });
    }
    if (req.method === "POST" && url.pathname === "/token") {
      if (form.get("grant_type") !== TOKEN_EXCHANGE) return answer(res, 400, { error: "unsupported_grant_type" });
      if (form.get("requested_token_type") !== ID_JAG || form.get("subject_token_type") !== ID_TOKEN) return answer(res, 400, { error: "invalid_request" });
      const subject = sessions.get(form.get("subject_token"));
      if (!subject) return answer(res, 400, { error: "invalid_grant" });
      const audience = form.get("audience");
      const clientId = form.get("client_id");
      if (!audience || !clientId) return answer(res, 400, { error: "invalid_request" });
      const now = Math.floor(Date.now() / 1000);
      const claims = { iss: issuer, sub: subject, aud: audience, client_id: clientId, jti: randomBytes(16).toString("base64url"), iat: now, exp: now + 300 };
      if (form.get("scope")) claims.scope = form.get("scope");
      if (form.get("resource")) claims.resource = form.get("resource");
      const assertion = jwt({ alg: "ES256", typ: "oauth-id-jag+jwt", kid }, claims);
      return answer(res, 200, { access_token: assertion, issued_token_type: ID_JAG, token_type: "N_A", expires_in: 300, ...(claims.scope ? { scope: claims.scope } : {}) });
    }
    answer(res, 404, { error: "not_found" });
  });
  return new Promise((ok) =>
    server.listen(0, "127.0.0.1", () => {
      issuer = `https://127.0.0.1:${server.address().port}`;
      ok({ issuer, stats, close: () => server.close() });
    }),
  );
}

if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  let provider;
  process.on("message", async ({ id, op, ...options }) => {
    if (op === "start") {
      provider = await serve(options);
      process.send({ id, result: { issuer: provider.issuer } });
    } else if (op === "stats") process.send({ id, result: { ...provider.stats } });
  });
  process.on("disconnect", () => {
    provider?.close();
    process.exit(0);
  });
}
