// Type-checked, never run: the declarations as a host would use them, through the package's
// exports map. Each `@ts-expect-error` pins a mistake the types must catch — if a declaration
// loosens to `any`, that line stops erring and the check fails.
import {
  createAuthServer, createCore, checkConfig, runSteps, secretDigest, page, createPkceClient, IDLE,
  type ConfigDocument, type Outcome, type Step, type Storage, type Principal, type ClientState,
} from "edgegrant";
import { memoryStorage } from "edgegrant/adapters/memory";
import { sqliteStorage } from "edgegrant/adapters/sqlite";
import { durableObjectStorage } from "edgegrant/adapters/durable-object";
import { kvTokenStorage, type KvNamespace } from "edgegrant/adapters/kv";

const config: ConfigDocument = {
  apps: [
    { key: "app", name: "App", redirect_uris: ["https://app.example/cb"], permissions: { kind: "scoped", scopes: ["account_info.read"] } },
    { key: "old", name: "Old", secret_digest: secretDigest("s"), permissions: { kind: "legacy", access: "app_folder" } },
  ],
  api_endpoints: { "/2/users/get_current_account": "account_info.read" },
};
// @ts-expect-error: permissions must say which kind
const wrongApp: ConfigDocument = { apps: [{ key: "x", name: "X", permissions: { scopes: [] } }] };

const check = checkConfig(config);
if (check.tag === "invalid") console.error(check.content.toUpperCase());

const storage: Storage = memoryStorage();
const server = createAuthServer({
  config,
  storage,
  clock: () => 1_700_000_000,
  hooks: {
    currentUser: () => ({ account_id: "dbid:a", uid: "1" }),
    api: {
      "/2/users/get_current_account": (principal: Principal) => Response.json({ account_id: principal.account_id }),
    },
  },
  onAudit: (event) => console.log(event.event),
});
const response: Promise<Response> = server.fetch(new Request("http://localhost/oauth2/token"));
// @ts-expect-error: unlinking is done by a user or a team admin, nobody else
server.unlink("app", "dbid:a", "admin");

const core = createCore(config);
const step: Step = core.handle({ kind: "revoke", request: { method: "POST", headers: [] } }, 1_700_000_000n, new Uint8Array(112), {});
switch (step.step) {
  case "need_records":
    step.keys.map((key) => key.length);
    break;
  case "commit":
    step.transaction.puts.map((put) => (put.expect.expect === "version" ? put.expect.version : 0));
    break;
  case "respond":
    describe(step.outcome);
    break;
}
// @ts-expect-error: there is no "delete" input
core.handle({ kind: "delete" }, 0, new Uint8Array(112), {});

function describe(outcome: Outcome): string {
  switch (outcome.kind) {
    case "http":
      return `${outcome.value.status} ${outcome.value.body}`;
    case "redirect":
      return outcome.value;
    case "consent":
      return outcome.value.scopes.join(" ");
    case "display_code":
      return outcome.value.code;
    case "error_page":
      return outcome.value.description;
    case "authorized":
      return outcome.value.uid;
    case "unlinked":
      return "unlinked";
  }
}

async function adapters(db: unknown, doStorage: unknown, kv: KvNamespace) {
  const sqlite = sqliteStorage(db);
  const strong = durableObjectStorage(doStorage);
  const split = kvTokenStorage(kv, strong, { prefix: "tenant/" });
  // @ts-expect-error: the strong store must be able to purge, KV cannot do it for it
  kvTokenStorage(kv, { read: strong.read, apply: strong.apply });
  const outcome: Outcome = await runSteps(core, split, { kind: "unlink", app: "app", account_id: "dbid:a", by: "user" });
  const purged: number = await split.purge(1_700_000_000);
  sqlite.close();
  // @ts-expect-error: apply takes a transaction, not a list of puts
  await strong.apply([]);
  return [outcome, purged, page(200, "t", "<p>ok</p>"), response];
}
async function client(): Promise<string> {
  const pkce = createPkceClient({
    client_id: "app",
    authorize_url: "https://auth.example/oauth2/authorize",
    token_url: "https://auth.example/oauth2/token",
    revoke_url: "https://auth.example/2/auth/token/revoke",
    redirect_uri: "https://app.example/cb",
    access_type: "offline",
  });
  const begun = pkce.step(IDLE, { kind: "begin" });
  if (begun.step.step === "navigate") location(begun.step.url);
  const state: ClientState = begun.state;
  const done = await pkce.run(state, { kind: "redirected", url: "https://app.example/cb?code=c&state=s" });
  switch (done.step.step) {
    case "authorized":
      return done.step.session.account_id ?? "";
    case "failed":
      return done.step.error.kind;
    default:
      // @ts-expect-error: a token never leaks into a step other than attach
      return done.step.access_token;
  }
}
declare function location(url: string): void;
// @ts-expect-error: access is online or offline, the legacy type is the server's business
createPkceClient({ client_id: "a", authorize_url: "", token_url: "", revoke_url: "", access_type: "legacy" });
export { wrongApp, adapters, client };
