// What the example hosts share, on the Fetch API only (Request in, Response out): the checks of
// the JSON configuration, sign-in against scrypt password hashes, HMAC-signed session cookies,
// the consent / code / error pages and POST /2/users/get_current_account. The hosts add only
// what differs: how a request arrives, where records are stored, where the config comes from.
//
// node:crypto is here because both runtimes have it: Node, and workerd under the
// `nodejs_compat` flag (scryptSync, createHmac and timingSafeEqual checked there; scryptSync
// gives the same hashes as Node).
//
// The host imports ../../pkg/src/node.js or ../../pkg/src/workers.js first: that loads the
// WebAssembly core, which checkConfig and createAuthServer below call into.
import { Buffer } from "node:buffer";
import { createHmac, scryptSync, timingSafeEqual } from "node:crypto";
import { checkConfig, createAuthServer, escapeHtml, isCrossSite, page, pageData, readBody } from "../../pkg/src/index.js";
import { closing, readNodeBody } from "../../pkg/src/node-http.js";
import PAGES from "./pages.json" with { type: "json" };

const STYLE = `<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1e1919}
h1{font-size:1.4rem}button,input{font:inherit;padding:.5rem 1rem;border-radius:.4rem;border:1px solid #bbb}
button.allow{background:#0061fe;color:#fff;border-color:#0061fe}ul{padding-left:1.2rem}code{font-size:1.1rem;word-break:break-all;background:#f4f4f4;padding:.4rem}</style>`;

/** The sample configurations' `session_secret`s (Node's, the Worker's): public, so they sign nobody in outside the demo. */
export const SAMPLE_SESSION_SECRETS = ["change-me-to-32-or-more-random-characters", "change-me-worker-session-secret-32-or-more-characters"];
/** The sample configurations' `server_key`s (Node's, the Worker's, the MCP example's): public, so anyone could open their credentials' routes. */
export const SAMPLE_SERVER_KEYS = ["bm9kZS1zYW1wbGUtc2VydmVyLWtleS1jaGFuZ2UtbWU", "d29ya2VyLXNhbXBsZS1zZXJ2ZXIta2V5LWNoYW5nZSE", "bWNwLWV4YW1wbGUtc2VydmVyLWtleS1jaGFuZ2UtbWU"];

/**
 * Checks a parsed configuration document (format: examples/node/README.md). Returns it with
 * `core`, the part the edgegrant core reads; throws an Error saying what is wrong. The sample's
 * placeholder `session_secret` and `server_key` are refused unless `allowSampleSecret` (the demo
 * command's EDGEGRANT_ALLOW_SAMPLE_SECRET=1): anyone could forge its session cookies, and tell
 * whose its credentials are.
 */
export function parseConfig(doc, { allowSampleSecret = false } = {}) {
  const fail = (why) => {
    throw new Error(why);
  };
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) fail("not a JSON object");
  if (!Array.isArray(doc.users) || doc.users.length === 0) fail("users must be a non-empty list");
  for (const u of doc.users) {
    if (typeof u?.username !== "string" || typeof u.password_scrypt !== "string" || typeof u.account_id !== "string") {
      fail("every user needs username, password_scrypt and account_id");
    }
    checkAccountFields(u, fail);
  }
  if (typeof doc.session_secret !== "string" || doc.session_secret.length < 32) fail("session_secret must be at least 32 characters");
  if (SAMPLE_SESSION_SECRETS.includes(doc.session_secret) && !allowSampleSecret) {
    fail(
      "session_secret is the sample configuration's placeholder, which anyone can read: set your own, e.g. " +
        `node -e "console.log(require('node:crypto').randomBytes(32).toString('base64url'))" ` +
        "(the local demo runs with it under EDGEGRANT_ALLOW_SAMPLE_SECRET=1)",
    );
  }
  if (SAMPLE_SERVER_KEYS.includes(doc.server_key) && !allowSampleSecret) {
    fail(
      "server_key is the sample configuration's placeholder, which anyone can read: set your own, e.g. " +
        `node -e "console.log(require('node:crypto').randomBytes(32).toString('base64url'))" ` +
        "(the local demo runs with it under EDGEGRANT_ALLOW_SAMPLE_SECRET=1)",
    );
  }
  const core = { apps: doc.apps ?? [], policy: doc.policy, api_endpoints: doc.api_endpoints, profile: doc.profile, server_key: doc.server_key, scope_descriptions: doc.scope_descriptions };
  for (const field of ["policy", "api_endpoints", "profile", "server_key", "scope_descriptions"]) if (core[field] === undefined) delete core[field];
  const check = checkConfig(core);
  if (check.tag !== "ok") fail(check.content);
  return { ...doc, core };
}

