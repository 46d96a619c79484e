// The README's Workers quick-start as a test Worker: the authorization server inside one Durable
// Object, loaded through `edgegrant/workers` (the .wasm imported as a compiled module). The
// configuration comes from the CONFIG binding; the signed-in user from an `x-test-user` header,
// standing in for the host's own session.
import { createAuthServer } from "../src/workers.js";
import { durableObjectStorage } from "../src/adapters/durable-object.js";

export class AuthServer {
  constructor(state, env) {
    const config = JSON.parse(env.CONFIG);
    this.server = createAuthServer({
      config,
      storage: durableObjectStorage(state.storage),
      hooks: {
        currentUser: (request) => JSON.parse(request.headers.get("x-test-user") ?? "null"),
        api: { "/2/users/get_current_account": (principal) => Response.json({ account_id: principal.account_id }) },
      },
    });
  }
  fetch(request) {
    return this.server.fetch(request);
  }
}

export default {
  fetch: (request, env) => env.AUTH.get(env.AUTH.idFromName("auth")).fetch(request),
};
