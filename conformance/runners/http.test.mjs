// Runner 3: every vector against the three live hosts on loopback, in test mode
// (examples/host/test-mode.mjs): the Node host (node:http; on SQLite, and again on a throwaway
// PostgreSQL server), the Worker host
// (wrangler dev: workerd, one Durable Object) and the native host (examples/native: the Rust
// crate alone, axum and SQLite; built here with cargo). A vector opens with /__test__/reset (its
// configuration and users, empty storage); each step sets the clock and the entropy
// (/__test__/clock), sends its input over real HTTP, and collects the audit events
// (/__test__/audit). Requests go out through node:http exactly as the step gives them: header
// lines in order, repeats as separate lines, the body's raw bytes, no redirect followed.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { entropyLength } from "../../pkg/src/node.js";
import { startServer } from "../../examples/node/server.mjs";
import { startPostgres } from "../../tests/postgres/cluster.mjs";
import { startWorker } from "../../examples/worker/dev.mjs";
import { startNative as startNativeHost } from "../../examples/native/start.mjs";
import { consentForm, loadCorpus, observeHttp, requestParts, runVector, textBytes, unsupportedReason, userNamed, webForHost } from "./lib.mjs";

// A hung host fails its vector fast instead of the whole run: each request, and each vector.
const REQUEST_TIMEOUT_MS = 15_000;
const VECTOR_TIMEOUT_MS = 60_000;
// Building the native host from a clean target directory takes minutes on two cores.
const BUILD_TIMEOUT_MS = 20 * 60_000;

const corpus = loadCorpus(); // first: a corpus that does not load starts no host

// The hosts start from this file; test mode then swaps in each vector's configuration and users.
const dir = mkdtempSync(join(tmpdir(), "edgegrant-conformance-http-"));
const configPath = join(dir, "config.json");
writeFileSync(
  configPath,
  JSON.stringify({
    database: "edgegrant.sqlite",
    session_secret: "conformance-runner-host-start-secret-0123456789",
    server_key: "Y29uZm9ybWFuY2Utc2VydmVyLWtleS0zMi1ieXRlcyE",
    users: [{ username: "nobody", password_scrypt: "!", account_id: "dbid:AAnobody000000000000000000000000000", uid: "1" }],
    apps: [],
  }),
);

// Both Workers (test mode, and one without it for the 404 check) start now, while the Node
// host runs the corpus. Failures surface in the tests that need them.
const settle = (promise) => (promise.catch(() => {}), promise);
const workerStarting = settle(startWorker({ configPath, port: 0, persistTo: join(dir, "worker-state"), testMode: true }));
const plainWorkerStarting = settle(startWorker({ configPath, port: 0, persistTo: join(dir, "plain-worker-state") }));
let nodeHost;
let postgresNodeHost;
let postgres;
let plainNodeHost;
let nativeHost;
let plainNativeHost;