/**
 * The user fields that `POST /2/users/get_current_account` answers with (account() below) must
 * make an account that the official SDKs accept: their stone-generated FullAccount type (Python
 * SDK, dropbox/users.py and dropbox/common.py) checks every result. So a user is refused here,
 * at start, rather than the SDKs failing on every account call:
 *   account_id  AccountId: exactly 40 characters (the reference service's `dbid:` + 35); here also
 *               visible ASCII, as the core's AccountId is
 *   uid         a string or a whole number; it is root_info's root_namespace_id and
 *               home_namespace_id, NamespaceId: letters, digits, `-`, `_`, `:` (1–128, the core's Uid)
 *   country     optional; `country` is two characters (an ISO 3166-1 alpha-2 code, upper case)
 *   name, email optional strings
 * The same rules as examples/native/src/config.rs `accounts`.
 */
function checkAccountFields(u, fail) {
  const who = `user ${u.username}`;
  if (!/^[\x21-\x7e]{40}$/.test(u.account_id)) {
    fail(`${who}: account_id must be 40 visible ASCII characters, like dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc (the Dropbox SDKs' AccountId type)`);
  }
  const uid = typeof u.uid === "number" && Number.isSafeInteger(u.uid) && u.uid >= 0 ? String(u.uid) : u.uid;
  if (typeof uid !== "string" || !/^[-_0-9a-zA-Z:]{1,128}$/.test(uid)) {
    fail(`${who}: uid must be a whole number or 1-128 letters, digits, - _ : (it is the account's namespace id, the Dropbox SDKs' NamespaceId type)`);
  }
  if (u.country != null && (typeof u.country !== "string" || !/^[A-Z]{2}$/.test(u.country))) {
    fail(`${who}: country must be a two-letter country code such as US`);
  }
  for (const field of ["name", "email"]) {
    if (u[field] != null && typeof u[field] !== "string") fail(`${who}: ${field} must be a string`);
  }
}

/**
 * A stored hash for an account name no user has, shaped like the configured ones (their salt
 * and hash lengths; scrypt's parameters are Node's defaults for all, as hash-password.mjs
 * makes them): checking a password against it costs what checking a real one does, so the
 * time of a refusal does not tell which names exist. No password is taken for matching it.
 */
function decoyHash(users) {
  const shape = users.map((u) => u.password_scrypt.split("$")).find(([scheme, salt, hash]) => scheme === "scrypt" && salt && hash);
  const [, salt = "00".repeat(16), hash = "00".repeat(32)] = shape ?? [];
  return `scrypt$${"00".repeat(salt.length >> 1)}$${"00".repeat(hash.length >> 1)}`;
}

/** `scrypt$<salt hex>$<hash hex>` (see examples/node/hash-password.mjs). */
function passwordMatches(stored, password) {
  const [scheme, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "hex");
  const actual = scryptSync(password, Buffer.from(salt, "hex"), expected.length);
  return timingSafeEqual(actual, expected);
}

/** How long a session lasts, by the server's clock (the cookie's Max-Age says the same to the browser). */
export const SESSION_SECONDS = 86_400;

