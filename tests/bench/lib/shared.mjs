// What every benchmark subject shares, in Node and in workerd: the client's registration values,
// PKCE values from RFC 7636 Appendix B (client-side work, not measured), the API call, and the
// check that makes a flow throw unless it got its success response.
export const APP = "bench-app";
export const ORIGIN = "https://auth.example.com";
export const SECRET = "bench-secret-7f3a9c2e41d8b605"; // the workers peer generates its own
export const REDIRECT = "https://app.example.com/oauth/callback";
export const SCOPES = "account_info.read files.metadata.read";
export const GET_ACCOUNT = "/2/users/get_current_account";
export const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
export const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/** Throws unless `ok`; `response` (a Response, or a result of the plain-value entry) says what came instead. */
export function expect(ok, what, response) {
  if (!ok) throw new Error(`${what}: unexpected response ${response?.status ?? response?.kind}${response?.refusal ? ` (${response.refusal})` : ""}`);
}

/** The authorization request every subject's client sends: PKCE S256, the bench scopes. */
export const authorizationQuery = (clientId, state, extra = {}) =>
  new URLSearchParams({
    client_id: clientId,
    response_type: "code",
    redirect_uri: REDIRECT,
    scope: SCOPES,
    ...extra,
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
    state,
  }).toString();
