// The race suite's identity profile (races.mjs, the assertion race): the standards configuration
// of pkg/test/fixtures.mjs trusting one identity provider, https://idp.example — the conformance
// setup standards-identity-assertions' provider and its fixture key (P-256, d = 32 bytes of 7) —
// whose subjects race-0@corp.example … race-15@corp.example are accounts of their own here; and
// the identity assertions (ID-JAG) that provider signs for conf-app, presented with the
// JWT-bearer grant (RFC 7523 §2.1) by conf-app authenticated with its secret.
//
// Kept out of standardsConfig(): other tests use that one, some with the module for configured
// apps, which refuses identity_assertions.
import { createPrivateKey, randomUUID, sign } from "node:crypto";
import { CONF_APP, CONF_SECRET, form, standardsConfig } from "../../pkg/test/fixtures.mjs";

export const IDP = "https://idp.example";
export const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** How many provider subjects are mapped: round n presents one for race-(n mod SUBJECTS). */
export const SUBJECTS = 16;

const b64 = (bytes) => Buffer.from(bytes).toString("base64url");
// The provider's public key, as the conformance setup lists it, and its private half.
const PUBLIC = { kty: "EC", crv: "P-256", x: "HhhTL9R1TALzBB2cdc6zO4P_2BrHzk_ogsyxyYvFiW4", y: "pGwxHE4v9A3ZajZT5uRURdMt_khuztdcepDGoYiBwKM" };
const KEY = createPrivateKey({ key: { ...PUBLIC, d: b64(Buffer.alloc(32, 7)) }, format: "jwk" });

const subjectOf = (n) => `race-${n % SUBJECTS}@corp.example`;
/** The account a subject is here: its own, beside the other races' (dbid:race…). */
export const identityAccountOf = (n) => ({ account_id: `dbid:idjag${String(n % SUBJECTS).padStart(30, "0")}`, uid: String(5000 + (n % SUBJECTS)) });

/** The standards configuration trusting the provider, its subjects mapped to their accounts. */
export function identityConfig() {
  const base = standardsConfig();
  const accounts = Object.fromEntries(Array.from({ length: SUBJECTS }, (_, i) => [subjectOf(i), identityAccountOf(i)]));
  const provider = { issuer: IDP, jwks: { keys: [{ ...PUBLIC, kid: "idp-1" }] }, accounts };
  return { ...base, profile: { ...base.profile, identity_assertions: { providers: [provider] } } };
}

/**
 * A fresh identity assertion for round `n` (its own jti), for conf-app, issued now and living
 * five minutes: the hosts judge it on the real clock.
 */
export function identityAssertion(n, now = Math.floor(Date.now() / 1000)) {
  const header = { alg: "ES256", kid: "idp-1", typ: "oauth-id-jag+jwt" };
  const claims = { iss: IDP, sub: subjectOf(n), aud: standardsConfig().profile.issuer, client_id: CONF_APP, jti: `race-${n}-${randomUUID()}`, iat: now, exp: now + 300 };
  const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(claims))}`;
  return `${input}.${b64(sign("sha256", Buffer.from(input), { key: KEY, dsaEncoding: "ieee-p1363" }))}`;
}

/** The token request presenting `assertion`, conf-app authenticated (client_secret_basic). */
export function assertionRequest(assertion) {
  const request = form({ grant_type: JWT_BEARER, assertion });
  const basic = Buffer.from(`${CONF_APP}:${CONF_SECRET}`).toString("base64");
  return { path: "/oauth2/token", ...request, headers: [...request.headers, ["authorization", `Basic ${basic}`]] };
}