/**
 * Session cookies: `session=<base64url(account id)>.<expiry, Unix seconds>.<HMAC-SHA256 of both>`.
 * They hold no state, so sessions survive a restart; the server refuses one past its expiry
 * whatever the browser kept, and the signature covers the expiry. `Secure` when served over https.
 */
export function sessions(secret) {
  const sign = (value) => createHmac("sha256", secret).update(value).digest("base64url");
  const attributes = (secure, maxAge) => `; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure ? "; Secure" : ""}`;
  return {
    /** The `Set-Cookie` value that signs `accountId` in at `now` until `expires` (default a day later). */
    cookie(accountId, { now, expires = now + SESSION_SECONDS, secure = false }) {
      const signed = `${Buffer.from(accountId).toString("base64url")}.${expires}`;
      return `session=${signed}.${sign(signed)}${attributes(secure, Math.max(0, expires - now))}`;
    },
    /** The `Set-Cookie` value that signs out. */
    cleared: ({ secure = false } = {}) => `session=${attributes(secure, 0)}`,
    /** The account a `Cookie` header's session signs in at `now`, or null. */
    accountIdOf(header, now) {
      if (!header) return null;
      const cookie = header.split(/;\s*/).find((c) => c.startsWith("session="));
      const parts = (cookie?.slice("session=".length) ?? "").split(".");
      if (parts.length !== 3) return null;
      const [value, expires, mac] = parts;
      const expected = Buffer.from(sign(`${value}.${expires}`));
      const given = Buffer.from(mac);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      if (!/^\d{1,15}$/.test(expires) || !(now < Number(expires))) return null;
      return Buffer.from(value, "base64url").toString();
    },
  };
}

/**
 * The account in the reference service's `get_current_account` shape: every field the official
 * SDKs' FullAccount type requires (the optional ones, profile_photo_url, team, team_member_id
 * and root_info's home_path, are left out, as the reference service leaves out what is null).
 * parseConfig checked the user's fields against that type. Same as examples/native/src/http.rs
 * `account_json`.
 */
function account(user) {
  const [given, ...rest] = (user.name ?? user.username).split(" ");
  const surname = rest.join(" ");
  return {
    account_id: user.account_id,
    name: {
      given_name: given,
      surname,
      familiar_name: given,
      display_name: user.name ?? user.username,
      abbreviated_name: (given[0] ?? "") + (surname[0] ?? ""),
    },
    email: user.email ?? `${user.username}@example.com`,
    email_verified: true,
    disabled: false,
    country: user.country ?? "US",
    locale: "en",
    // Required, a string; this host runs no referral programme, so there is no link to give.
    referral_link: "",
    is_paired: false,
    account_type: { ".tag": "basic" },
    root_info: { ".tag": "user", root_namespace_id: String(user.uid), home_namespace_id: String(user.uid) },
  };
}

/**
 * Where to send the browser after it signs in: `target` resolved the way the browser will
 * resolve it (WHATWG URL, from this host's root), as a path on this host, or null when it leads
 * anywhere else. The path is the URL's own serialization (percent-encoded, no control
 * characters), so it is always a valid Location; a path that starts with `//` gets `/.` in front
 * (as the URL standard serializes such paths), so no browser reads it as another host.
 */
export function localTarget(target, origin) {
  let url;
  try {
    url = new URL(target ?? "/", `${origin}/`);
  } catch {
    return null;
  }
  if (url.origin !== origin) return null;
  const path = `${url.pathname}${url.search}${url.hash}`;
  return path.startsWith("//") ? `/.${path}` : path;
}

/** How much of a sign-in form is read: a name, a password and a return_to fit in a few KiB. */
const SIGN_IN_FORM_BYTES = 4096;

