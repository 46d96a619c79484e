// What both subjects of the workerd benchmark share: the client's registration values, PKCE
// values from RFC 7636 Appendix B (client-side work, not measured), the API call, and the check
// that makes a flow throw unless it got its success response.
export const ORIGIN = "https://auth.example.com";
export const SECRET = "bench-secret-7f3a9c2e41d8b605"; // edgegrant's; the peer generates its own
export const REDIRECT = "https://app.example.com/oauth/callback";
export const SCOPES = "account_info.read files.metadata.read";
export const GET_ACCOUNT = "/2/users/get_current_account";
export const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
export const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

export function expect(ok, what, response) {
  if (!ok) throw new Error(`${what}: unexpected response ${response?.status}`);
}
