// The WebAssembly modules, loaded once per isolate or process: the server's (`initialize`, before
// any server call) and the PKCE client's (`initializeClient`, before `createPkceMachine`). The
// entry points do it: ./node.js both, ./workers.js the server's, ./browser.js the client's.
//
// On the request path each step crosses once each way, packed in bytes (./packed.js, and
// wasm/src/packed.rs); JSON only carries the configuration, audit events and the PKCE client's
// values.
import * as bindings from "../dist/edgegrant_wasm.js";
import * as clientBindings from "../dist/edgegrant_client.js";

let initialized = false;
let clientInitialized = false;
/** The server module's memory, where a request's steps are read (./packed.js). */
let memory;

/** Instantiates the server's core from a `WebAssembly.Module` or the module's bytes. Idempotent. */
export function initialize(module) {
  if (!initialized) {
    memory = bindings.initSync({ module }).memory;
    initialized = true;
  }
}

/** The server module's memory (its `buffer` changes when it grows). */
export const moduleMemory = () => memory;

/** Instantiates the PKCE client's module (dist/edgegrant_client_bg.wasm) likewise. Idempotent. */
export function initializeClient(module) {
  if (!clientInitialized) {
    clientBindings.initSync({ module });
    clientInitialized = true;
  }
}

function ready() {
  if (!initialized) throw new Error("edgegrant: call initialize(wasmModule) first (or import edgegrant/node or edgegrant/workers)");
}

function clientReady() {
  if (!clientInitialized) throw new Error("edgegrant: call initializeClient(clientWasmModule) first (or import edgegrant/node or edgegrant/browser)");
}

/** Throws a TypeError naming the function and what it takes, unless `holds`. */
export function expect(holds, what) {
  if (!holds) throw new TypeError(`edgegrant: ${what}`);
}

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

const U64_LIMIT = 2n ** 64n;
const NO_BODY = new Uint8Array(0);

/** A time as the client machine's u64: a safe non-negative integer number or a bigint, never rounded. */
function unixTime(now) {
  if (typeof now === "bigint" && now >= 0n && now < U64_LIMIT) return now;
  if (Number.isSafeInteger(now) && now >= 0) return BigInt(now);
  throw new Error(`edgegrant: invalid time ${String(now)}: expected a non-negative safe integer or bigint`);
}

/**
 * Headers as one string, names and values alternately joined by NUL (which HTTP forbids in
 * both), from node:http's rawHeaders, [name, value] pairs or a Headers object: one string
 * crosses into wasm instead of one per header.
 */
function joinedHeaders(headers) {
  if (headers === undefined || headers === null) return "";
  if (typeof headers === "string") return headers;
  if (Array.isArray(headers)) return (Array.isArray(headers[0]) ? headers.flat() : headers).join("\0");
  const flat = [];
  for (const [name, value] of headers) flat.push(name, value);
  return flat.join("\0");
}

/**
 * A validated configuration, ready to start requests. Throws an Error if the configuration is
 * unusable. Requests are the wasm module's objects: `step()` gives the first step, packed in
 * the module's memory (`readStep` in ./packed.js reads it), and what came of each step goes back
 * in one call that returns the next (see runRequest in ./server.js, the one loop over them).
 */
