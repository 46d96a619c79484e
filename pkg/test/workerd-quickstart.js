// The README's Workers quick-start as a test Worker: the authorization server inside one Durable
// Object, loaded through `edgegrant/workers` (the .wasm imported as a compiled module). The
// configuration comes from the CONFIG binding, with the host's own consent and sign-in pages as
// templates (the core fills them in and sends them with its headers); the signed-in user comes
// from an `x-test-user` header, standing in for the host's own session. The hooks are all a host
// gives: who is signed in, and its API.
import { createAuthServer } from "../src/workers.js";
import { durableObjectStorage } from "../src/adapters/durable-object.js";

const pages = {
  consent:
    '<!doctype html><title>Allow {{app_name}}?</title><main {{page_data}}><h1>Quick-start: {{app_name}} wants access</h1>' +
    "<p>for {{account_id}}{{#offline}}, also while you are away{{/offline}}</p><ul>{{#scopes}}<li>{{.}}</li>{{/scopes}}</ul>" +
    '<form method="post" action="/oauth2/authorize"><input type="hidden" name="query" value="{{query}}">' +
    '<button name="decision" value="allow">Allow</button><button name="decision" value="deny">Deny</button></form></main>',
  sign_in: '<!doctype html><title>Sign in</title><main {{page_data}}><a href="/signin?return_to={{return_to}}">Quick-start sign-in</a></main>',
};

export class AuthServer {
  constructor(state, env) {
    this.server = createAuthServer({
      config: { ...JSON.parse(env.CONFIG), pages },
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
