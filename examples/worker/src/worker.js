// The Cloudflare Worker host. The stateless Worker answers the host's own pages (/, /signin:
// scrypt is deliberately slow, so it runs here, in parallel, outside the object) and hands
// every other request to the one Durable Object that holds the authorization server and all
// of its records. The configuration arrives as the CONFIG variable (JSON text; see README.md).
import "../../../pkg/src/workers.js"; // loads the WebAssembly core (wrangler imports the .wasm)
import { durableObjectStorage } from "../../../pkg/src/adapters/durable-object.js";
import { authServer, parseConfig, signInRoutes } from "../../host/app.mjs";
import { withTestMode } from "../../host/test-mode.mjs";

/** The checked configuration, parsed once per isolate. */
let parsed;
function configOf(env) {
  if (parsed?.text !== env.CONFIG) {
    if (typeof env.CONFIG !== "string") throw new Error("the CONFIG variable is not set");
    parsed = { text: env.CONFIG, config: parseConfig(JSON.parse(env.CONFIG)) };
  }
  return parsed.config;
}

const misconfigured = (error) => {
  console.error(`edgegrant: invalid configuration: ${error.message}`);
  return new Response("The server is misconfigured.", { status: 500 });
};

/** The client's address as Cloudflare's edge names it (clients cannot set this header there). */
const clientAddress = (request) => request.headers.get("CF-Connecting-IP");

export class AuthServer {
  constructor(state, env) {
    this.state = state;
    this.env = env;
  }

  fetch(request) {
    if (!this.server) {
      try {
        const config = configOf(this.env);
        const storage = durableObjectStorage(this.state.storage);
        const onAudit = (event) => console.log(JSON.stringify({ audit: event }));
        // Test mode (../../host/test-mode.mjs) only when TEST_MODE is "1": dev.mjs sets it for
        // startWorker({ testMode: true }) and nothing else does. Otherwise /__test__/ is a 404.
        this.server =
          this.env.TEST_MODE === "1"
            ? withTestMode({
                config,
                storage,
                onAudit,
                serve: authServer,
                emptyStorage: async () => {
                  await this.state.storage.deleteAll();
                  return storage;
                },
              })
            : authServer(config, { storage, onAudit, sourceOf: clientAddress });
      } catch (error) {
        return misconfigured(error);
      }
    }
    return this.server.fetch(request);
  }
}

let pages;
export default {
  async fetch(request, env) {
    try {
      pages ??= signInRoutes(configOf(env), { title: "Worker host" });
    } catch (error) {
      return misconfigured(error);
    }
    // One object, named "auth", for every record: see README.md for why. (In test mode the
    // /__test__/ endpoints go there too: the server and its storage live in the object.)
    return (await pages(request)) ?? env.AUTH.get(env.AUTH.idFromName("auth")).fetch(request);
  },
};
