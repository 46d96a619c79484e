// The floor of a hashed bearer check in Node, driven as edgegrant's `server.handle` is in the
// plain-value subject (the same request values in, the host's JSON answer out and read back):
// in between, only what such a check cannot go without — one crossing into the wasm module that
// hashes the token (`secretDigest`: SHA-256, then base64url), and three Map lookups of the
// records it names, as issue 29 defines this floor (a check of edgegrant reads two since the
// account's ledger: the token and the ledger). Only a bearer flow.
import { URL } from "node:url";
import { secretDigest } from "../../../../pkg/src/node.js";
import { GET_ACCOUNT, ORIGIN, expect } from "../../lib/shared.mjs";

const ACCOUNT = "dbid:bench-user-1";
const HOST = new URL(ORIGIN).host;

/** `accessToken`: the token edgegrant's plain-value subject presents, so that the same bytes are hashed. */
export function plainFloorSubject({ name = "bearer floor", accessToken }) {
  // Each record names the next, as a token names its grant and a grant its link.
  const records = new Map([
    [`token:${secretDigest(accessToken)}`, { grant: "grant:1" }],
    ["grant:1", { link: "link:1" }],
    ["link:1", { account_id: ACCOUNT }],
  ]);
  const check = async ({ headers }) => {
    let authorization;
    for (let i = 0; i + 1 < headers.length; i += 2) if (headers[i].toLowerCase() === "authorization") authorization = headers[i + 1];
    const token = records.get(`token:${secretDigest(authorization.slice("Bearer ".length))}`);
    const grant = token && records.get(token.grant);
    const link = grant && records.get(grant.link);
    return link ? { kind: "serve", principal: { account_id: link.account_id } } : { kind: "reply", status: 401 };
  };
  const bearer = { method: "GET", url: GET_ACCOUNT, headers: ["host", HOST, "authorization", `Bearer ${accessToken}`] };
  return {
    name,
    flows: {
      async bearer() {
        const result = await check(bearer);
        const sent = result.kind === "serve" ? JSON.stringify({ account_id: result.principal.account_id }) : "{}";
        expect(JSON.parse(sent).account_id === ACCOUNT, "bearer floor", result);
      },
    },
  };
}