// Runs whether the tests passed or not: no host, wrangler, workerd or native process outlives the file.
after(async () => {
  const workers = await Promise.all([workerStarting, plainWorkerStarting].map((p) => p.catch(() => undefined)));
  await Promise.all([nodeHost?.close(), postgresNodeHost?.close(), plainNodeHost?.close(), nativeHost?.close(), plainNativeHost?.close(), ...workers.map((w) => w?.close())]);
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The native host (examples/native/start.mjs: built once, after the other hosts' suites) on the runner's configuration. */
const startNative = ({ testMode }) => startNativeHost(configPath, { testMode });

/**
 * One HTTP/1.1 exchange: `headers` are pairs sent as given (Host comes first, as a client sends
 * it; Content-Length after the rest when there is a body), `body` raw bytes. Resolves
 * `{ status, headers (pairs, as received), body (UTF-8 text) }`.
 */
function exchange(agent, url, { method, target, headers, body }) {
  const { hostname, port, host } = new URL(url);
  const lines = [["Host", host], ...headers];
  if (body !== undefined) lines.push(["Content-Length", String(body.length)]);
  else if (method === "POST" || method === "PUT") lines.push(["Content-Length", "0"]);
  return new Promise((resolve, reject) => {
    const request = http.request({ agent, host: hostname, port, method, path: target, headers: lines.flat() }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("error", reject);
      response.on("end", () => {
        const pairs = [];
        for (let i = 0; i < response.rawHeaders.length; i += 2) pairs.push([response.rawHeaders[i], response.rawHeaders[i + 1]]);
        resolve({ status: response.statusCode, headers: pairs, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error(`${method} ${target}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    request.on("error", reject);
    request.end(body);
  });
}

/** A test endpoint: JSON in, JSON out; anything but 200 is a failure of the host. */
async function control(agent, url, name, payload) {
  const body = Buffer.from(JSON.stringify(payload));
  const answer = await exchange(agent, url, { method: "POST", target: `/__test__/${name}`, headers: [["Content-Type", "application/json"]], body });
  if (answer.status !== 200) throw new Error(`/__test__/${name} answered ${answer.status}: ${answer.body.slice(0, 500)}`);
  return JSON.parse(answer.body);
}

/**
 * The request target for `path` and `query`: as given when every character may go on a request
 * line as it is; otherwise as a browser would send it (WHATWG URL encoding), which is what the
 * package runner's `Request` hands the server too.
 */
function requestTarget(path, query) {
  const raw = `${path}${query ? `?${query}` : ""}`;
  if (/^[\x21-\x7e]*$/.test(raw)) return raw;
  const url = new URL(raw, "http://host.invalid");
  return url.pathname + url.search;
}

/** The layer for `runVector`: the host at `url()` (known once the suite's `before` started it). */
function httpLayer(url) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return {
    entropyLength: entropyLength(),
    agent,
    async open({ config, users }) {
      const base = url();
      const { cookies } = await control(agent, base, "reset", { config, users });
      const cookieOf = (name) => {
        const cookie = cookies[userNamed(users, name).name];
        if (!cookie) throw new Error(`the host gave no session cookie for ${name}`);
        return cookie;
      };
      const send = async (request) => {
        const answer = await exchange(agent, base, request);
        return observeHttp(answer.status, answer.headers, answer.body);
      };
      return {
        async step(at, entropy, input, web) {
          await control(agent, base, "clock", { now: at, entropy: Buffer.from(entropy).toString("hex"), web: webForHost(web) });
          let observation;
          if (input.kind === "http") {
            const { method, path, query, body } = requestParts(input);
            // Header values as their exact bytes (node:http writes header strings as latin1).
            const headers = (input.headers ?? []).map(([name, value]) => [name, textBytes(value).toString("latin1")]);
            if (input.user) headers.push(["Cookie", cookieOf(input.user)]);
            observation = await send({ method, target: requestTarget(path, query), headers, body });
          } else if (input.kind === "consent" || input.kind === "deny") {
            observation = await send({
              method: "POST",
              target: "/oauth2/authorize",
              headers: [
                ["Content-Type", "application/x-www-form-urlencoded"],
                ["Sec-Fetch-Site", "same-origin"],
                ["Cookie", cookieOf(input.user)],
              ],
              body: Buffer.from(consentForm(input)),
            });
          } else if (input.kind === "unlink") {
            const { outcome } = await control(agent, base, "event", { kind: "unlink", app: input.app, account_id: userNamed(users, input.user).account_id, by: input.by });
            observation = { outcome };
          } else if (input.kind === "migrate_app") {
            const { outcome } = await control(agent, base, "event", { kind: "migrate_app", app: input.app });
            observation = { outcome };
          } else {
            throw new Error(`unknown input kind ${input.kind}`);
          }
          const { audit, fetched } = await control(agent, base, "audit", {});
          observation.audit = audit;
          observation.fetched = fetched;
          return observation;
        },
      };
    },
  };
}

/** The corpus against one host: a test per vector, skipped with its reason where it says so. */
function corpusSuite(name, start) {
  describe(`${name}: the corpus`, () => {
    let host;
    let started;
    const layer = httpLayer(() => host.url);
    before(
      async () => {
        host = await start();
        started = performance.now();
      },
      { timeout: BUILD_TIMEOUT_MS },
    );
    after(() => {
      layer.agent.destroy();
      const skipped = corpus.filter(({ vector }) => unsupportedReason(vector, name)).length;
      if (started !== undefined) console.log(`conformance (${name}): ${corpus.length} vectors, ${skipped} skipped, in ${Math.round(performance.now() - started)} ms`);
    });
    for (const entry of corpus) {
      const reason = unsupportedReason(entry.vector, name);
      test(`${entry.vector.id}: ${entry.vector.title}`, reason ? { skip: reason } : { timeout: VECTOR_TIMEOUT_MS }, () => runVector(entry, layer));
    }
  });
}

corpusSuite("http-node", async () => {
  nodeHost = await startServer(configPath, { port: 0, testMode: true, onAudit: () => {} });
  return nodeHost;
});
// The same host on PostgreSQL (a throwaway cluster): every reset a new table there.
corpusSuite("http-node-postgres", async () => {
  postgres = await startPostgres();
  const postgresConfig = join(dir, "config-postgres.json");
  writeFileSync(postgresConfig, JSON.stringify({ ...JSON.parse(readFileSync(configPath, "utf8")), database: postgres.url }));
  postgresNodeHost = await startServer(postgresConfig, { port: 0, testMode: true, onAudit: () => {} });
  return postgresNodeHost;
});
corpusSuite("http-worker", () => workerStarting);
corpusSuite("http-native", async () => {
  nativeHost = await startNative({ testMode: true });
  return nativeHost;
});

/** Without test mode, /__test__/ is like any unknown path: the same 404. */
async function assertNoTestEndpoints(url) {
  const agent = new http.Agent({ keepAlive: false });
  try {
    const post = (target) =>
      exchange(agent, url, { method: "POST", target, headers: [["Content-Type", "application/json"]], body: Buffer.from(JSON.stringify({ config: { apps: [] }, users: [] })) });
    const unknown = await post("/no-such-path");
    assert.equal(unknown.status, 404);
    for (const name of ["reset", "clock", "event", "audit"]) {
      const answer = await post(`/__test__/${name}`);
      assert.equal(answer.status, 404, `/__test__/${name}`);
      assert.equal(answer.body, unknown.body, `/__test__/${name} answers like an unknown path`);
    }
  } finally {
    agent.destroy();
  }
}

describe("test mode is off unless asked for", () => {
  test("Node host started without testMode: /__test__/* is 404", { timeout: VECTOR_TIMEOUT_MS }, async () => {
    plainNodeHost = await startServer(configPath, { port: 0, onAudit: () => {} });
    await assertNoTestEndpoints(plainNodeHost.url);
  });
  test("Worker host started without testMode: /__test__/* is 404", { timeout: VECTOR_TIMEOUT_MS }, async () => {
    await assertNoTestEndpoints((await plainWorkerStarting).url);
  });
  test("native host started without --test-mode: /__test__/* is 404", { timeout: BUILD_TIMEOUT_MS }, async () => {
    plainNativeHost = await startNative({ testMode: false });
    await assertNoTestEndpoints(plainNativeHost.url);
  });
});
