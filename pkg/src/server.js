// The driver: serves the core's endpoints on the Fetch API (`Request` → `Response`), running the
// step loop against a storage adapter. Every decision is the core's; this file only carries
// bytes, records and time between it and the host.
import { createCore, entropyLength } from "./core.js";

const PAGE_HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  "Cache-Control": "no-store",
  // The consent page must not be framed (clickjacking), and codes in URLs must not leak.
  "X-Frame-Options": "DENY",
  "Content-Security-Policy": "frame-ancestors 'none'",
  "Referrer-Policy": "no-referrer",
};

/** Escapes text for HTML content and attribute values. */
export const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

/** An HTML page with the security headers every page of the flow carries. */
export function page(status, title, bodyHtml) {
  const html = `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head><body>${bodyHtml}</body></html>`;
  return new Response(html, { status, headers: PAGE_HEADERS });
}

/**
 * The attributes that say, for machines (tests, the conformance runner), which page of the flow
 * this is: put them on the page's first element. `fields` may name the app, scopes, access type,
 * code or error shown.
 */
export function pageData(kind, fields = {}) {
  const names = { app: "app", scopes: "scopes", access_type: "access-type", code: "code", error: "error" };
  let attributes = ` data-page="${escapeHtml(kind)}"`;
  for (const [field, value] of Object.entries(fields)) {
    if (names[field] && value !== undefined && value !== null) {
      attributes += ` data-${names[field]}="${escapeHtml(Array.isArray(value) ? value.join(" ") : value)}"`;
    }
  }
  return attributes;
}

/** The consent page's marker: the app, the scopes and the access type asked for. */
export const consentPageData = (prompt) => pageData("consent", { app: prompt.app, scopes: prompt.scopes, access_type: prompt.access_type });

const defaultHooks = {
  currentUser: async () => null,
  signIn: async () => page(401, "Sign in", `<h1${pageData("sign_in")}>Sign in required</h1><p>This host has no sign-in hook.</p>`),
  consentPage: async ({ prompt, query }) =>
    page(
      200,
      "Authorize",
      `<h1${consentPageData(prompt)}>${escapeHtml(prompt.app_name)} wants access</h1><ul>${prompt.scopes.map((s) => `<li>${escapeHtml(s)}</li>`).join("")}</ul>` +
        `<form method="post" action="/oauth2/authorize"><input type="hidden" name="query" value="${escapeHtml(query)}">` +
        `<button name="decision" value="allow">Allow</button> <button name="decision" value="deny">Deny</button></form>`,
    ),
  codePage: async ({ code }) => page(200, "Your code", `<h1${pageData("code", { code })}>Copy this code into the app</h1><p><code>${escapeHtml(code)}</code></p>`),
  errorPage: async ({ error, description }) => page(400, "Error", `<h1${pageData("error", { error })}>${escapeHtml(error)}</h1><p>${escapeHtml(description)}</p>`),
  api: {},
};

/** Seconds since the epoch. */
const systemClock = () => Math.floor(Date.now() / 1000);

// Entropy from the platform CSPRNG, drawn 64 requests' worth at a time: one getRandomValues
// call costs about as much as a bearer check's whole core work, and its cost hardly depends on
// the length. Each byte is handed out once, then zeroed in the pool.
const POOLED_REQUESTS = 64;
let pool = new Uint8Array(0);
let poolOffset = 0;
function drawEntropy() {
  const length = entropyLength();
  if (pool.length !== length * POOLED_REQUESTS || poolOffset === pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(length * POOLED_REQUESTS));
    poolOffset = 0;
  }
  const entropy = pool.slice(poolOffset, poolOffset + length);
  pool.fill(0, poolOffset, poolOffset + length);
  poolOffset += length;
  return entropy;
}

/**
 * Runs one input through the core to its outcome: loads the keys each step asks for in one
 * batch, applies transactions, and on a lost race starts over with fresh records, at most
 * `maxAttempts` times. Time and entropy are drawn once per attempt.
 */
export async function runSteps(core, storage, input, { clock = systemClock, random, maxAttempts = 5, onAudit } = {}) {
  const draw = random ?? drawEntropy;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const request = core.begin(input, clock(), draw());
    try {
      let loaded = {};
      for (let round = 0; ; round++) {
        if (round > 8) throw new Error("edgegrant: the core asked for records more than 8 times");
        const step = request.step(loaded);
        if (step.step === "need_records") {
          const found = await storage.read(step.keys);
          loaded = {};
          for (const key of step.keys) loaded[key] = found.get(key) ?? null;
        } else if (step.step === "respond") {
          return step.outcome;
        } else if (await storage.apply(step.transaction)) {
          for (const event of step.transaction.audit) onAudit?.(event);
          return step.outcome;
        } else {
          break; // a conditional write failed: another request won; decide again from fresh records
        }
      }
    } finally {
      request.free();
    }
  }
  const body = JSON.stringify({ error: "temporarily_unavailable", error_description: "storage contention, retry" });
  return {
    kind: "http",
    value: { status: 503, headers: [["Content-Type", "application/json"], ["Retry-After", "1"], ["Cache-Control", "no-store"]], body },
  };
}

/**
 * Reads what is left of a body and drops it. An answer sent over an unread body breaks the
 * connection: node:http resets it before the client reads the answer, and workerd fails
 * ("Can't read from request stream after response has been sent"), under wrangler dev the next
 * request too. Memory stays bounded; the host's request timeout bounds the time.
 */
async function drain(reader) {
  try {
    while (!(await reader.read()).done);
  } catch {
    // The client went away: nothing more to read.
  }
}