export function createCore(config) {
  expect(isObject(config), "createCore(config): config must be a configuration document (an object)");
  ready();
  const core = new bindings.Core(JSON.stringify(config));
  return {
    /**
     * Starts an HTTP request: `{ method, path, query, headers, body, user, source, scheme }`
     * (`headers` as rawHeaders, pairs, Headers or already NUL-joined; `body` a Uint8Array; `user`
     * `{ account_id, uid }` or null; `source` the client's address, which failed client
     * authentications are counted against; `scheme` "http" or "https" when the host knows how
     * the client reached it, so that a form from the same host on the other scheme is another
     * site's), at `now` (Unix seconds) with fresh `entropy`.
     */
    request({ method, path, query = "", headers, body, user, source, scheme }, now, entropy) {
      // The grant's props cross as JSON text, sealed by the core where a grant is made now.
      const props = user?.props === undefined || user.props === null ? undefined : JSON.stringify(user.props);
      return core.request(method, path, query, joinedHeaders(headers), body ?? NO_BODY, user?.account_id, user?.uid, user?.name ?? undefined, props, source ?? undefined, scheme ?? undefined, now, entropy);
    },
    /**
     * The partition the request is routed to (see the crate docs, "Partitions"): where every
     * record it touches lives. `null`: it needs no account's records and may run anywhere.
     * Pure and cheap (nothing is read, no secret hashed); the same values as `request`.
     */
    partitionOf({ method, path, query = "", headers, body, user }) {
      return core.partitionOf(method, path, query, joinedHeaders(headers), body ?? NO_BODY, user?.account_id, user?.uid) ?? null;
    },
    /**
     * The client the request names (its `client_id`, as presented: in the authorization request,
     * the token, revocation or introspection request's credentials, a registration's path) if it
     * is a well-formed app key, else null; never a secret. For a log of refusals.
     */
    namedClient({ method, path, query = "", headers, body }) {
      return core.namedClient(method, path, query, joinedHeaders(headers), body ?? NO_BODY) ?? null;
    },
    /** What in the configuration is valid but most likely a mistake, one line each (an API scope no app can hold). */
    warnings: () => core.warnings().split("\n").filter(Boolean),
    /**
     * Starts a credential check of the host's own: `attempters` as `{ account }` / `{ source }`
     * objects; `succeeded` false before the check (it is counted now, if it may go ahead), true
     * after a correct one (the count is taken back). They cross as two lists, each value whole:
     * a name typed at sign-in cannot spell another attempter.
     */
    attempts(attempters, succeeded, now, entropy) {
      const kinds = [];
      const values = [];
      for (const attempter of attempters) {
        for (const kind of ["account", "source"]) {
          if (attempter[kind] === undefined) continue;
          kinds.push(kind);
          values.push(String(attempter[kind]));
        }
      }
      return core.attempts(kinds, values, succeeded, now, entropy);
    },
    /** Starts an unlink of `app` for `accountId`, by "user" or "team_admin". */
    unlink: (app, accountId, by, now, entropy) => core.unlink(app, accountId, by, now, entropy),
    requiredScope: (endpoint) => core.requiredScope(endpoint),
    maxInputBytes: () => core.maxInputBytes(),
    /** How much of a body to `path` the core reads: its API endpoint's bound, else `maxInputBytes()`. */
    bodyLimit: (path) => core.bodyLimit(path),
  };
}

/** `{ tag: "ok" }` or `{ tag: "invalid", content: reason }`. */
export function checkConfig(config) {
  expect(isObject(config), "checkConfig(config): config must be a configuration document (an object)");
  ready();
  return JSON.parse(bindings.checkConfig(JSON.stringify(config)));
}

/**
 * The configuration with the legacy app `app` migrated to scopes (see the crate docs): the
 * document as given, but for that app's `permissions`, now `{ kind: "scoped", scopes }` with
 * the scopes its legacy access type stands for (the core's). Throws an Error if it cannot be:
 * an invalid document, an unknown app, one already scoped.
 */
export function migrateApp(config, app) {
  expect(isObject(config), "migrateApp(config, app): config must be a configuration document (an object)");
  expect(typeof app === "string", "migrateApp(config, app): app must be an app's key (a string)");
  const valid = (document) => {
    const check = checkConfig(document);
    if (check.tag !== "ok") throw new Error(check.content);
    return document;
  };
  // Rewritten here rather than by the core: writing a configuration's JSON would cost the
  // server module 5.3 KiB gzipped, for an operation an app console runs now and then.
  const apps = valid(config).apps ?? [];
  const legacy = apps.find((each) => each.key === app);
  // The core's own messages (ConfigError): asking the core for them cost 0.6 KiB more.
  if (legacy === undefined) throw new Error(`no app is registered as "${app}"`);
  if (legacy.permissions.kind !== "legacy") throw new Error(`app ${app} is already scoped`);
  const scopes = bindings.legacyScopes(legacy.permissions.access).split(" ");
  const migrated = { ...legacy, permissions: { kind: "scoped", scopes } };
  return valid({ ...config, apps: apps.map((each) => (each === legacy ? migrated : each)) });
}

/** The digest to register for an app secret (a non-empty string). */
export function secretDigest(secret) {
  expect(typeof secret === "string" && secret.length > 0, `secretDigest(secret): the secret must be a non-empty string, not ${describe(secret)}`);
  ready();
  return bindings.secretDigest(secret);
}

