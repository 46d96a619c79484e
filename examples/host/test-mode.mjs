// Test mode, for the conformance runner (conformance/runners/http.test.mjs): control endpoints
// under /__test__/ that swap the configuration and users, empty the storage, set the clock and
// the entropy every core call takes, raise events no HTTP request of the service raises, and
// hand over the audit events. Never on unless the host is started for it (Node host:
// startServer(path, { testMode: true }); Worker host: the TEST_MODE="1" variable, set only by
// dev.mjs's startWorker({ testMode: true })): with it off, /__test__/ is an unknown path (404).
//
// Every endpoint is POST, JSON in and JSON out:
//   /__test__/reset  {config, users: [{name, account_id, uid}]}  → {cookies: {<name>: "session=…"}}
//       the core configuration document (apps, policy, api_endpoints; the host's pages) and these users (no usable
//       password: sign-in is by the returned session cookies), over empty storage
//   /__test__/clock  {now, entropy, web}  → {}
//       every core call from then on runs at `now` (Unix seconds) with these bytes (hex, exactly
//       entropyLength() of them), and fetches client metadata documents from `web` (URL →
//       {status, cache_control, body: hex} or {fails}; none: no document is reachable)
//   /__test__/event  {kind: "unlink", app, account_id, by} → {outcome}   (the server's unlink)
//                    {kind: "migrate_app", app} → {outcome: "migrated"}   (migrateApp, same storage)
//   /__test__/audit  {}  → {audit: [...], fetched: [...]}  the audit events and the URLs fetched
//       since the last call (then forgotten)
import { entropyLength, migrateApp, readBody } from "../../pkg/src/index.js";
import { parseConfig, sessions } from "./app.mjs";

/** The session secret of every test configuration: test mode signs the cookies it hands out. */
export const TEST_SESSION_SECRET = "edgegrant-test-mode-session-secret-not-for-production";
/** When the sessions test mode hands out end (year 33658): never, for a test. */
const TEST_SESSION_END = 999_999_999_999;
/** Not a `scrypt$salt$hash`: no password signs a test user in. */
const NO_PASSWORD = "!test-mode";

const PREFIX = "/__test__/";
/** The longest body a control endpoint reads (a configuration with its pages is a few KiB). */
const BODY_BYTES = 1024 * 1024;

const json = (value, status = 200) => new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
const refuse = (status, why) => json({ error: why }, status);