/** The sign-in page: 200, or with `status` and a message (403 for refused credentials or a cross-site post, 400 for a return_to that leads off the host, 413 for a form over SIGN_IN_FORM_BYTES, 429 while sign-in is held, 503 while the store is unavailable). */
const signInPage = (returnTo, { status = 200, error = "", headers = {} } = {}) => {
  const shown = page(
    status,
    "Sign in",
    `${STYLE}<h1${pageData("sign_in")}>Sign in</h1>${error ? `<p style="color:#c00">${escapeHtml(error)}</p>` : ""}
    <form method="post" action="/signin"><input type="hidden" name="return_to" value="${escapeHtml(returnTo)}">
    <p><input name="username" placeholder="username" autocomplete="username" required></p>
    <p><input name="password" type="password" placeholder="password" autocomplete="current-password" required></p>
    <p><button class="allow">Sign in</button></p></form>`,
  );
  for (const [name, value] of Object.entries(headers)) shown.headers.set(name, value);
  return shown;
};

/** Reads a body nobody needs and drops it (answering over an unread body breaks the connection in node:http and workerd), as far as readBody reads. */
const drain = (request) => readBody(request, 0);

/** Seconds since the epoch, by the system clock. */
const systemClock = () => Math.floor(Date.now() / 1000);

/** What a client is told of a fault of the host: no more than this. */
export const INTERNAL_ERROR = { error: "server_error", error_description: "Internal error" };

/**
 * The answer to a fault of the host (an exception where none was expected): a generic 500. The
 * exception goes to the log only; its text or stack would tell a client how the host is built.
 */
