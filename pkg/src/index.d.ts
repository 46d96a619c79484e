// Types of the package. The configuration's shapes and the names the core answers with are
// generated from the Rust types at build time into dist/edgegrant_types.d.ts (by
// core/examples/typescript.rs); the bindings' own in dist/edgegrant_wasm.d.ts (server) and
// dist/edgegrant_client.d.ts (PKCE client).
import type { ConfigCheck, Request as CoreRequest } from "../dist/edgegrant_wasm.js";
import type {
  App, Attempter, AttemptVerdictName, AuditEventName, ConfigDocument, OutcomeName, PageTemplates, Policy, RefusalName, UnixTime,
} from "../dist/edgegrant_types.js";
import type { ClientConfig, ClientInput, ClientRequest, ClientState, ClientTransition, ProofToSign } from "../dist/edgegrant_client.js";

export type { ConfigCheck } from "../dist/edgegrant_wasm.js";
export type {
  App, Attempter, AttemptVerdictName, AuditEventName, ConfigDocument, OutcomeName, PageTemplates, Policy, RefusalName, Rotation, Scope, UnixTime,
} from "../dist/edgegrant_types.js";
export type {
  ClientConfig, ClientError, ClientInput, ClientRequest, ClientSession, ClientState, ClientStep, ClientTransition, ProofToSign, SessionView,
} from "../dist/edgegrant_client.js";

/** The signed-in user, as the host's sign-in knows them. */
export interface User {
  account_id: string;
  uid: string;
  /** The person's name, shown on the consent page (the account id when absent). Never stored. */
  name?: string;
  /**
   * What to keep with a grant this user makes in this request (an upstream API's token, say):
   * any JSON value. Sealed under the server key (ChaCha20-Poly1305) into the code, then the
   * grant and each of its access tokens — never stored in clear — and handed back as
   * `principal.props` to the API handler for every call made with those tokens, over refreshes,
   * until the grant ends. Read only where a grant is made (the consent, or a re-authorization
   * that needs none); default none.
   */
  props?: unknown;
}

/** A record as the store holds it: its version (from 1, +1 per applied put) and the core's opaque bytes. */
export interface Stored {
  version: number;
  bytes: Uint8Array;
}

/** One conditional write: `bytes` under `key` only if the key holds version `expect` (`null`: nothing). */
export interface Put {
  key: string;
  expect: number | null;
  bytes: Uint8Array;
  /** When the store may delete the record (Unix seconds); `null`: keep it. */
  purgeAfter: number | null;
}

/** An audit event: what changed, never a secret. */
export type AuditEvent = { event: AuditEventName } & Record<string, unknown>;

export interface Transaction {
  puts: Put[];
  audit: AuditEvent[];
}

/**
 * Two verbs: read many keys in one batch, apply a transaction all-or-nothing. Either may answer
 * at once or through a promise; the driver awaits only promises.
 */
export interface Storage {
  /** What is stored under `keys`; absent keys are left out of the map. Do not change what it returns. */
  read(keys: string[]): Map<string, Stored> | Promise<Map<string, Stored>>;
  /** Applies every put if every `expect` holds, else nothing; `false` on a conflict. */
  apply(transaction: Transaction): boolean | Promise<boolean>;
}

/** A store that can also delete the records whose purge time has passed. */
export interface PurgeableStorage extends Storage {
  /** Deletes the records whose purge time is at or before `now`; resolves how many. */
  purge(now: number): Promise<number>;
}

/**
 * The principal an authorized API call acts for: a person (`subject: "account"`, with their
 * account id and uid), or the app itself, a machine acting on its own behalf (`subject: "client"`,
 * both `null`).
 */
export interface Principal {
  app: string;
  subject: "account" | "client";
  account_id: string | null;
  uid: string | null;
  scopes: string[];
  /** Unix seconds; `null` for a legacy long-lived token. */
  expires_at: number | null;
  /** The grant's props, as the host gave them with the user when the grant was made (`User.props`); `null` where none. */
  props: unknown;
}

/** How a request ended: a complete response to send, or an authorized API call to serve. */
export type Result =
  | {
      kind: "reply";
      status: number;
      headers: [string, string][];
      body: string;
      /** What happened. */
      outcome: OutcomeName;
      /** Why it was refused ("code_expired", "missing_scope", …), or null. */
      refusal: RefusalName | null;
    }
  | {
      kind: "serve";
      principal: Principal;
      /** Headers to set on the API's answer (no-store, nosniff, and CORS for an allowed origin). */
      headers: [string, string][];
    };