function bytesOfHex(hex) {
  if (typeof hex !== "string" || !/^(?:[0-9a-fA-F]{2})*$/.test(hex)) return null;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/**
 * Wraps a host's server in test mode. `config`: the host's checked configuration (app.mjs
 * parseConfig), served until the first reset. `storage`: its storage. `emptyStorage()`: resolves
 * storage with no records, for a reset. `serve(config, { storage, clock, random, onAudit })`:
 * the host's server (`fetch(request)`, `unlink(app, accountId, by)`). `onAudit`: the host's own
 * audit log, still called for every event. Returns `{ fetch(request), serveNode(req, res) }`:
 * /__test__/ here, the rest to the server (its `serveNode` where it has one).
 */
export function withTestMode({ config, storage, emptyStorage, serve, onAudit }) {
  // Until /__test__/clock says otherwise: the system clock and fresh random bytes.
  let now;
  let entropy;
  let audit = [];
  let web = new Map();
  let fetched = [];
  // The server reads the clock, the entropy and the web through these, so /__test__/clock needs no new server.
  const serveNow = () =>
    serve(config, {
      storage,
      clock: () => now ?? Math.floor(Date.now() / 1000),
      random: () => entropy ?? crypto.getRandomValues(new Uint8Array(entropyLength())),
      onAudit: (event) => {
        audit.push(event);
        onAudit?.(event);
      },
      fetchDocument: async ({ url, maxBytes }) => {
        fetched.push(url);
        const answer = web.get(url);
        if (!answer) return { failed: "unreachable" };
        if (answer.fails) return { failed: answer.fails };
        // Held to the size limit as the package's fetch holds it.
        if (answer.body.length > maxBytes) return { failed: "too_large" };
        return answer;
      },
    });
  let server = serveNow();

  const routes = {
    async reset({ config: core, users }) {
      if (typeof core !== "object" || core === null || !Array.isArray(users)) return refuse(400, "reset takes {config, users}");
      let next;
      try {
        next = parseConfig({
          ...core,
          users: users.map((u) => ({ username: u.name, name: u.name, account_id: u.account_id, uid: u.uid, password_scrypt: NO_PASSWORD })),
          session_secret: TEST_SESSION_SECRET,
        });
      } catch (error) {
        return refuse(400, `invalid configuration: ${error.message}`);
      }
      config = next;
      storage = await emptyStorage();
      now = undefined;
      entropy = undefined;
      audit = [];
      web = new Map();
      fetched = [];
      server = serveNow();
      const session = sessions(TEST_SESSION_SECRET);
      // Test users' sessions never end: a vector moves the clock by years.
      const cookie = (u) => session.cookie(u.account_id, { now: 0, expires: TEST_SESSION_END }).split(";")[0];
      return json({ cookies: Object.fromEntries(users.map((u) => [u.name, cookie(u)])) });
    },
    async clock({ now: at, entropy: hex, web: pages = {} }) {
      const bytes = bytesOfHex(hex);
      if (!Number.isSafeInteger(at)) return refuse(400, "now must be an integer (Unix seconds)");
      if (!bytes || bytes.length !== entropyLength()) return refuse(400, `entropy must be the hex of exactly ${entropyLength()} bytes`);
      const next = new Map();
      for (const [url, page] of Object.entries(pages ?? {})) {
        const body = bytesOfHex(page?.body ?? "");
        if (typeof page?.fails === "string") next.set(url, { fails: page.fails });
        else if (Number.isInteger(page?.status) && body) next.set(url, { status: page.status, cacheControl: page.cache_control ?? null, body });
        else return refuse(400, `web ${url}: {status, cache_control, body: hex} or {fails}`);
      }
      now = at;
      entropy = bytes;
      web = next;
      return json({});
    },
    async event(event) {
      if (event?.kind === "unlink") {
        const result = await server.unlink(event.app, event.account_id, event.by);
        return json({ outcome: result.outcome });
      }
      if (event?.kind === "migrate_app") {
        let core;
        try {
          core = migrateApp(config.core, event.app);
        } catch (error) {
          return refuse(400, `cannot migrate ${event.app}: ${error.message}`);
        }
        config = { ...config, apps: core.apps, core };
        server = serveNow(); // over the same storage
        return json({ outcome: "migrated" });
      }
      return refuse(400, "event kind must be unlink or migrate_app");
    },
    async audit() {
      const events = audit;
      const urls = fetched;
      audit = [];
      fetched = [];
      return json({ audit: events, fetched: urls });
    },
  };

  return {
    /** node:http only, for a server that has it (the Node host): the current server's core routes. */
    serveNode: (req, res) => server.serveNode(req, res),
    async fetch(request) {
      const url = new URL(request.url);
      if (!url.pathname.startsWith(PREFIX)) return server.fetch(request);
      const route = Object.hasOwn(routes, url.pathname.slice(PREFIX.length)) ? routes[url.pathname.slice(PREFIX.length)] : undefined;
      if (!route) return refuse(404, "no such test endpoint");
      if (request.method !== "POST") return refuse(405, "test endpoints take POST");
      const bytes = await readBody(request, BODY_BYTES);
      if (bytes.length > BODY_BYTES) return refuse(413, "the body is over 1 MiB");
      const text = new TextDecoder().decode(bytes);
      let body;
      try {
        body = text === "" ? {} : JSON.parse(text);
      } catch {
        return refuse(400, "the body is not JSON");
      }
      return route(body !== null && typeof body === "object" ? body : {});
    },
  };
}