export function internalError(error) {
  console.error("edgegrant: the host failed:", error);
  return new Response(JSON.stringify(INTERNAL_ERROR), { status: 500, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
}

/**
 * The host's own pages: `GET /`, `GET`/`POST /signin` and `POST /signout`. Returns a handler that
 * answers those and resolves null for every other request. Holds no records: a Worker runs it
 * outside the Durable Object, so the deliberately slow scrypt never stalls the object.
 *
 * `clock`: the host's (test mode moves it). `attempts(attempters, { succeeded })`: the auth
 * server's limit on failed checks (createAuthServer's `attempts`), per account name (from each
 * source) and source: each check counted before it runs, taken back when it succeeds.
 * `sourceOf(request)`: the client's address, or null.
 */
export function signInRoutes(config, { title = "host", clock = systemClock, attempts, sourceOf = () => null } = {}) {
  const session = sessions(config.session_secret);
  const usersByName = new Map(config.users.map((u) => [u.username, u]));
  const decoy = decoyHash(config.users);
  const byAccount = new Map(config.users.map((u) => [u.account_id, u]));
  return async function handle(request) {
    const url = new URL(request.url);
    const secure = url.protocol === "https:";
    if (url.pathname === "/signin" && request.method === "GET") {
      const target = localTarget(url.searchParams.get("return_to"), url.origin);
      return target === null ? signInPage("/", { status: 400, error: "That link would lead away from this site." }) : signInPage(target);
    }
    if (url.pathname === "/signin" && request.method === "POST") {
      // Login CSRF: another site must not sign a browser in (to its own account): the rule the
      // consent form follows, from the core.
      if (isCrossSite(request.headers, url.host, url.protocol.slice(0, -1))) {
        await drain(request);
        return signInPage("/", { status: 403, error: "This sign-in form was sent from another site." });
      }
      // Read with a bound, never whole: a longer form is refused, the rest of it left unread.
      const bytes = await readBody(request, SIGN_IN_FORM_BYTES);
      if (bytes.length > SIGN_IN_FORM_BYTES) return signInPage("/", { status: 413, error: "This form is too large." });
      const form = new URLSearchParams(new TextDecoder().decode(bytes));
      const target = localTarget(form.get("return_to"), url.origin);
      if (target === null) return signInPage("/", { status: 400, error: "That link would lead away from this site." });
      const username = form.get("username") ?? "";
      const source = sourceOf(request);
      const attempters = [{ account: username }, ...(source ? [{ source }] : [])];
      const held = (retryAfter) => signInPage(target, { status: 429, error: "Too many failed sign-ins. Try again later.", headers: { "Retry-After": String(retryAfter) } });
      // The store failed (an outage, a timeout): not a limit. 503, as the OAuth endpoints answer then.
      const unavailable = (retryAfter) =>
        signInPage(target, { status: 503, error: "The service is unavailable; try again shortly.", headers: { "Retry-After": String(retryAfter ?? 1) } });
      // 403: credentials given and refused (a 401 would need a WWW-Authenticate challenge).
      const refused = () => signInPage(target, { status: 403, error: "Wrong username or password." });
      if (attempts) {
        const check = await attempts(attempters);
        if (check.unavailable) return unavailable(check.retryAfter);
        if (check.limited) return held(check.retryAfter);
        // Refused as an attempter: a name no one can have (empty, too long, control characters).
        if (!check.allowed) return refused();
      }
      const user = usersByName.get(username);
      // An unknown name is checked against the decoy: as slow as a wrong password.
      const matches = passwordMatches(user?.password_scrypt ?? decoy, form.get("password") ?? "");
      // The check was counted before it ran: a wrong one stays counted, a correct one is taken back.
      if (!user || !matches) return refused();
      if (attempts) await attempts(attempters, { succeeded: true });
      const cookie = session.cookie(user.account_id, { now: clock(), secure });
      return new Response(null, { status: 303, headers: { Location: target, "Set-Cookie": cookie, "Cache-Control": "no-store" } });
    }
    if (url.pathname === "/signout" && request.method === "POST") {
      if (isCrossSite(request.headers, url.host, url.protocol.slice(0, -1))) {
        await drain(request);
        return page(403, "Sign out", `${STYLE}<h1>Sign out</h1><p>This form was sent from another site.</p>`);
      }
      await drain(request);
      return new Response(null, { status: 303, headers: { Location: "/", "Set-Cookie": session.cleared({ secure }), "Cache-Control": "no-store" } });
    }
    if (url.pathname === "/") {
      const user = byAccount.get(session.accountIdOf(request.headers.get("cookie"), clock()));
      const signOut = user ? `<p>Signed in as ${escapeHtml(user.username)}.</p><form method="post" action="/signout"><button>Sign out</button></form>` : "";
      return page(200, "edgegrant", `${STYLE}<h1>edgegrant ${escapeHtml(title)}</h1><p>Authorization server for ${config.core.apps.length} app(s).</p>${signOut}`);
    }
    return null;
  };
}

/**
 * The pages of the flow, as templates the core fills in (the variables: crate docs of
 * `edgegrant`, module pages). The core decides which page, its status and headers; these say
 * how they look. One file for the three hosts (the native one includes it too).
 */
export { PAGES };

/** The one API endpoint with an operation behind it. */
const ACCOUNT_API = "/2/users/get_current_account";

/** The configured users: who a `Cookie` header signs in, and the account an API call acts for. */
function accounts(config, clock = systemClock) {
  const session = sessions(config.session_secret);
  const byAccount = new Map(config.users.map((u) => [u.account_id, u]));
  return {
    signedIn(cookieHeader) {
      const user = byAccount.get(session.accountIdOf(cookieHeader, clock()));
      // The consent page names the person: their name, else their user name.
      return user ? { account_id: user.account_id, uid: String(user.uid), name: user.name ?? user.username } : null;
    },
    // A client acting for itself (client credentials) has no account: it is told its own id.
    account: (principal) =>
      principal.subject === "client"
        ? { client_id: principal.app }
        : account(byAccount.get(principal.account_id) ?? { account_id: principal.account_id, uid: principal.uid, username: "unknown" }),
  };
}

/**
 * The authorization server (createAuthServer) with this host's parts: the session cookie names
 * the user, the page templates above, and the account API.
 */
export function authServer(config, { storage, onAudit, clock, random, sourceOf, fetchDocument, anyDocumentHostWithoutAddressCheck, api = {} }) {
  const people = accounts(config, clock);
  return createAuthServer({
    config: { ...config.core, pages: PAGES },
    storage,
    onAudit,
    // Client metadata documents: the package's guarded fetch of the host's runtime (test mode: its web).
    fetchDocument,
    // The Worker's: documents from any host with a fetch that cannot check where a name resolves to (its README says when).
    anyDocumentHostWithoutAddressCheck,
    clock, // both undefined (the system clock and random source) unless in test mode (test-mode.mjs)
    random,
    hooks: {
      currentUser: (request) => people.signedIn(request.headers.get("cookie")),
      // The Worker's: the address Cloudflare's edge names (a client cannot set it).
      sourceOf,
      // The account API, and whatever else the host serves behind a bearer token (an MCP server's /mcp).
      api: { [ACCOUNT_API]: (principal) => Response.json(people.account(principal)), ...api },
    },
  });
}

/** The value of header `name` in node:http's `rawHeaders` (the first, if repeated). */
function rawHeader(rawHeaders, name) {
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i].toLowerCase() === name) return rawHeaders[i + 1];
  return null;
}