/** A request as node:http (or any server) has it: plain values, no Fetch objects. */
export interface PlainRequest {
  method: string;
  /** The request target, `/path?query` (node:http's `req.url`); or give `path` and `query`. */
  url?: string;
  path?: string;
  query?: string;
  /** Names and values alternately (node:http's `rawHeaders`), or pairs. */
  headers: string[] | [string, string][];
  /** The body; one byte past `core.bodyLimit(path)` is enough. */
  body?: Uint8Array;
  /** The signed-in user, if any. */
  user?: User | null;
  /** The client's address (the socket's, or one a trusted proxy names): failed client authentications are counted against it. */
  source?: string;
  /** How the client reached this server, when the host knows (a TLS socket: "https"): a form from the same host on the other scheme is another site's. */
  scheme?: "http" | "https";
}

export interface Hooks {
  /** The signed-in user of this request, or null. */
  currentUser?(request: Request): Promise<User | null> | User | null;
  /** The client's address, for attempt limits (e.g. `request.headers.get("CF-Connecting-IP")` on Cloudflare); never from a header a client can set. */
  sourceOf?(request: Request): string | null | undefined;
  /** The host's API, by path; called once the bearer token and Required Scope checked out, with the request and its body (`await request.json()` works). The core's headers are set on its answer. */
  api?: Record<string, (principal: Principal, request: Request) => Promise<Response> | Response>;
}

/** createAuthServer's options: an unknown one is refused by name (so is an unknown setting in the configuration). */
export interface AuthServerOptions {
  /** The whole configuration document; or its parts below (not both). */
  config?: ConfigDocument;
  /** The server's own secret (required, here or as the document's `server_key`): 32 random bytes, base64url, e.g. `crypto.randomBytes(32).toString("base64url")` once, kept as a secret. */
  serverKey?: string;
  /** The apps configured (more may arrive unannounced in the standards profile, `profile.clients`). Default none. */
  apps?: App[];
  /** Lifetimes, bounds and switches; every field has a default (see `Policy`). */
  policy?: Policy;
  /**
   * Each API endpoint, by path (`/2/…` in the reference profile; any path outside `/oauth2/` and `/.well-known/` in the standards profile), with its Required Scope: `{ "/mcp": "mcp:tools" }`; or with a bound of its own on the request body, in bytes: `{ "/mcp": { scope: "mcp:tools", max_body_bytes: 4194304 } }` (default `policy.max_api_body_bytes`, 1 MiB; a longer body is answered 413).
   * In the standards profile an endpoint's own URL (the issuer's origin and its path, `https://host/mcp`) is a resource a client may name as well as the origin, with its RFC 9728 metadata at `/.well-known/oauth-protected-resource/mcp`.
   */
  apiEndpoints?: ConfigDocument["api_endpoints"];
  /** Page templates (consent, code, error, sign_in). */
  pages?: PageTemplates;
  /** The dialect: the reference service's (default) or the standards profile. */
  profile?: ConfigDocument["profile"];
  /** Each scope in plain words, for the consent page (defaults for the reference service's scopes). */
  scopeDescriptions?: ConfigDocument["scope_descriptions"];
  /** Where records are kept (required): an adapter of `edgegrant/adapters/*`, or your own `read(keys)` and `apply(transaction)`. */
  storage: Storage;
  /** The host's part: who is signed in, the API handlers, the client's address. Default: nobody signed in, no API handler, no source. */
  hooks?: Hooks;
  /** Seconds since the epoch; default: the system clock. */
  clock?: () => UnixTime;
  /** Fresh entropy of `entropyLength()` bytes; default: crypto.getRandomValues. */
  random?: () => Uint8Array;
  /** Called with each audit event of a committed write (a sink that throws is logged; the answer still goes out). Default none. */
  onAudit?: (event: AuditEvent) => void;
  /** Called for every refused request (after its answer is decided; a hook that throws is logged): what a log of refusals needs, never a token, a code, a secret or a body. */
  onRefusal?: (event: RefusalEvent) => void;
  /** Fetches a client's metadata document for the core (`profile.clients.documents`). Default on Node (the package root and `edgegrant/node` alike): `fetchDocumentNode` (every resolved address checked, the connection made to a checked one); elsewhere (Workers): `fetchDocument` (the URL guard only: it cannot see where a name resolves to), which takes documents from any host only with `anyDocumentHostWithoutAddressCheck`. */
  fetchDocument?: DocumentFetcher;
  /**
   * With the default web fetcher (Workers), take client metadata documents from any host although the addresses a name resolves to cannot be checked: without it, a configuration with `profile.clients.documents` on and no `hosts` is refused.
   * On Cloudflare's network a Worker cannot reach private addresses; under `wrangler dev` or self-hosted workerd it can, and a public name pointing at 10.0.0.1 would be fetched from there. No effect where the fetcher checks addresses (Node) or is the host's own.
   */
  anyDocumentHostWithoutAddressCheck?: boolean;
}