/** The body, read up to one byte over `limit` (the core refuses it then, with the right error); the rest is dropped. */
async function readBody(request, limit) {
  if (!request.body) return new Uint8Array(0);
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
 * Creates an authorization server.
 *
 * @param {object} options
 * @param {object[]} [options.apps] registered apps (or pass a whole `config` document)
 * @param {object} [options.policy] policy switches
 * @param {Record<string,string>} [options.apiEndpoints] Required Scope of each `/2/` endpoint
 * @param {object} options.storage a storage adapter: `read(keys)` and `apply(transaction)`
 * @param {object} [options.hooks] what the core cannot know: the signed-in user, the pages, the API
 */
export function createAuthServer(options) {
  const { storage, clock = systemClock, random, maxAttempts = 5, onAudit } = options;
  if (!storage || typeof storage.read !== "function" || typeof storage.apply !== "function") {
    throw new Error("edgegrant: options.storage must have read(keys) and apply(transaction)");
  }
  const config = options.config ?? {
    apps: options.apps ?? [],
    ...(options.policy && { policy: options.policy }),
    ...(options.apiEndpoints && { api_endpoints: options.apiEndpoints }),
  };
  const core = createCore(config);
  const limit = config.policy?.max_input_bytes ?? 16384;
  const hooks = { ...defaultHooks, ...options.hooks, api: { ...options.hooks?.api } };
  const run = (input) => runSteps(core, storage, input, { clock, random, maxAttempts, onAudit });

  async function toHttpRequest(request, url) {
    const query = url.search.slice(1); // the token endpoint may read it (Policy)
    return { method: request.method, headers: [...request.headers], body: await readBody(request, limit), query };
  }

  async function render(outcome, request) {
    switch (outcome.kind) {
      case "http":
        return new Response(outcome.value.body, { status: outcome.value.status, headers: outcome.value.headers });
      case "redirect":
        return new Response(null, { status: 302, headers: { Location: outcome.value, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" } });
      case "display_code":
        return hooks.codePage({ ...outcome.value, request });
      case "error_page":
        return hooks.errorPage({ ...outcome.value, request });
      case "unlinked":
        return new Response("null", { headers: { "Content-Type": "application/json" } });
      default:
        throw new Error(`edgegrant: unexpected outcome ${outcome.kind}`);
    }
  }

  async function authorize(request, url) {
    const query = url.search.slice(1);
    const user = (await hooks.currentUser(request)) ?? null;
    const outcome = await run({ kind: "authorize", query, user });
    if (outcome.kind !== "consent") return render(outcome, request);
    if (!user) return hooks.signIn(request, { returnTo: url.pathname + url.search });
    if (outcome.value.already_granted) return decide(request, query, user, "allow");
    return hooks.consentPage({ prompt: outcome.value, query, user, request });
  }

  async function decide(request, query, user, decision) {
    return render(await run({ kind: "consent", query, user, decision }), request);
  }

  async function consentForm(request, url) {
    // CSRF: a cross-site form POST is refused. Sec-Fetch-Site, which pages cannot set, decides
    // when present; otherwise Origin must be ours. (Under `Referrer-Policy: no-referrer`, which
    // the consent page sends, Chromium posts `Origin: null` even from the same origin.)
    const origin = request.headers.get("origin");
    const site = request.headers.get("sec-fetch-site");
    const crossSite = site ? site !== "same-origin" : origin !== null && origin !== url.origin;
    if (crossSite) {
      return hooks.errorPage({ error: "invalid_request", description: "the consent form was posted from another site", request });
    }
    const form = new URLSearchParams(new TextDecoder().decode(await readBody(request, limit)));
    const query = form.get("query");
    const decision = form.get("decision");
    if (query === null || (decision !== "allow" && decision !== "deny")) {
      return hooks.errorPage({ error: "invalid_request", description: "the consent form is incomplete", request });
    }
    const user = (await hooks.currentUser(request)) ?? null;
    if (!user) return hooks.signIn(request, { returnTo: `/oauth2/authorize?${query}` });
    return decide(request, query, user, decision);
  }

  async function api(request, url) {
    const outcome = await run({ kind: "api_call", endpoint: url.pathname, request: await toHttpRequest(request, url) });
    if (outcome.kind !== "authorized") return render(outcome, request);
    const handler = hooks.api[url.pathname];
    return handler ? handler(outcome.value, request) : new Response("null", { status: 404 });
  }

  async function route(request) {
    const url = new URL(request.url);
    switch (url.pathname) {
      case "/oauth2/authorize":
        if (request.method === "GET") return authorize(request, url);
        if (request.method === "POST") return consentForm(request, url);
        return new Response(null, { status: 405, headers: { Allow: "GET, POST" } });
      case "/oauth2/token":
        return render(await run({ kind: "token", request: await toHttpRequest(request, url) }), request);
      case "/2/auth/token/revoke":
        return render(await run({ kind: "revoke", request: await toHttpRequest(request, url) }), request);
      default:
        if (core.requiredScope(url.pathname) !== undefined) return api(request, url);
        return new Response("Not Found", { status: 404 });
    }
  }

  return {
    core,
    /** Serves `/oauth2/authorize`, `/oauth2/token`, `/2/auth/token/revoke` and the declared `/2/` routes. */
    async fetch(request) {
      try {
        return await route(request);
      } finally {
        // A body no route read (an unknown path, a page) is read to its end before the answer.
        if (request.body && !request.bodyUsed && !request.body.locked) await drain(request.body.getReader());
      }
    },
    /** The user (or a team admin) unlinks `app`: every token of that app and user ends. */
    async unlink(app, accountId, by = "user") {
      return run({ kind: "unlink", app, account_id: accountId, by });
    },
    /** Runs any input through the step loop (the lower-level API). */
    run,
  };
}