/**
 * Whether a form post may come from another site (CSRF), by the rule the core's consent form
 * follows: `Sec-Fetch-Site` decides when present (only `same-origin` passes), otherwise `Origin`,
 * when present, must name `host` — on `scheme` ("http" or "https"), when the host knows how the
 * client reached it. `headers` as rawHeaders, pairs or a Headers object; `host` the authority the
 * request was sent to (a Fetch Request's URL host).
 */
export function isCrossSite(headers, host, scheme) {
  expect(typeof host === "string", "isCrossSite(headers, host, scheme): host must be the authority the request was sent to (a string)");
  expect(scheme === undefined || scheme === null || scheme === "http" || scheme === "https", 'isCrossSite(headers, host, scheme): scheme must be "http", "https" or absent');
  expect(headers !== null && typeof headers === "object" && typeof headers[Symbol.iterator] === "function", "isCrossSite(headers, host, scheme): headers must be rawHeaders, [name, value] pairs or a Headers object");
  ready();
  const flat = ["host", host];
  for (const [name, value] of Array.isArray(headers) && !Array.isArray(headers[0]) ? pairsOf(headers) : headers) {
    if (name.toLowerCase() !== "host") flat.push(name, value);
  }
  return bindings.isCrossSite(flat.join("\0"), scheme ?? undefined);
}