/** The core's fetch of a client's metadata document: GET `url`, at most `maxBytes` of body, within `timeoutMs`. */
export interface DocumentFetch {
  url: string;
  maxBytes: number;
  timeoutMs: number;
}

/** What a document fetch got: the status (a redirect is not followed), `Cache-Control` and the body of a 200; or why it got nothing. */
export type DocumentAnswer =
  | { status: number; cacheControl: string | null; body: Uint8Array }
  | { failed: "refused" | "too_large" | "timeout" | "unreachable" };

export type DocumentFetcher = (fetch: DocumentFetch) => Promise<DocumentAnswer>;

/** A refused request, as `onRefusal` is told of it. */
export interface RefusalEvent {
  /** The refusal's name (`unknown_client`, `access_token_expired`, `missing_scope`, `body_too_large`…). */
  refusal: RefusalName;
  /** The answer's HTTP status. */
  status: number;
  method: string;
  /** The path requested (`/oauth2/token`, `/mcp`), without its query. */
  endpoint: string;
  /** The client the request named, as presented (not authenticated: a refused client may name any), where it is a well-formed client id; null for a bearer request and where none is named. */
  app: string | null;
  /** The client's address, as the host gave it (`sourceOf`, or the socket's peer); null where none is known. */
  source: string | null;
  /** When, in Unix seconds (the server's clock). */
  at: UnixTime;
}

export interface AuthServer {
  /** The plain-value entry (node:http and the like): a reply to send, or an authorized call to serve. */
  handle(request: PlainRequest): Promise<Result>;
  /** The Fetch entry: the core's endpoints, the API handlers of `hooks.api`, 404 elsewhere. `context.source`: the client's address as the host knows it (a socket's peer), used where no `sourceOf` hook names one. */
  fetch(request: Request, context?: { source?: string }): Promise<Response>;
  /** The user (`by: "user"`, the default) or a team admin ends every token of `app` for `accountId`; resolves the reply (status 200 `unlinked`, or the refusal). */
  unlink(app: string, accountId: string, by?: "user" | "team_admin"): Promise<Extract<Result, { kind: "reply" }>>;
  /** Where a Fetch request runs when records are spread over partitions: the core's answer (null: anywhere) and the request to forward, its body already read. */
  route(request: Request): Promise<{ partition: string | null; request: Request }>;
  /** How many bytes of a body to `path` the core takes (as `core.bodyLimit`, answered without a call into the module): a host reading bodies itself may stop one byte past it. */
  bodyLimit(path: string): number;
  /**
   * A credential check of the host's own (its sign-in), limited per account name (per source, when one is given) and source: call it before checking (the check is counted now, atomically, if it may go ahead), and with `{ succeeded: true }` after a correct one (the count is taken back).
   * Check only when `allowed`. `limited`: an attempter is at its limit (answer 429 with `Retry-After`); `unavailable`: the store failed, no one's limit (answer 503 with `Retry-After`);
   * neither: the attempters were refused as such (a name no one can have: empty, over 256 bytes, control characters).
   */
  attempts(attempters: Attempter[], options?: { succeeded?: boolean }): Promise<{ allowed: boolean; limited: boolean; unavailable: boolean; retryAfter: number | null }>;
  core: Core;
}

/** Whom a failed check is counted against. */