/**
 * The core's routes on node:http without Fetch objects: the request's plain values into the
 * server's `handle`, its reply written out as it is, the account API answered as JSON text.
 */
function nodeRoutes(config, auth, clock, api = {}) {
  const people = accounts(config, clock);
  return async function serveNode(req, res) {
    const body = await readNodeBody(req, auth.core.bodyLimit(req.url.split("?")[0]));
    const user = people.signedIn(rawHeader(req.rawHeaders, "cookie"));
    // The socket's peer: failed client authentications are counted against it.
    // The scheme the socket speaks: a consent form from this host on the other one is refused.
    const scheme = req.socket.encrypted ? "https" : "http";
    const result = await auth.handle({ method: req.method, url: req.url, headers: req.rawHeaders, body, user, source: req.socket.remoteAddress, scheme });
    if (result.kind === "reply") {
      res.writeHead(result.status, [...result.headers.flat(), ...closing(req)]);
      res.end(result.body);
      return;
    }
    const path = req.url.split("?")[0];
    const handler = Object.hasOwn(api, path) ? api[path] : undefined;
    if (handler) {
      // A handler of the Fetch API (an MCP server's): the request as it came, its body read once.
      const headers = new Headers();
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
      const bodyless = req.method === "GET" || req.method === "HEAD";
      const request = new Request(new URL(req.url, `http://${req.headers.host ?? "127.0.0.1"}`), { method: req.method, headers, body: bodyless ? undefined : body });
      const response = await handler(result.principal, request);
      const merged = new Headers(response.headers);
      for (const [name, value] of result.headers) merged.set(name, value);
      res.writeHead(response.status, [...[...merged].flat(), ...closing(req)]);
      res.end(Buffer.from(await response.arrayBuffer()));
      return;
    }
    const found = path === ACCOUNT_API;
    const answer = found ? people.account(result.principal) : null;
    // The core's headers for the answer: no-store, nosniff, CORS for an allowed origin.
    res.writeHead(found ? 200 : 404, ["Content-Type", "application/json", ...result.headers.flat(), ...closing(req)]);
    res.end(JSON.stringify(answer));
  };
}

/**
 * Both parts in one place, for a host that runs them together (the Node host): `fetch` for the
 * host's own pages (and anything else, on the Fetch API), `serveNode(req, res)` for the core's
 * routes straight from node:http.
 */
export function createApp(config, { storage, onAudit, title, clock, random, sourceOf, fetchDocument, api }) {
  const auth = authServer(config, { storage, onAudit, clock, random, sourceOf, fetchDocument, api });
  const pages = signInRoutes(config, { title, clock, attempts: auth.attempts, sourceOf });
  return { fetch: async (request) => (await pages(request)) ?? auth.fetch(request), serveNode: nodeRoutes(config, auth, clock, api), unlink: auth.unlink };
}
