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
}): ProtectedResource;
