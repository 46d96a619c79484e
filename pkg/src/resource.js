// A resource server's side of the standards profile, for an API on another host than the
// authorization server (an MCP server, say): its protected-resource metadata (RFC 9728), the
// challenge that points clients there, and the token check by introspection (RFC 7662) — the
// token must be live, issued for this resource (RFC 8707 `aud`) and carry the required scope;
// with `dpop`, a token bound to a key (RFC 9449, `cnf.jkt`) only with a proof of that key.
// The authorization server lists this resource in its profile's `resources`.

import { accessToken, canonicalResource, checkDpopProof, resourceChallenge, resourceMetadata } from "./core.js";

/**
 * `resource`: this API's identifier (as the authorization server lists it); `issuer`: the
 * authorization server's; `scopes`: the scopes its endpoints require; `introspection`: the
 * endpoint, and this resource server's client credentials there (a confidential app). The
 * metadata and the canonical identifiers are the core's (the wasm module: import edgegrant/node
 * or edgegrant/workers first).
 */
export function protectedResource({ resource, issuer, scopes = [], introspection, dpop = false, cache, clock = () => Date.now() }) {
  const answers = cache === undefined ? null : introspectionCache(cache, clock);
  const audienceName = canonicalResource(resource);
  if (audienceName === null) throw new Error("edgegrant: resource must be an http(s) URL without query or fragment");
  // DPoP proofs taken: within `proofWindow` seconds of now either way (300 by default).
  const proofWindow = dpop === false ? null : (dpop === true ? undefined : dpop.proofWindow) ?? 300;
  const { url: metadataUrl, document } = resourceMetadata(resource, issuer, scopes, proofWindow !== null);
  const metadataPath = new URL(metadataUrl).pathname;
  const basic = `Basic ${btoa(`${encodeURIComponent(introspection.clientId)}:${encodeURIComponent(introspection.clientSecret)}`)}`;

  /** RFC 6750 §3 challenge naming the metadata (RFC 9728 §5.1). */
  const challenge = (error, extra = "") =>
    `Bearer realm="api"${error ? `, error="${error}"` : ""}${extra}, resource_metadata="${metadataUrl}"`;
  // Every refusal is the core's, as it answers at its own API: one parsing of the header, one
  // status and challenge per reason (a malformed header is 400 invalid_request there and here).
  // A token that came under the DPoP scheme (`dpop`) is refused on the DPoP challenge.
  const refuse = (refusal, requiredScope, dpop = false) => {
    const challenges = proofWindow === null ? "bearer" : dpop ? "dpop" : "bearer_and_dpop";
    const { status, challenge: value } = resourceChallenge(refusal, requiredScope, metadataUrl, challenges);
    return new Response(null, { status, headers: { "WWW-Authenticate": value, "Cache-Control": "no-store" } });
  };

  return {
    /** Where the metadata is served, on this API's host. */
    metadataPath,
    /** The metadata document (answer `GET metadataPath` with it). */
    metadata: () =>
      new Response(document, {
        headers: { "Content-Type": "application/json", "Cache-Control": "public, max-age=3600", "Access-Control-Allow-Origin": "*" },
      }),
    challenge,
    /**
     * Checks the request's bearer token for `requiredScope`: resolves `{ token }` (the
     * introspection answer) when it may be served, or `{ response }` — the 401/403 to send.
     * Throws if the introspection endpoint cannot be reached (answer 503 then).
     */
    async check(request, requiredScope) {
      // A 401 names the scope too (RFC 6750 §3), so that a client knows what to ask for (MCP).
      const presented = accessToken(request.headers.get("authorization"), proofWindow !== null);
      if (presented.refusal) return { response: refuse(presented.refusal, requiredScope) };
      // Under the DPoP scheme, its proof first (no introspection for a proof that fails): for
      // this request's method and URL, this token, now; its key is the token's to match.
      let proven = null;
      if (presented.dpop) {
        const url = new URL(request.url);
        const checked = await checkDpopProof({
          method: request.method,
          uri: `${url.origin}${url.pathname}`,
          proof: request.headers.get("dpop"),
          accessToken: presented.token,
          now: Math.floor(clock() / 1000),
          window: proofWindow,
        });
        if (checked.refusal) return { response: refuse(checked.refusal, requiredScope, presented.dpop) };
        proven = checked.thumbprint;
      }
      const key = answers && (await answers.keyOf(presented.token));
      let token = answers?.get(key);
      if (token === undefined) {
        const answer = await fetch(introspection.endpoint, {
          method: "POST",
          headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ token: presented.token }),
        });
        if (!answer.ok) throw new Error(`edgegrant: introspection answered ${answer.status}`);
        token = await answer.json();
        answers?.put(key, token);
      }
      const audience = Array.isArray(token.aud) ? token.aud : token.aud === undefined ? [] : [token.aud];
      // A live access token (a bearer token that expires: a refresh token is neither, and is
      // never served), issued by this authorization server, for this resource.
      const type = String(token.token_type).toLowerCase();
      const access = (type === "bearer" || (type === "dpop" && proofWindow !== null)) && Number.isFinite(token.exp) && token.exp * 1000 > clock();
      if (token.active !== true || !access || token.iss !== issuer || !audience.some((aud) => typeof aud === "string" && canonicalResource(aud) === audienceName)) {
        return { response: refuse("invalid_token", requiredScope, presented.dpop) };
      }
      // RFC 9449 §7: a bound token only with a proof of its key — never as a bearer token.
      const bound = token.cnf?.jkt;
      if ((bound !== undefined || type === "dpop") && bound !== proven) {
        return { response: refuse("token_bound_to_another_key", requiredScope, presented.dpop) };
      }
      if (requiredScope && !String(token.scope ?? "").split(" ").includes(requiredScope)) {
        return { response: refuse("insufficient_scope", requiredScope, presented.dpop) };
      }
      return { token };
    },
  };
}

