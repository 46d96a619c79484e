// A Worker on edgegrant/workers/configured-apps (the server's module for configured apps only),
// its server in the isolate over memory storage: the configuration comes from the CONFIG
// binding, the signed-in user from an `x-test-user` header; `POST /check` answers checkConfig
// of the posted configuration, so that the test can ask the module what it refuses.
import { checkConfig, createAuthServer } from "../src/workers-configured-apps.js";
import { memoryStorage } from "../src/adapters/memory.js";

let server;

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/check") return Response.json(checkConfig(await request.json()));
    server ??= createAuthServer({
      config: JSON.parse(env.CONFIG),
      storage: memoryStorage(),
      hooks: {
        currentUser: (request) => JSON.parse(request.headers.get("x-test-user") ?? "null"),
        api: { "/2/users/get_current_account": (principal) => Response.json({ account_id: principal.account_id }) },
      },
    });
    return server.fetch(request);
  },
};
