// The driver: runs a request of the core against a storage adapter, and serves the core's
// endpoints on plain values (`handle`, for node:http and the like) and on the Fetch API
// (`fetch`). Every decision is the core's — routing, limits, the consent form's origin check,
// re-authorization, contention, every response with its headers and pages; this file carries
// bytes, records, time and entropy between the core and the host.
import { createCore, entropyLength, pageHeaders, verifySignature } from "./core.js";
import { fetchDocument } from "./documents.js";
import { packRecords, readStep } from "./packed.js";

const NO_BODY = new Uint8Array(0);

/**
 * Methods whose body means nothing to the core (no endpoint reads one) and that a Fetch Request
 * cannot even carry: `new Request` throws on a GET or HEAD with a body.
 */
const bodyless = (method) => method === "GET" || method === "HEAD";

/** Escapes text for HTML content and attribute values (for the host's own pages). */
export const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

/** An HTML page with the headers the core puts on the flow's pages (taken from the core), for the host's own pages (sign-in, home). */
export function page(status, title, bodyHtml) {
  const html = `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head><body>${bodyHtml}</body></html>`;
  return new Response(html, { status, headers: pageHeaders() });
}

/** The `data-page` attribute that tells machines (tests) which page this is, for the host's own pages. */
export const pageData = (kind) => ` data-page="${escapeHtml(kind)}"`;

/** Seconds since the epoch. */
const systemClock = () => Math.floor(Date.now() / 1000);

// Entropy from the platform CSPRNG, drawn 64 requests' worth at a time: one getRandomValues
// call costs about as much as a bearer check's whole core work, and its cost hardly depends on
// the length. Each request gets a view of its own bytes in the pool (no copy); `withEntropy`
// zeroes them as soon as the core has copied them in, so each byte is handed out once.
const POOLED_REQUESTS = 64;
let pool = new Uint8Array(0);
let poolOffset = 0;
export function drawEntropy() {
  const length = entropyLength();
  if (pool.length !== length * POOLED_REQUESTS || poolOffset === pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(length * POOLED_REQUESTS));
    poolOffset = 0;
  }
  const entropy = pool.subarray(poolOffset, poolOffset + length);
  poolOffset += length;
  return entropy;
}

/** What a store or a hook returned, awaited only when it is a promise: an in-memory store or a synchronous hook costs no turn of the event loop. */
const settled = (value) => (typeof value?.then === "function" ? value : undefined);

/**
 * The store threw (an outage, a timeout, SQLITE_BUSY): not the client's fault. The core answers
 * 503 with Retry-After on the endpoint's channel; the error goes to the host's log. Returns the
 * next step.
 */
function storageFailed(request, what, error) {
  console.error(`edgegrant: storage ${what} failed:`, error);
  return request.advance("unavailable");
}

/**
 * Tells the host's `onRefusal` of a refused request: the refusal's name, the answer's status, the
 * method and path, the client the request named (as presented, never a secret) and the source,
 * at `now`. Never a token, a code, a secret or a body. A hook that throws is logged; the answer
 * goes out as it is.
 */
function reportRefusal(onRefusal, core, request, reply, now) {
  if (reply.kind !== "reply" || reply.refusal === null) return reply;
  try {
    onRefusal({
      refusal: reply.refusal,
      status: reply.status,
      method: request.method,
      endpoint: request.path,
      app: core.namedClient(request),
      source: request.source ?? null,
      at: now,
    });
  } catch (error) {
    console.error("edgegrant: the onRefusal hook failed:", error);
  }
  return reply;
}

/**
 * Warns, once at start-up, of what is valid but most likely a mistake: an API handler
 * (`hooks.api`) at a path the configuration does not declare (it is never called: the path is
 * 404), and what the core finds (an API scope no app can hold).
 */
function warnAtStart(core, config, api) {
  const declared = config.api_endpoints ?? {};
  for (const path of Object.keys(api)) {
    if (!Object.hasOwn(declared, path)) console.warn(`edgegrant: hooks.api has a handler for ${path}, which apiEndpoints does not declare: it is never called (the path answers 404); declare it with its Required Scope`);
  }
  for (const line of core.warnings()) console.warn(`edgegrant: ${line}`);
}

