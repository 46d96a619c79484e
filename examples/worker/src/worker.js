// The Cloudflare Worker host, on one Durable Object per partition. The stateless Worker answers
// the host's own pages (/, /signin, /signout: scrypt is deliberately slow, so it runs here, in
// parallel, outside any object), asks the core where each other request runs
// (`server.route`: the partition of the account whose records it touches), and hands it to that
// partition's object, `idFromName(<partition>)`, which runs the authorization server on its own
// records — but for API calls, whose token check reads that object's records over RPC and whose
// handler runs in the Worker. Records of other partitions — the counts of failed attempts, which are partitions of
// their own — are read and written over RPC to their objects; a transaction never spans two. A
// request that needs no account's records (a refusal decided from the request alone) runs in the
// Worker, as do the sign-in page's attempt counts.
// The configuration arrives as the CONFIG variable (JSON text; see README.md).
import { DurableObject } from "cloudflare:workers";
import "../../../pkg/src/workers.js"; // loads the WebAssembly core (wrangler imports the .wasm)
import { durableObjectStorage } from "../../../pkg/src/adapters/durable-object.js";
import { fetchDocument } from "../../../pkg/src/documents.js";
import { partitionedStorage } from "../../../pkg/src/adapters/partitioned.js";
import { authServer, createApp, internalError, parseConfig, signInRoutes } from "../../host/app.mjs";
import { withTestMode } from "../../host/test-mode.mjs";

/** The checked configuration, parsed once per isolate. */
let parsed;
function configOf(env) {
  if (parsed?.text !== env.CONFIG) {
    if (typeof env.CONFIG !== "string") throw new Error("the CONFIG variable is not set");
    // ALLOW_SAMPLE_SECRET is set by dev.mjs for the local demo only.
    parsed = { text: env.CONFIG, config: parseConfig(JSON.parse(env.CONFIG), { allowSampleSecret: env.ALLOW_SAMPLE_SECRET === "1" }) };
  }
  return parsed.config;
}

const misconfigured = (error) => {
  console.error(`edgegrant: invalid configuration: ${error.message}`);
  return new Response("The server is misconfigured.", { status: 500 });
};

/**
 * The client's address, where a header can be trusted to name it: Cloudflare's edge sets
 * `CF-Connecting-IP` itself, replacing any a client sent, so behind the edge it is the client's
 * address. Anywhere else — `wrangler dev`, a self-hosted workerd — the client writes that header
 * itself, and counting attempts by it would let each request choose its own source. So it is
 * read only where the deployment says it runs behind the edge (`TRUST_CF_CONNECTING_IP = "1"`,
 * set for deployments, never for `wrangler dev`: see README.md); elsewhere no source is
 * counted (account and per-URL counts still are).
 */
const clientAddress = (env) =>
  env.TRUST_CF_CONNECTING_IP === "1" ? (request) => request.headers.get("CF-Connecting-IP") : () => null;

const onAudit = (event) => console.log(JSON.stringify({ audit: event }));

/** Handlers the core serves behind a bearer token besides the account API, by path (see `serveApi`). */
let extraApi = {};

/**
 * Adds handlers behind a bearer token (`{"/mcp": serveMcp}`), for a Worker built on this one
 * (examples/mcp/worker.js): each path must be among the configuration's `api_endpoints`. Call it
 * when the module loads, before the first request.
 */
export function serveApi(api) {
  extraApi = { ...extraApi, ...api };
}

/**
 * How client metadata documents are fetched: the package's guarded fetch (https only, no
 * private or loopback address). LOOPBACK_DOCUMENTS="1", set only by dev.mjs when the Worker
 * runs on loopback itself, admits documents on loopback (CIMD §6.5's exception).
 */
const documentFetcher = (env) => (env.LOOPBACK_DOCUMENTS === "1" ? (fetch) => fetchDocument(fetch, { allowLoopback: true }) : undefined);

/**
 * The package's fetch cannot check the addresses a name resolves to (workerd shows none), so it
 * takes documents from any host (`profile.clients.documents` without `hosts`) only when told so
 * by name: ANY_DOCUMENT_HOST_WITHOUT_ADDRESS_CHECK="1". On Cloudflare's network a Worker cannot
 * reach private addresses; under wrangler dev or self-hosted workerd it can (see the README).
 */
const documentOptions = (env) => ({ fetchDocument: documentFetcher(env), anyDocumentHostWithoutAddressCheck: env.ANY_DOCUMENT_HOST_WITHOUT_ADDRESS_CHECK === "1" });

const TITLE = "Worker host";

/** Which partition a forwarded request is for: set by the Worker, over anything a client sent. */
const PARTITION_HEADER = "X-Edgegrant-Partition";

/** The object named `name`. */
const objectNamed = (env, name) => env.AUTH.get(env.AUTH.idFromName(name));

