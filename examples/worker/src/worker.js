// The Cloudflare Worker host. The stateless Worker answers the host's own pages (/, /signin,
// /signout: scrypt is deliberately slow, so it runs here, in parallel, outside the object) and
// hands every other request to the one Durable Object that holds the authorization server and
// all of its records — the counts of failed sign-ins too, which the Worker asks for over RPC.
// The configuration arrives as the CONFIG variable (JSON text; see README.md).
import { DurableObject } from "cloudflare:workers";
import "../../../pkg/src/workers.js"; // loads the WebAssembly core (wrangler imports the .wasm)
import { durableObjectStorage } from "../../../pkg/src/adapters/durable-object.js";
import { authServer, createApp, parseConfig, signInRoutes } from "../../host/app.mjs";
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

/** The client's address as Cloudflare's edge names it (clients cannot set this header there). */
const clientAddress = (request) => request.headers.get("CF-Connecting-IP");

const TITLE = "Worker host";

export class AuthServer extends DurableObject {
  /** The server of this object, made on first use: test mode's or the real one. */
  server() {
    if (!this.served) {
      const config = configOf(this.env);
      const storage = durableObjectStorage(this.ctx.storage);
      const onAudit = (event) => console.log(JSON.stringify({ audit: event }));
      // Test mode (../../host/test-mode.mjs) only when TEST_MODE is "1": dev.mjs sets it for
      // startWorker({ testMode: true }) and nothing else does. Otherwise /__test__/ is a 404.
      // In test mode the host's pages run here too, on the clock test mode sets.
      this.served =
        this.env.TEST_MODE === "1"
          ? withTestMode({
              config,
              storage,
              onAudit,
              serve: (doc, options) => createApp(doc, { ...options, title: TITLE, sourceOf: clientAddress }),
              emptyStorage: async () => {
                await this.ctx.storage.deleteAll();
                return storage;
              },
            })
          : authServer(config, { storage, onAudit, sourceOf: clientAddress });
    }
    return this.served;
  }

  fetch(request) {
    let server;
    try {
      server = this.server();
    } catch (error) {
      return misconfigured(error);
    }
    return server.fetch(request);
  }

  /** The limit on failed sign-ins (an RPC from the Worker's sign-in): see createAuthServer's `attempts`. */
  signInAttempts(attempters, failed) {
    return this.server().attempts(attempters, { failed });
  }
}

/** The one object, named "auth", that holds every record: see README.md for why. */
const theObject = (env) => env.AUTH.get(env.AUTH.idFromName("auth"));

let pages;
export default {
  async fetch(request, env) {
    let config;
    try {
      config = configOf(env);
    } catch (error) {
      return misconfigured(error);
    }
    // Test mode: everything in the object, whose clock test mode sets (the /__test__/
    // endpoints, the server and its storage live there).
    if (env.TEST_MODE === "1") return theObject(env).fetch(request);
    pages ??= signInRoutes(config, {
      title: TITLE,
      attempts: (attempters, options) => theObject(env).signInAttempts(attempters, options?.failed ?? false),
      sourceOf: clientAddress,
    });
    return (await pages(request)) ?? theObject(env).fetch(request);
  },
};