/**
 * Hands the audit events of a committed transaction to the host's sink. The transaction is
 * committed whatever the sink does: a sink that throws is logged, and the answer still goes out
 * (losing it would turn the client's retry into a code replay, which revokes the grant).
 */
function emitAudit(onAudit, events) {
  for (const event of events) {
    try {
      onAudit(event);
    } catch (error) {
      console.error("edgegrant: the audit sink failed; the event was:", JSON.stringify(event), error);
    }
  }
}

/**
 * Runs a request of the core (`core.request(...)` or `core.unlink(...)`) to its end against
 * `storage`, and frees it. Documents are fetched with `options.fetchDocument`; by default, here,
 * with the web fetch (`fetchDocument`: the URL guard only), and from the package root on Node
 * (./index-node.js) with `fetchDocumentNode`. Resolves `{ kind: "reply", status, headers, body, outcome, refusal }`
 * — send it as it is — or `{ kind: "serve", principal, headers }`: the API call is authorized;
 * answer it, with `headers` (pairs) set on the answer. A store that throws makes the reply a 503.
 */
export async function runRequest(request, storage, { onAudit, fetchDocument: fetcher = fetchDocument } = {}) {
  return drive(request, storage, onAudit, false, fetcher);
}

/**
 * Answers the core's fetch of a client's metadata document (a `f` step: its URL, size limit and
 * deadline) with what `fetcher` got, and returns the next step. A fetcher that throws is a bug
 * of the host's, reported as an unreachable document (the client gets invalid_client), never a
 * 5xx.
 */
async function answerFetch(request, { url, maxBytes, timeoutMs }, fetcher) {
  let answer;
  try {
    answer = await fetcher({ url, maxBytes, timeoutMs });
  } catch (error) {
    console.error("edgegrant: the document fetcher threw:", error);
    answer = { failed: "unreachable" };
  }
  if (answer?.failed) return request.fetchFailed(answer.failed);
  return request.fetched(answer.status, answer.cacheControl ?? undefined, answer.body ?? NO_BODY);
}

/**
 * Answers the core's `v` step: whether a signature holds under the key (a JWK) — a client
 * assertion's under the client's key, an identity assertion's (ID-JAG) under its provider's, a
 * DPoP proof's under the key it carries; a request may ask for several, one after the other —
 * verified by the platform's WebCrypto (Node and workerd alike), and returns the next step.
 */
async function answerVerify(request, verify) {
  return request.verified(await verifySignature(verify));
}

/**
 * What came of a step the host carries out (a read, a write, a fetch, a verification): the next
 * step, packed, or a promise of it when the store, the fetcher or WebCrypto answers later.
 */
function carryOut(request, step, storage, onAudit, fetcher) {
  const kind = step.kind;
  if (kind === "r") {
    let found;
    try {
      found = storage.read(step.keys);
    } catch (error) {
      return storageFailed(request, "read", error);
    }
    if (!settled(found)) return request.found(packRecords(step.keys, found));
    return found.then(
      (records) => request.found(packRecords(step.keys, records)),
      (error) => storageFailed(request, "read", error),
    );
  }
  if (kind === "w") {
    const { transaction } = step;
    const committed = (applied) => {
      if (!applied) return request.advance("conflicted"); // another request won: the core reads again and decides anew
      const next = request.advance("committed");
      if (onAudit) emitAudit(onAudit, transaction.audit);
      return next;
    };
    let applied;
    try {
      applied = storage.apply(transaction);
    } catch (error) {
      return storageFailed(request, "write", error);
    }
    if (!settled(applied)) return committed(applied);
    return applied.then(committed, (error) => storageFailed(request, "write", error));
  }
  if (kind === "f") return answerFetch(request, step, fetcher);
  return answerVerify(request, step);
}

/** The end of a request: its last step (a reply or an authorized call) as runRequest resolves it, or an attempt's verdict. */
function outcomeOf(request, step, onAudit, attempts) {
  if (attempts) {
    const [verdict, wait] = request.verdict().split(" ");
    return { verdict, retryAfter: wait === undefined ? null : Number(wait) };
  }
  if (step.kind === "s") return { kind: "serve", principal: step.principal, headers: step.headers };
  const { status, headers, body, outcome, refusal, audit } = step;
  // A defect's event rides on its reply, as does that of a rotation's retry answered from
  // another retry's write: neither wrote anything that could carry it.
  if (onAudit && audit.length > 0) emitAudit(onAudit, audit);
  return { kind: "reply", status, headers, body, outcome, refusal };
}

