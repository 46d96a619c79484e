/** What introspection said of a live token (RFC 7662 §2.2). */
export interface IntrospectedToken {
  active: true;
  aud?: string[];
  client_id: string;
  exp?: number;
  iss: string;
  scope: string;
  sub: string;
  token_type?: string;
  /** The key a token bound by DPoP is good with (RFC 9449 §6.2). */
  cnf?: { jkt: string };
}

/** A resource server on another host than the authorization server (RFC 9728, 7662, 8707). */
export interface ProtectedResource {
  /** Where the metadata is served, on this API's host. */
  metadataPath: string;
  /** The metadata document, as a response to `GET metadataPath`. */
  metadata(): Response;
  /** The RFC 6750 challenge, naming the metadata. */
  challenge(error?: string, extra?: string): string;
  /** The token of `request` checked for `requiredScope`: `{ token }` to serve, or `{ response }` to send. */
  check(request: Request, requiredScope?: string): Promise<{ token: IntrospectedToken; response?: undefined } | { response: Response; token?: undefined }>;
}

export function protectedResource(options: {
  /** This API's resource identifier, as the authorization server lists it. */
  resource: string;
  /** The authorization server's issuer identifier. */
  issuer: string;
  /** The scopes this API's endpoints require. */
  scopes?: string[];
  /** The introspection endpoint, and this resource server's client credentials there. */
  introspection: { endpoint: string; clientId: string; clientSecret: string };
  /**
   * Take tokens bound to a key (DPoP, RFC 9449): `Authorization: DPoP <token>` with a proof whose
   * key is the token's `cnf.jkt`, made within `proofWindow` seconds of now (default 300); a bound
   * token presented as a bearer token is refused. Default `false`: a bound token is refused. No
   * nonces and no record of proofs: a proof captured with its token could be replayed to the
   * same URL within the window.
   */
  dpop?: boolean | { proofWindow?: number };
  /**
   * Keep live introspection answers, so that a token's next calls cost no round trip: each for at
   * most `maxAge` seconds and never past the token's `exp`, at most `maxEntries` of them (default
   * 10000; the oldest go first), by the token's SHA-256 (the token itself is not kept). Default:
   * off, every request is introspected. What it costs: a token revoked at the authorization server
   * (a revocation, an unlink, its app removed) is still served here for up to `maxAge` seconds.
   */
  cache?: { maxAge: number; maxEntries?: number };
  /** Milliseconds since the epoch (default `Date.now`): a token's expiry and a proof's age. */
  clock?: () => number;
}): ProtectedResource;