export interface Core {
  /** Starts a request (see runRequest). */
  request(request: PlainRequest & { path: string }, now: UnixTime, entropy: Uint8Array): CoreRequest;
  unlink(app: string, accountId: string, by: "user" | "team_admin", now: UnixTime, entropy: Uint8Array): CoreRequest;
  attempts(attempters: Attempter[], failed: boolean, now: UnixTime, entropy: Uint8Array): CoreRequest;
  /** The partition the request is routed to (null: no account's records; run it anywhere). Pure: nothing read, no secret hashed. */
  partitionOf(request: PlainRequest & { path: string }): string | null;
  requiredScope(endpoint: string): string | undefined;
  /** The OAuth endpoints' bound on a query, body or header, in bytes (`policy.max_input_bytes`, default 16384). */
  maxInputBytes(): number;
  /** The most bytes of a body to `path` the core takes: its API endpoint's `max_body_bytes`, else `policy.max_api_body_bytes` (default 1048576), else `maxInputBytes()` for any other path. */
  bodyLimit(path: string): number;
  /** The client a request names, as presented, if it is a well-formed client id; null for a bearer request and where none is named. Never a secret. */
  namedClient(request: PlainRequest & { path: string }): string | null;
  /** What in the configuration is valid but most likely a mistake, one line each (an API scope no app can hold); createAuthServer warns of them at start-up. */
  warnings(): string[];
}

/** A compiled `WebAssembly.Module`, or the module's bytes: named without the DOM library's types, so that a Node project without it type-checks. */
export type ModuleInput = object | ArrayBuffer | ArrayBufferView;
/** Instantiates the server's module (`edgegrant/wasm`); the node and workers entry points do it. */
export function initialize(module: ModuleInput): void;
/** Instantiates the PKCE client's module (`edgegrant/client-wasm`); the node and browser entry points do it. */
export function initializeClient(module: ModuleInput): void;
export function createCore(config: ConfigDocument): Core;
export function checkConfig(config: ConfigDocument): ConfigCheck;
/** The configuration with the legacy app `app` migrated to scopes: the document as given, that app's `permissions` now `{ kind: "scoped", scopes }` pre-selected from its legacy access type; tokens already issued keep theirs. Throws if the document is invalid, the app unknown or already scoped. */
export function migrateApp(config: ConfigDocument, app: string): ConfigDocument;
export function secretDigest(secret: string): string;
/** Whether a form post may come from another site: the consent form's CSRF rule, for a host's own forms (sign-in, sign-out). `host`: the authority the request was sent to. */
export function isCrossSite(headers: Headers | [string, string][] | string[], host: string, scheme?: "http" | "https" | null): boolean;
export function entropyLength(): number;
export function createAuthServer(options: AuthServerOptions): AuthServer;
/** A Fetch Request's body, at most `limit + 1` bytes of it (more than `limit`: refuse it); the rest is read and dropped up to 100 MiB, then cancelled (a host with nothing in front of it to cap bodies reads less itself, and closes the connection after the answer). */
export function readBody(request: Request, limit: number): Promise<Uint8Array>;
/**
 * A step of a core request, read where it lies in the module's memory, at the address its `step()`, `found()`, `advance()`, `fetched()`, `fetchFailed()` or `verified()` returned
 * (read it at once: the request's next call writes over it). What `runRequest` does with each kind is
 * read the keys (then `found(packRecords(keys, records))`), apply the transaction (then `advance("committed")` or `advance("conflicted")`; `advance("unavailable")` when the store throws),
 * fetch the document (then `fetched(status, cacheControl, body)` or `fetchFailed(reason)`), verify the signature (then `verified(holds)`), or finish with the reply or the authorized call.
 */
export type CoreStep =
  | { kind: "r"; keys: string[] }
  | { kind: "w"; transaction: Transaction }
  | ({ kind: "p" } & Omit<Extract<Result, { kind: "reply" }>, "kind">)
  | ({ kind: "s" } & Omit<Extract<Result, { kind: "serve" }>, "kind">)
  | { kind: "f"; url: string; maxBytes: number; timeoutMs: number }
  | { kind: "v"; alg: "ES256" | "RS256"; key: string; message: string; signature: Uint8Array };