/** Whether a step ends the request: a reply (`p`) or an authorized call (`s`). */
const ends = (step) => step.kind === "p" || step.kind === "s";

/**
 * runRequest's loop, synchronous while the host's answers are (an in-memory store, SQLite): it
 * returns the outcome itself then, and a promise of it from the first answer that is one, so a
 * request on a synchronous store waits on no promise of its own. `attempts`: the request is a
 * credential check's, and its outcome is the core's `verdict` and `retryAfter`.
 */
function drive(request, storage, onAudit, attempts, fetcher = fetchDocument) {
  let pending;
  try {
    // One crossing each way per step: the step out, packed (see ./packed.js), and what came of
    // it in, which returns the next step. The core's own bound on the steps a request takes:
    // past it is a bug.
    let packed = request.step();
    for (let round = 0, bound = request.maxSteps(); round <= bound; round++) {
      const step = readStep(packed);
      if (ends(step)) return outcomeOf(request, step, onAudit, attempts);
      packed = carryOut(request, step, storage, onAudit, fetcher);
      if (settled(packed)) {
        pending = driveOn(request, packed, round + 1, storage, onAudit, attempts, fetcher);
        return pending;
      }
    }
    throw overrun(request);
  } finally {
    if (pending === undefined) request.free();
  }
}

/** drive's loop from the first step answered by a promise (`next`, in round `from`), to the end. */
async function driveOn(request, next, from, storage, onAudit, attempts, fetcher) {
  try {
    let packed = await next;
    for (let round = from, bound = request.maxSteps(); round <= bound; round++) {
      const step = readStep(packed);
      if (ends(step)) return outcomeOf(request, step, onAudit, attempts);
      packed = carryOut(request, step, storage, onAudit, fetcher);
      if (settled(packed)) packed = await packed;
    }
    throw overrun(request);
  } finally {
    request.free();
  }
}

const overrun = (request) => new Error(`edgegrant: the request did not finish in ${request.maxSteps()} steps`);

/**
 * How much of a body past what is needed is read and dropped. An answer sent over an unread body
 * breaks the connection: node:http resets it before the client reads the answer, and workerd
 * fails ("Can't read from request stream after response has been sent"; under wrangler dev the
 * proxy answers 503 "Your worker restarted mid-request"). So the rest is read to its end, up to
 * the most Cloudflare's edge lets through on most plans (100 MB); a body longer still, which
 * only a host with nothing in front of it can get, is cancelled unread, and such a host bounds
 * what it reads itself and closes the connection after the answer (the Node host does).
 */
const DRAIN_BYTES = 100 * 1024 * 1024;

/** Reads what is left of a body and drops it: to its end, or `DRAIN_BYTES` of it and the rest cancelled. */
async function drain(reader) {
  try {
    for (let dropped = 0; dropped <= DRAIN_BYTES; ) {
      const { done, value } = await reader.read();
      if (done) return;
      dropped += value.length;
    }
    await reader.cancel();
  } catch {
    // The client went away: nothing more to read.
  }
}

/**
 * The body of a Fetch Request, read up to one byte over `limit` (the core refuses it then, with
 * the right error; a host's own form is refused the same way); the rest is dropped (see drain).
 * Holds at most `limit` and one chunk, however long the body.
 */
export async function readBody(request, limit) {
  if (!request.body) return NO_BODY;
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  let ended = false;
  try {
    while (size <= limit) {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // A body that breaks off is as good as a malformed one: the core answers for what arrived.
    ended = true;
  }
  if (!ended) await drain(reader);
  if (chunks.length === 1 && size <= limit + 1) return chunks[0];
  const body = new Uint8Array(Math.min(size, limit + 1));
  let offset = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, body.length - offset);
    body.set(part, offset);
    offset += part.length;
    if (offset >= body.length) break;
  }
  return body;
}

/**
 * A Fetch Request's URL in the parts the core takes: `scheme` ("https"), `host` (with any port),
 * `path` and `query` (without its `?`), cut from `url` as `new URL(url)` would give them
 * (`protocol` less its colon, `host`, `pathname`, `search` less its `?`). A Request's URL is
 * already parsed and serialized by the runtime — an absolute http(s) URL, with an authority,
 * no credentials (the Request constructor refuses them), percent-encoded — so cutting it is
 * exact, and costs a bearer check no URL object.
 */