/**
 * Live introspection answers kept for a while (`cache: { maxAge, maxEntries }`): by the token's
 * SHA-256 (never the token itself), each until `maxAge` seconds after it was fetched or the
 * token's `exp`, whichever comes first, at most `maxEntries` of them (the oldest go first).
 * An answer that is not a live token is never kept. What it costs: a token revoked at the
 * authorization server is still served here for up to `maxAge` seconds.
 */
function introspectionCache({ maxAge, maxEntries = 10_000, ...unknown }, clock) {
  const names = Object.keys(unknown);
  if (names.length > 0) throw new TypeError(`edgegrant: protectedResource: unknown cache option ${names[0]}; the options are maxAge, maxEntries`);
  if (!(Number.isFinite(maxAge) && maxAge > 0)) throw new TypeError("edgegrant: protectedResource: cache.maxAge must be a number of seconds above 0");
  if (!(Number.isInteger(maxEntries) && maxEntries > 0)) throw new TypeError("edgegrant: protectedResource: cache.maxEntries must be a whole number above 0");
  /** digest → { token, until } (ms), in the order they were kept. */
  const kept = new Map();
  const encoder = new TextEncoder();
  return {
    async keyOf(token) {
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(token)));
      return btoa(String.fromCharCode(...digest));
    },
    get(key) {
      const entry = kept.get(key);
      if (entry === undefined) return undefined;
      if (clock() < entry.until) return entry.token;
      kept.delete(key);
      return undefined;
    },
    put(key, token) {
      if (token?.active !== true || !Number.isFinite(token.exp)) return;
      const now = clock();
      const until = Math.min(now + maxAge * 1000, token.exp * 1000);
      if (until <= now) return;
      kept.delete(key);
      kept.set(key, { token, until });
      if (kept.size > maxEntries) kept.delete(kept.keys().next().value);
    },
  };
}