export function readStep(address: number): CoreStep;
/** What a store's read answered (`Map` of key → `Stored`; absent keys left out), packed for `found` in the order of `keys`; hand it over at once (the next call reuses its bytes). */
export function packRecords(keys: string[], found: Map<string, Stored>): Uint8Array;
/** Runs a request of the core to its end against `storage`, and frees it. Documents are fetched with `options.fetchDocument`; default: `fetchDocumentNode` on Node (every resolved address checked), `fetchDocument` elsewhere (Workers: the URL guard only). */
export function runRequest(request: CoreRequest, storage: Storage, options?: { onAudit?: (event: AuditEvent) => void; fetchDocument?: DocumentFetcher }): Promise<Result>;
/** Fetches a client's metadata document with `fetch` (a service binding's, say): https only, no special-use IP literal or private name (loopback with `allowLoopback`), no redirect followed, the size and the deadline held. It cannot see the address a name resolves to (see `documentFetchLimits`). */
export function fetchDocument(fetch: DocumentFetch, options?: { fetch?: typeof globalThis.fetch; allowLoopback?: boolean }): Promise<DocumentAnswer>;
/** `null` if a document may be fetched from `url`; `"refused"` otherwise. */
export function checkDocumentUrl(url: string, options?: { allowLoopback?: boolean }): null | "refused";
/** Whether `ip` is a special-use address (RFC 6890 and its updates). */
export function isSpecialUseAddress(ip: string): boolean;
/** What is checked where, in words. */
export const documentFetchLimits: string;
/** An HTML page with the headers of the flow's pages (no framing, no caching, no referrer), for the host's own pages. */
export function page(status: number, title: string, bodyHtml: string): Response;
export function escapeHtml(text: unknown): string;
/** ` data-page="…"`: tells machines which page this is; put it on the page's first element. */
export function pageData(kind: string): string;

/** The PKCE client machine: one pure transition per call. */
export interface PkceMachine {
  handle(state: ClientState, input: ClientInput, now: UnixTime | bigint, entropy: Uint8Array): ClientTransition;
}
export function createPkceMachine(config: ClientConfig): PkceMachine;
export function clientEntropyLength(): number;

/** The state a new client starts in. */
export const IDLE: ClientState;

export interface PkceClientOptions {
  /** Seconds since the epoch; default: the system clock. */
  clock?: () => UnixTime | bigint;
  /** Fresh entropy of `clientEntropyLength()` bytes; default: crypto.getRandomValues. */
  random?: () => Uint8Array;
  /** Default: the global fetch. */
  fetch?: (input: string | Request, init?: RequestInit) => Promise<Response>;
  /** Sees every request the machine sends (with its `DPoP` header) and the raw answer. */
  onExchange?: (request: ClientRequest, response: { status: number; headers: [string, string][]; body: string }) => void;
  /**
   * Binds the tokens to this key (DPoP, RFC 9449; see `createDpopKey`): the machine gets
   * `publicJwk` as `dpop_public_key`, and every proof it hands out is signed here with
   * `privateKey` (WebCrypto; it may be non-extractable).
   */
  dpop?: DpopKey;
}

/**
 * WebCrypto's `CryptoKey` where the project's types declare it (the DOM library, Workers'
 * types), else the members every CryptoKey has: a Node project without the DOM library
 * type-checks too.
 */
export type WebCryptoKey = typeof globalThis extends { CryptoKey: { prototype: infer Key } }
  ? Key
  : { readonly algorithm: object; readonly extractable: boolean; readonly type: string; readonly usages: readonly string[] };

/** A DPoP key: the private half as a WebCrypto key (sign), the public half as a JWK. */
export interface DpopKey {
  privateKey: WebCryptoKey;
  publicJwk: { kty: string; [member: string]: unknown };
}
/** A fresh ECDSA P-256 DPoP key whose private half cannot be exported; the pair may be kept in IndexedDB as it is. */
export function createDpopKey(): Promise<DpopKey & { publicKey: WebCryptoKey }>;

export interface PkceClient {
  /** One transition at the host's time with fresh entropy. */
  step(state: ClientState, input: ClientInput): ClientTransition;
  /** A transition, carrying out `send` steps until the machine wants something else. */
  run(state: ClientState, input: ClientInput): Promise<ClientTransition>;
  /** An API call with the session's token (bearer, or DPoP with a proof), refreshing when due or after a 401 and meeting the API's DPoP nonce as the machine says; `init.method` defaults to POST. */
  call(state: ClientState, url: string, init?: RequestInit): Promise<{ state: ClientState; response: Response } | ClientTransition>;
  /** The `DPoP` header of a proof the machine handed out (`ClientRequest.proof`, `attach`'s `proof`), signed with the `dpop` key. */
  proofHeader(proof: ProofToSign): Promise<string>;
  /** The configuration, with `dpop_public_key` when a `dpop` key is given. */
  config: ClientConfig;
}
export function createPkceClient(config: ClientConfig, options?: PkceClientOptions): PkceClient;