export function urlParts(url) {
  const colon = url.indexOf(":");
  const authority = colon + 3; // past "://"
  let pathAt = url.indexOf("/", authority);
  const hashAt = url.indexOf("#", authority);
  const end = hashAt < 0 ? url.length : hashAt;
  let queryAt = url.indexOf("?", authority);
  if (queryAt >= end) queryAt = -1;
  if (pathAt < 0 || pathAt > end || (queryAt >= 0 && pathAt > queryAt)) pathAt = -1;
  const hostEnd = pathAt >= 0 ? pathAt : queryAt >= 0 ? queryAt : end;
  const pathEnd = queryAt >= 0 ? queryAt : end;
  return {
    scheme: url.slice(0, colon),
    host: url.slice(authority, hostEnd),
    path: pathAt >= 0 ? url.slice(pathAt, pathEnd) : "/",
    query: queryAt >= 0 ? url.slice(queryAt + 1, end) : "",
  };
}

/** `request` again, with `body` (already read) as its body; the request itself when it had none (a new Request costs as much as the check). */
function withBody(request, body) {
  if (body.length === 0) return request;
  return new Request(request.url, { method: request.method, headers: request.headers, body, signal: request.signal });
}

/** `response` with `headers` set over its own: in place, or on a copy when its headers are immutable (a Response from fetch()). */
function withHeaders(response, headers) {
  try {
    for (const [name, value] of headers) response.headers.set(name, value);
    return response;
  } catch {
    const merged = new Headers(response.headers);
    for (const [name, value] of headers) merged.set(name, value);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers: merged });
  }
}

/** The configuration document's parts, as createAuthServer takes them instead of `config`. */
const CONFIG_PARTS = ["serverKey", "apps", "policy", "apiEndpoints", "pages", "profile", "scopeDescriptions"];
const OPTIONS = ["config", ...CONFIG_PARTS, "storage", "hooks", "clock", "random", "onAudit", "onRefusal", "fetchDocument", "anyDocumentHostWithoutAddressCheck"];
const HOOKS = ["currentUser", "api", "sourceOf"];
/** What a misspelled option most likely meant. */
const MEANT = { server_key: "serverKey", api_endpoints: "apiEndpoints", apiEndpoint: "apiEndpoints", scope_descriptions: "scopeDescriptions", app: "apps", store: "storage", fetchDocuments: "fetchDocument" };

/**
 * Refuses options createAuthServer would otherwise ignore or trip over later: an unknown or
 * misspelled name, the document given whole and in parts, a hook or callback that is not a
 * function, a storage without its two verbs. The configuration document itself is the core's to
 * check (an unknown setting in it is refused by name too).
 */
function checkOptions(options) {
  const fail = (why) => {
    throw new TypeError(`edgegrant: createAuthServer: ${why}`);
  };
  const names = (list) => list.join(", ");
  if (typeof options !== "object" || options === null || Array.isArray(options)) fail("options must be an object");
  for (const name of Object.keys(options)) {
    if (!OPTIONS.includes(name)) fail(`unknown option ${name}${MEANT[name] ? ` (did you mean ${MEANT[name]}?)` : ""}; the options are ${names(OPTIONS)}`);
  }
  const parts = CONFIG_PARTS.filter((name) => options[name] !== undefined);
  if (options.config !== undefined && parts.length > 0) fail(`give the configuration as config or as its parts, not both (config and ${names(parts)})`);
  const { storage, hooks } = options;
  if (!storage || typeof storage.read !== "function" || typeof storage.apply !== "function") fail("options.storage must have read(keys) and apply(transaction)");
  for (const name of ["clock", "random", "onAudit", "onRefusal", "fetchDocument"]) {
    if (options[name] !== undefined && typeof options[name] !== "function") fail(`options.${name} must be a function`);
  }
  const optOut = options.anyDocumentHostWithoutAddressCheck;
  if (optOut !== undefined && typeof optOut !== "boolean") fail("options.anyDocumentHostWithoutAddressCheck must be true or false");
  if (hooks === undefined) return;
  if (typeof hooks !== "object" || hooks === null || Array.isArray(hooks)) fail("options.hooks must be an object");
  for (const name of Object.keys(hooks)) {
    if (!HOOKS.includes(name)) fail(`unknown hook ${name}; the hooks are ${names(HOOKS)}`);
  }
  for (const name of ["currentUser", "sourceOf"]) {
    if (hooks[name] !== undefined && typeof hooks[name] !== "function") fail(`hooks.${name} must be a function`);
  }
  if (hooks.api === undefined) return;
  if (typeof hooks.api !== "object" || hooks.api === null || Array.isArray(hooks.api)) fail("hooks.api must be an object of handlers by path");
  for (const [path, handler] of Object.entries(hooks.api)) {
    if (!path.startsWith("/")) fail(`hooks.api["${path}"]: a path starts with /`);
    if (typeof handler !== "function") fail(`hooks.api["${path}"] must be a function (principal, request) => Response`);
  }
}