/** The records of partition `name`, in its object, over RPC (Maps and byte arrays cross as they are). */
function recordsOf(env, name) {
  const object = objectNamed(env, name);
  return { read: (keys) => object.read(keys), apply: (transaction) => object.apply(transaction) };
}

export class AuthServer extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    // This partition's records. Test mode sets its own clock, so records can look expired to
    // the system clock while a vector still needs them: only a real host purges.
    this.records = durableObjectStorage(ctx.storage, { alarms: env.TEST_MODE !== "1" });
  }

  /** RPC: this partition's records, for the servers of other partitions and the Worker. */
  read(keys) {
    return this.records.read(keys);
  }

  /** RPC: a transaction on this partition's records. */
  apply(transaction) {
    return this.records.apply(transaction);
  }

  /** Deletes what is due (the adapter keeps the alarm at the earliest purge time). */
  alarm() {
    return this.records.purge(Math.floor(Date.now() / 1000));
  }

  /** The server of this partition: its own records here, every other partition's in its object. */
  server(partition) {
    if (!this.served) {
      const own = this.records;
      const storage = partitionedStorage((name) => (name === partition ? own : recordsOf(this.env, name)));
      this.served = authServer(configOf(this.env), { storage, onAudit, sourceOf: clientAddress(this.env), api: extraApi, ...documentOptions(this.env) });
    }
    return this.served;
  }

  /**
   * Test mode's server, in the one object named "test" (its clock, entropy and audit live in
   * its memory), with the records spread over partition objects as in production. A reset
   * starts a new generation of object names: empty storage without deleting anything.
   */
  testServer() {
    if (!this.served) {
      const over = (generation) => partitionedStorage((name) => recordsOf(this.env, `test-${generation}:${name}`));
      this.served = withTestMode({
        config: configOf(this.env),
        storage: over(crypto.randomUUID()),
        onAudit,
        serve: (doc, options) => createApp(doc, { api: extraApi, ...options, title: TITLE, sourceOf: clientAddress(this.env) }),
        emptyStorage: async () => over(crypto.randomUUID()),
      });
    }
    return this.served;
  }

  async fetch(request) {
    let server;
    try {
      if (this.env.TEST_MODE === "1") {
        server = this.testServer();
      } else {
        const partition = request.headers.get(PARTITION_HEADER);
        // An object serves its own partition only: the name must be the one it was made from.
        if (partition === null || !this.env.AUTH.idFromName(partition).equals(this.ctx.id)) {
          console.error(`edgegrant: a request for partition ${partition} reached another object`);
          return new Response("misrouted", { status: 500 });
        }
        server = this.server(partition);
      }
    } catch (error) {
      return misconfigured(error);
    }
    try {
      return await server.fetch(request);
    } catch (error) {
      return internalError(error);
    }
  }
}

/** The Worker's own server (per isolate): requests of no partition, and sign-in attempt counts. */
let front;
function frontOf(env, config) {
  if (front?.config !== config) {
    const server = authServer(config, { storage: partitionedStorage((name) => recordsOf(env, name)), onAudit, sourceOf: clientAddress(env), api: extraApi, ...documentOptions(env) });
    const pages = signInRoutes(config, { title: TITLE, attempts: server.attempts, sourceOf: clientAddress(env) });
    front = { config, server, pages };
  }
  return front;
}

export default {
  async fetch(request, env) {
    let config;
    try {
      config = configOf(env);
    } catch (error) {
      return misconfigured(error);
    }
    // An exception, here or in an object, is answered 500 with nothing of its text (left to
    // itself, wrangler dev sends the client its message and stack, Cloudflare its error page).
    try {
      // Test mode: everything through the one test object, whose clock test mode sets.
      if (env.TEST_MODE === "1") return await objectNamed(env, "test").fetch(request);
      const { server, pages } = frontOf(env, config);
      const page = await pages(request);
      if (page) return page;
      const { partition, request: forward } = await server.route(request);
      // A request of no partition runs here; so does an API call: its token check only reads
      // (the token and its account's ledger, over RPC from the partition's object, and the
      // grant where the ledger cannot vouch), and its handler (an MCP tool call) runs here in the
      // stateless Worker, so that a user's calls are served side by side rather than one after
      // another inside the one object that holds their records.
      if (partition === null || server.core.requiredScope(new URL(forward.url).pathname) !== undefined) return await server.fetch(forward);
      const headers = new Headers(forward.headers);
      headers.set(PARTITION_HEADER, partition);
      // "manual": the object's redirects (a consent's 302) go to the client, not followed here.
      return await objectNamed(env, partition).fetch(new Request(forward, { headers, redirect: "manual" }));
    } catch (error) {
      return internalError(error);
    }
  },
};
