// A Node host for edgegrant: node:http on 127.0.0.1, tokens in SQLite (or PostgreSQL, shared by
// several host processes), a sign-in form for the configured users, the consent and code-display
// pages, and /2/users/get_current_account.
//
//   node examples/node/server.mjs examples/node/config.sample.json
//
// The configuration file is documented in README.md next to this file.
import { randomBytes } from "node:crypto";
import http from "node:http";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { openPostgresStorage } from "../../pkg/src/adapters/postgres.js";
import { openSqliteStorage } from "../../pkg/src/adapters/sqlite.js";
import { fetchDocumentNode } from "../../pkg/src/documents-node.js";
import { closing, requestOf } from "../../pkg/src/node-http.js";
import { INTERNAL_ERROR, createApp } from "../host/app.mjs";
import { loadConfigFile, sampleSecretAllowed } from "../host/config-file.mjs";
import { withTestMode } from "../host/test-mode.mjs";

/** A `database` that names a PostgreSQL server rather than a SQLite file. */
const isPostgres = (database) => /^postgres(ql)?:\/\//.test(database);

/** How often, by default, the host deletes the records past their purge time (as the native host). */
const PURGE_EVERY_SECONDS = 3600;

/** The most of a body the host's own pages read: a sign-in form is 4 KiB at most, a test mode control request 1 MiB. */
const PAGE_BODY_BYTES = 64 * 1024;
const TEST_BODY_BYTES = 2 * 1024 * 1024;

/** Reads and checks the configuration file; throws an Error that says what is wrong. */
export function loadConfig(path, options) {
  const config = loadConfigFile(path, options);
  const database = config.database ?? "edgegrant.sqlite";
  if (typeof database !== "string") throw new Error(`invalid configuration ${path}: database must be a file name or a postgres:// URL`);
  const purgeEvery = config.purge_every_seconds ?? PURGE_EVERY_SECONDS;
  if (!Number.isInteger(purgeEvery) || purgeEvery < 1) throw new Error(`invalid configuration ${path}: purge_every_seconds must be a whole number ≥ 1`);
  return {
    ...config,
    database: isPostgres(database) ? database : resolve(dirname(resolve(path)), database),
    purge_every_seconds: purgeEvery,
  };
}

/** The store the configuration names; `table` for a fresh one (test mode). */
const openStorage = (database, table) => (isPostgres(database) ? openPostgresStorage(database, { table }) : openSqliteStorage(database, { table }));

/**
 * Deletes the records past their purge time now and every `seconds` (through the store's purge
 * index; with several processes on one PostgreSQL database each purges, SKIP LOCKED shares the
 * work). Resolves a function that stops it.
 */
function purgeEvery(storage, seconds) {
  let running = null;
  const purge = () => {
    running ??= Promise.resolve(storage.purge(Math.floor(Date.now() / 1000)))
      .catch((error) => console.error("edgegrant: purge failed:", error.message))
      .finally(() => (running = null));
  };
  purge();
  const timer = setInterval(purge, seconds * 1000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/**
 * Starts the host. `allowSampleSecret: true` runs it on the sample configuration's placeholder
 * `session_secret` (the command line allows it under EDGEGRANT_ALLOW_SAMPLE_SECRET=1, which the
 * demo command sets). `testMode: true` adds the /__test__/ control endpoints (../host/test-mode.mjs;
 * each reset starts a new, empty table in the same database); never on otherwise. `onAudit`
 * replaces the default audit log (one JSON line per event on stdout). `api` adds handlers the
 * core serves behind a bearer token, by path (`{"/mcp": serveMcp}`; each path must be among the
 * configuration's `api_endpoints`, with its Required Scope). `fetchDocument` fetches client
 * metadata documents (default `fetchDocumentNode`: https only, no private address).
 */
export async function startServer(
  configPath,
  { port, host, testMode = false, allowSampleSecret = false, onAudit = (event) => console.log(JSON.stringify({ audit: event })), api, fetchDocument = fetchDocumentNode } = {},
) {
  const config = loadConfig(configPath, { allowSampleSecret });
  const storage = await openStorage(config.database);
  // Test mode sets its own clock, so records can look expired to the system clock while a
  // vector still needs them: only a real host purges.
  const stopPurging = testMode ? async () => {} : purgeEvery(storage, config.purge_every_seconds);
  // The peer address of each request the host's own pages get as a Fetch Request (a header
  // would be the client's to forge): failed sign-ins are counted against it.
  const peers = new WeakMap();
  // Client metadata documents by node:https, every resolved address checked (test mode: its web).
  const serve = (doc, options) => createApp(doc, { fetchDocument, api, ...options, title: "Node host", sourceOf: (request) => peers.get(request) ?? null });
  let testStorage; // the table of the last reset
  const app = testMode
    ? withTestMode({
        config,
        storage,
        onAudit,
        serve,
        async emptyStorage() {
          await testStorage?.close();
          // A name no earlier run used, so the table starts empty.
          testStorage = await openStorage(config.database, `edgegrant_test_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`);
          return testStorage;
        },
      })
    : serve(config, { storage, onAudit });

  // Request line and headers up to 64 KiB (node:http's default is 16 KiB): the core holds them to
  // max_input_bytes (16 KiB by default) itself, and a query of exactly that size must still pass.
  // The host's own pages (sign-in, home) and test mode go through the Fetch API; the core's
  // routes take node:http's values as they are (the package's plain-value entry, no Fetch
  // objects on the hot path).
  const hostRoute = (url) => url === "/" || url === "/signin" || url.startsWith("/signin?") || url === "/signout" || url.startsWith("/__test__/");
  const server = http.createServer({ maxHeaderSize: 64 * 1024 }, async (req, res) => {
    // Storage trouble never gets here: the core answers it (503 with Retry-After). What does is
    // either a request the Fetch API cannot even represent (400) or a fault of this host (500).
    const fail = (status, body) => {
      if (!res.headersSent) res.writeHead(status, ["Content-Type", "application/json", "Cache-Control", "no-store", ...closing(req)]);
      res.end(JSON.stringify(body));
    };
    try {
      if (!hostRoute(req.url)) {
        await app.serveNode(req, res);
        return;
      }
      let request;
      try {
        request = requestOf(req, req.url.startsWith("/__test__/") ? TEST_BODY_BYTES : PAGE_BODY_BYTES);
        peers.set(request, req.socket.remoteAddress);
      } catch {
        fail(400, { error: "invalid_request", error_description: "the request could not be read" });
        return;
      }
      const response = await app.fetch(request);
      res.writeHead(response.status, [...[...response.headers].flat(), ...closing(req)]);
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (error) {
      // Its text stays in the log: the client learns nothing of how the host is built.
      console.error("edgegrant: the host failed:", error);
      fail(500, INTERNAL_ERROR);
    }
  });
  const listen = config.listen ?? {};
  await new Promise((ok) => server.listen(port ?? listen.port ?? 8787, host ?? listen.host ?? "127.0.0.1", ok));
  const address = server.address();
  return {
    url: `http://${address.address}:${address.port}`,
    async close() {
      // Keep-alive connections would hold close() open: end them too.
      const closed = new Promise((ok) => server.close(ok));
      server.closeAllConnections();
      await closed;
      await stopPurging();
      await storage.close();
      await testStorage?.close();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const path = process.argv[2];
  if (!path) {
    console.error("usage: node examples/node/server.mjs <config.json>");
    process.exit(2);
  }
  try {
    const { url } = await startServer(path, { allowSampleSecret: sampleSecretAllowed() });
    console.log(`edgegrant Node host listening on ${url}`);
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