/**
 * Refuses to fetch client metadata documents from any host with the web fetch (`fetchDocument`),
 * unless the operator says so by name. That fetch cannot see the addresses a name resolves to
 * (workerd's fetch resolves names itself and shows none), so a document URL on a public name
 * that points at 10.0.0.1 or 127.0.0.1 is fetched from there: on Cloudflare's network a Worker
 * cannot reach private addresses, but under `wrangler dev`, self-hosted workerd or any other
 * runtime without the Node fetch it can. A `hosts` list names where documents may come from;
 * `anyDocumentHostWithoutAddressCheck: true` accepts the risk. Only the default fetcher is
 * judged: a `fetchDocument` of the host's own is the host's to vet (on Node, the entry points
 * pass `fetchDocumentNode`, which checks every resolved address).
 */
function checkDocumentHosts(config, anyHost) {
  const documents = config?.profile?.clients?.documents;
  if (typeof documents !== "object" || documents === null || anyHost === true) return;
  if (Array.isArray(documents.hosts) && documents.hosts.length > 0) return;
  throw new Error(
    "edgegrant: createAuthServer: profile.clients.documents is on for any host, and this runtime's fetch cannot check the addresses a name " +
      "resolves to (a document URL on a name that points at a private or loopback address would be fetched from there). " +
      'List the hosts documents may come from in profile.clients.documents.hosts (["*.example.com"]), pass a fetchDocument that checks ' +
      "resolved addresses (on Node, edgegrant's own entry points do), or accept the risk by name with anyDocumentHostWithoutAddressCheck: true " +
      "(on Cloudflare's network a Worker cannot reach private addresses; under wrangler dev or self-hosted workerd it can)",
  );
}

/**
 * Creates an authorization server.
 *
 * @param {object} options
 * @param {object} [options.config] the configuration document (apps, policy, api_endpoints, pages,
 *   profile, server_key)
 * @param {string} [options.serverKey] or its parts: the server's own secret (32 random bytes,
 *   base64url), required,
 * @param {object[]} [options.apps] registered apps,
 * @param {object} [options.policy] policy switches,
 * @param {object} [options.apiEndpoints] each API endpoint by path, with its Required Scope (or
 *   `{ scope, max_body_bytes }`),
 * @param {object} [options.pages] page templates (consent, code, error, sign_in),
 * @param {object} [options.profile] the dialect (`{ kind: "reference" }`, the default, or
 *   `{ kind: "standards", issuer }`)
 * @param {Record<string,string>} [options.scopeDescriptions] each scope in plain words, for the
 *   consent page
 * @param {object} options.storage a storage adapter: `read(keys)` and `apply(transaction)`
 * @param {object} [options.hooks] `currentUser(request)`, `api[path](principal, request)` and
 *   `sourceOf(request)`, the client's address (for attempt limits; from a header only a trusted
 *   proxy sets)
 * @param {Function} [options.fetchDocument] fetches a client's metadata document for the core
 *   (`profile.clients.documents`): `({ url, maxBytes, timeoutMs })` → `{ status, cacheControl,
 *   body }` or `{ failed }`. Default on Node (every entry point: the package root, `edgegrant/node`):
 *   `fetchDocumentNode` (node:https, every resolved address checked); elsewhere (Workers):
 *   `fetchDocument` (fetch, with the URL guard only), which needs `documents.hosts` or the opt-out
 *   below.
 * @param {boolean} [options.anyDocumentHostWithoutAddressCheck] with the default web fetcher,
 *   fetch documents from any host although the addresses names resolve to cannot be checked
 *   (see checkDocumentHosts); without it such a configuration is refused.
 */