/** A value as an error message names it: `undefined`, `an empty string`, `a number`, … */
export function describe(value) {
  if (value === null || value === undefined) return String(value);
  if (value === "") return "an empty string";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function* pairsOf(raw) {
  for (let i = 0; i + 1 < raw.length; i += 2) yield [raw[i], raw[i + 1]];
}

/** The canonical form of a resource identifier, as the core keeps it and puts it in `aud`; `null` for text that is none. */
export function canonicalResource(text) {
  ready();
  return bindings.canonicalResource(String(text)) ?? null;
}

/** The bearer token of an `Authorization` header's value (`null`: none) as the core reads it: `{ token }`, or `{ refusal }` (`"bearer_missing"`, `"malformed_bearer"`). */
export function bearerToken(authorization) {
  ready();
  const [kind, value] = bindings.bearerToken(authorization ?? undefined).split("\0");
  return kind === "t" ? { token: value } : { refusal: value };
}

/**
 * The access token of an `Authorization` header's value (`null`: none) as the core reads it,
 * under `Bearer` or, when `dpop`, `DPoP` too: `{ token, dpop }` (`dpop`: it came under the
 * `DPoP` scheme), or `{ refusal }`.
 */
export function accessToken(authorization, dpop) {
  ready();
  const [kind, value] = bindings.accessToken(authorization ?? undefined, Boolean(dpop)).split("\0");
  return kind === "r" ? { refusal: value } : { token: value, dpop: kind === "d" };
}

/**
 * The DPoP proof of a request to a resource server, checked by the core as its own API checks
 * one (RFC 9449 §4.3) but for the signature, which is verified here with WebCrypto: `method`,
 * the resource URL it was sent to (`uri`, no query), its `DPoP` header (`null`: none), the
 * access token, `now` and `window` in seconds. `{ thumbprint }` (the key's, which the token's
 * `cnf.jkt` must name) or `{ refusal }` (`"dpop_proof_invalid:<why>"`).
 */
export async function checkDpopProof({ method, uri, proof, accessToken: token, now, window }) {
  ready();
  const [kind, ...parts] = bindings.dpopProof(String(method), String(uri), proof ?? undefined, String(token), now, window).split("\0");
  if (kind !== "p") return { refusal: `dpop_proof_invalid:${parts[0]}` };
  const [thumbprint, alg, key] = parts;
  const [header, claims, signature] = proof.split(".");
  const bytes = Uint8Array.from(atob(signature.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const holds = await verifySignature({ alg, key, message: `${header}.${claims}`, signature: bytes });
  return holds ? { thumbprint } : { refusal: "dpop_proof_invalid:signature" };
}

/** WebCrypto's parameters for each algorithm of a signature the core asks to verify: to import the key, to verify. */
const SIGNATURES = {
  ES256: [{ name: "ECDSA", namedCurve: "P-256" }, { name: "ECDSA", hash: "SHA-256" }],
  RS256: [{ name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, { name: "RSASSA-PKCS1-v1_5" }],
};

// Public keys imported before, by algorithm and JWK text: a client signs its assertions and
// proofs with the same key request after request, and importing one costs WebCrypto about as
// much as verifying with it (Node 20: 0.37 ms and 0.38 ms for P-256). Bounded: emptied when full.
const importedKeys = new Map();
const MAX_IMPORTED_KEYS = 1024;

/**
 * Whether `signature` (bytes) over `message` (text) holds under `key` (a JWK, as text) with
 * `alg`, by the platform's WebCrypto — what the core's verify step asks. A key or a signature
 * WebCrypto cannot take does not hold.
 */
export async function verifySignature({ alg, key, message, signature }) {
  const [imported, verify] = SIGNATURES[alg] ?? [];
  if (!imported) return false;
  try {
    const name = `${alg}\0${key}`;
    let publicKey = importedKeys.get(name);
    if (publicKey === undefined) {
      publicKey = await crypto.subtle.importKey("jwk", JSON.parse(key), imported, false, ["verify"]);
      if (importedKeys.size >= MAX_IMPORTED_KEYS) importedKeys.clear();
      importedKeys.set(name, publicKey);
    }
    return await crypto.subtle.verify(verify, publicKey, signature, new TextEncoder().encode(message));
  } catch {
    return false;
  }
}

/**
 * The core's answer to a resource server's failed bearer check: `{ status, challenge }` (the
 * `WWW-Authenticate` value) for `refusal` — `"bearer_missing"`, `"malformed_bearer"`,
 * `"invalid_token"`, `"insufficient_scope"`, `"token_bound_to_another_key"` or
 * `"dpop_proof_invalid:<why>"` — naming `requiredScope` (if any), the resource's metadata at
 * `metadataUrl`, under the schemes of `challenges`: `"bearer"` (the resource takes no DPoP proofs),
 * `"bearer_and_dpop"` (it does, and the token came as a bearer token or none came: a `DPoP`
 * challenge beside naming the algorithms) or `"dpop"` (it came under the `DPoP` scheme: the
 * refusal on the `DPoP` challenge, RFC 9449 §7.1).
 */
export function resourceChallenge(refusal, requiredScope, metadataUrl, challenges = "bearer") {
  ready();
  const joined = bindings.resourceChallenge(String(refusal), requiredScope ?? undefined, String(metadataUrl), String(challenges));
  if (joined === undefined) throw new TypeError(`resourceChallenge: no challenge for ${refusal} with scope ${requiredScope} under ${challenges}`);
  const at = joined.indexOf("\0");
  return { status: Number(joined.slice(0, at)), challenge: joined.slice(at + 1) };
}

/** A protected resource's metadata (RFC 9728), from the core: `{ url, document }`, listing the DPoP algorithms when `dpop`. Throws if `resource` or `issuer` is not an identifier. */
export function resourceMetadata(resource, issuer, scopes, dpop = false) {
  expect(Array.isArray(scopes), "resourceMetadata(resource, issuer, scopes): scopes must be a list of scope names");
  ready();
  const joined = bindings.resourceMetadata(String(resource), String(issuer), scopes.map(String).join("\0"), Boolean(dpop));
  if (joined === undefined) throw new Error("edgegrant: resource and issuer must be http(s) URLs without query or fragment");
  const at = joined.indexOf("\0");
  return { url: joined.slice(0, at), document: joined.slice(at + 1) };
}

let pageHeaderPairs = null;
/** The headers of every page, as the core puts them on the flow's pages: `[name, value]` pairs. */
export function pageHeaders() {
  ready();
  // A constant of the module: asked once.
  pageHeaderPairs ??= [...pairsOf(bindings.pageHeaders().split("\0"))];
  return pageHeaderPairs;
}

let entropyBytes = 0;
/** How many bytes of entropy each request takes. */
export function entropyLength() {
  ready();
  // A constant of the module: asked once, not on every request.
  if (entropyBytes === 0) entropyBytes = bindings.entropyLength();
  return entropyBytes;
}

/** The PKCE client machine for `config`. Throws an Error if the configuration cannot work. */
export function createPkceMachine(config) {
  expect(isObject(config), "createPkceMachine(config): config must be the client's configuration (an object)");
  clientReady();
  const machine = new clientBindings.PkceClient(JSON.stringify(config));
  return {
    handle: (state, input, now, entropy) =>
      JSON.parse(machine.handle(JSON.stringify(state), JSON.stringify(input), unixTime(now), entropy)),
  };
}

/** How many bytes of entropy each client-machine call takes. */
export function clientEntropyLength() {
  clientReady();
  return clientBindings.clientEntropyLength();
}