export function createAuthServer(options) {
  checkOptions(options);
  const { storage, clock = systemClock, random = drawEntropy, onAudit, onRefusal } = options;
  const config = options.config ?? {
    server_key: options.serverKey,
    apps: options.apps ?? [],
    ...(options.policy && { policy: options.policy }),
    ...(options.apiEndpoints && { api_endpoints: options.apiEndpoints }),
    ...(options.pages && { pages: options.pages }),
    ...(options.profile && { profile: options.profile }),
    ...(options.scopeDescriptions && { scope_descriptions: options.scopeDescriptions }),
  };
  const core = createCore(config);
  if (options.fetchDocument === undefined) checkDocumentHosts(config, options.anyDocumentHostWithoutAddressCheck);
  // Bodies are read up to their path's bound: an API endpoint's own (1 MiB by default), else
  // the OAuth endpoints' max_input_bytes.
  const limit = core.maxInputBytes();
  const apiLimits = new Map(Object.keys(config.api_endpoints ?? {}).map((path) => [path, core.bodyLimit(path)]));
  const bodyLimit = (path) => apiLimits.get(path) ?? limit;
  const currentUser = options.hooks?.currentUser ?? (() => null);
  // The client's address for attempt limits: only the host knows which header (if any) a
  // trusted proxy sets — on Cloudflare, CF-Connecting-IP.
  const sourceOf = options.hooks?.sourceOf ?? (() => undefined);
  const api = { ...options.hooks?.api };
  warnAtStart(core, config, api);
  const fetcher = options.fetchDocument ?? fetchDocument;
  /** Runs a core request to its end: its outcome, or a promise of it (see drive). */
  const run = (request) => drive(request, storage, onAudit, false, fetcher);
  /** Starts a core request with fresh entropy; the pool's copy is wiped once the core holds its own. */
  const withEntropy = (start) => {
    const entropy = random();
    try {
      return start(entropy);
    } finally {
      if (random === drawEntropy) entropy.fill(0);
    }
  };

  /**
   * The plain-value entry: `{ method, url | path + query, headers, body, user, source, scheme }`
   * — `url` as node:http's `req.url`, `headers` as its `rawHeaders` (or pairs), `body` a
   * Uint8Array (one byte past `core.bodyLimit(path)` is enough), `user` the signed-in `{ account_id,
   * uid }` or null, `source` the client's address, `scheme` "http" or "https" when the host
   * knows how the client reached it (a TLS socket, say).
   * Resolves a reply to send or an authorized call to serve (see runRequest).
   */
  async function handle(input) {
    return start(input);
  }

  /** handle's work: the outcome, or a promise of it (an in-memory or SQLite store answers at once). */
  function start(input) {
    let { path, query = "" } = input;
    if (path === undefined) {
      const url = input.url ?? "/";
      const at = url.indexOf("?");
      path = at < 0 ? url : url.slice(0, at);
      query = at < 0 ? "" : url.slice(at + 1);
    }
    const now = clock();
    const request = { method: input.method, path, query, headers: input.headers, body: input.body, user: input.user ?? null, source: input.source, scheme: input.scheme };
    const result = run(withEntropy((entropy) => core.request(request, now, entropy)));
    if (!onRefusal) return result;
    const report = (reply) => reportRefusal(onRefusal, core, request, reply, now);
    return settled(result) ? result.then(report) : report(result);
  }

  /** The request's values as the core takes them, its body read (up to one byte past the limit). */
  async function plainOf(request) {
    const { scheme, host, path, query } = urlParts(request.url);
    // The core compares a consent form's Origin with the Host it was sent to: for a Fetch
    // Request that is its URL's (a Host header, where a runtime keeps one, can differ behind a
    // proxy or a test harness).
    const headers = ["host", host];
    for (const [name, value] of request.headers) if (name !== "host") headers.push(name, value);
    // A GET's or HEAD's body (a runtime may hand one over) is dropped, not given to the core.
    let body = NO_BODY;
    if (request.body && bodyless(request.method)) await drain(request.body.getReader());
    else if (request.body) body = await readBody(request, bodyLimit(path));
    let user = currentUser(request);
    if (settled(user)) user = await user;
    // The URL's scheme is how the client reached this server (a Worker's is the edge's).
    return { method: request.method, path, query, headers, body, user: user ?? null, scheme };
  }

  async function serve(request, context) {
    const plain = await plainOf(request);
    const body = plain.body;
    // The hook knows which header a trusted proxy sets; where it names none, the host's own word
    // (a socket's peer).
    const source = sourceOf(request) ?? context?.source ?? undefined;
    plain.source = source;
    let result = start(plain);
    if (settled(result)) result = await result;
    if (result.kind === "serve") {
      const handler = api[plain.path];
      // The handler gets the request with its body (read once, here), so an operation can take
      // arguments; the core's headers (no-store, nosniff, CORS) go on whatever it answers.
      const answer = handler
        ? await handler(result.principal, withBody(request, body))
        : new Response("null", { status: 404, headers: { "Content-Type": "application/json" } });
      return withHeaders(answer, result.headers);
    }
    return new Response(result.body === "" ? null : result.body, { status: result.status, headers: result.headers });
  }

  return {
    core,
    handle,
    /** How much of a body to `path` the core reads (as `core.bodyLimit`, without a call into it). */
    bodyLimit,
    /**
     * Serves the core's endpoints and the declared API routes; 404 elsewhere. `context.source`:
     * the client's address as the host knows it (a socket's peer), used where no `sourceOf` hook
     * names one.
     */
    async fetch(request, context) {
      try {
        return await serve(request, context);
      } finally {
        // A body nobody read (a GET with a body, say) is read to its end before the answer.
        if (request.body && !request.bodyUsed && !request.body.locked) await drain(request.body.getReader());
      }
    },
    /**
     * A credential check of the host's own (its sign-in form), limited like the token
     * endpoint's: `attempters` as `{ account }` and `{ source }`. Before the check, call it with
     * none: the check is counted as a failure now (atomically: checks running at once never
     * pass the limit together) if it may go ahead; after a correct one, with
     * `{ succeeded: true }`: that count is taken back. An account name is counted per source
     * when a source is given, so no one elsewhere can lock its owner out. Resolves
     * `{ allowed, limited, unavailable, retryAfter }`:
     * check when `allowed`; `limited`: an attempter is at its limit (429, wait `retryAfter`
     * seconds); `unavailable`: the store failed, which is no one's limit (503, retry after
     * `retryAfter`); neither: the attempters themselves were refused (a name no one can have).
     */
    async attempts(attempters, options = {}) {
      // The old shape counted a failure afterwards: a host still written for it would count twice.
      if ("failed" in options) throw new TypeError("attempts(): a check is counted before it runs; after a correct one pass { succeeded: true }");
      const succeeded = options.succeeded === true;
      const now = clock();
      const request = withEntropy((entropy) => core.attempts(attempters, succeeded, now, entropy));
      // The core reads its own reply (AttemptVerdict): nothing is parsed back out of it here.
      const { verdict, retryAfter } = await drive(request, storage, onAudit, true);
      return { allowed: verdict === "allowed", limited: verdict === "limited", unavailable: verdict === "unavailable", retryAfter };
    },
    /**
     * Where a Fetch request runs, for a host that spreads its records over partitions (one
     * Durable Object each, say): resolves `{ partition, request }` — the core's routing answer
     * (null: no account's records, run it anywhere) and the request to forward there, its body
     * read here once and carried along.
     */
    async route(request) {
      const plain = await plainOf(request);
      // Its body, once read, travels as the bytes read (even none: a used body cannot be
      // forwarded); a GET or HEAD travels without one, as the core saw it.
      const forward = request.bodyUsed
        ? new Request(request.url, {
            method: request.method,
            headers: request.headers,
            body: bodyless(request.method) ? null : plain.body,
            signal: request.signal,
            redirect: request.redirect,
          })
        : request;
      return { partition: core.partitionOf(plain), request: forward };
    },
    /** The user (or a team admin) unlinks `app`: every token of that app and user ends. */
    async unlink(app, accountId, by = "user") {
      const now = clock();
      return run(withEntropy((entropy) => core.unlink(app, accountId, by, now, entropy)));
    },
  };
}
