// Type-checked, never run: the declarations as a host would use them, through the package's
// exports map. Each `@ts-expect-error` pins a mistake the types must catch — if a declaration
// loosens to `any`, that line stops erring and the check fails.
import {
  createAuthServer, createCore, checkConfig, runRequest, readStep, packRecords, secretDigest, entropyLength, page, createPkceClient, IDLE,
  type ConfigDocument, type Result, type Storage, type Stored, type Put, type Transaction, type Principal, type ClientState,
  type PlainRequest, type User, type AuditEvent, type OutcomeName, type RefusalName, type Attempter,
} from "edgegrant";
import { memoryStorage } from "edgegrant/adapters/memory";
import { sqliteStorage } from "edgegrant/adapters/sqlite";
import { openPostgresStorage } from "edgegrant/adapters/postgres";
import { protectedResource } from "edgegrant/resource";
import { durableObjectStorage } from "edgegrant/adapters/durable-object";
import { kvTokenStorage, type KvNamespace } from "edgegrant/adapters/kv";

const config: ConfigDocument = {
  server_key: "dGVzdHMtZml4dHVyZS1zZXJ2ZXIta2V5LTMyYnl0ZXM",
  apps: [
    { key: "app", name: "App", redirect_uris: ["https://app.example/cb"], permissions: { kind: "scoped", scopes: ["account_info.read"] } },
    { key: "old", name: "Old", secret_digest: secretDigest("s"), permissions: { kind: "legacy", access: "app_folder" } },
  ],
  api_endpoints: { "/2/users/get_current_account": "account_info.read" },
  pages: {
    consent: '<h1 {{page_data}}>{{app_name}}</h1><form method="post"><input type="hidden" name="query" value="{{query}}"><button name="decision" value="allow">Allow</button></form>',
    sign_in: '<a {{page_data}} href="/signin?return_to={{return_to}}">Sign in</a>',
  },
};
// @ts-expect-error: every deployment has its own server key
const keyless: ConfigDocument = { apps: [] };
// @ts-expect-error: permissions must say which kind
const wrongApp: ConfigDocument = { server_key: "k", apps: [{ key: "x", name: "X", permissions: { scopes: [] } }] };
// @ts-expect-error: pages are templates of the core's pages, not hooks
const pageHook: ConfigDocument = { server_key: "k", apps: [], pages: { consent: (query: string) => query } };

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
// Where a request runs when records are spread over partitions (one Durable Object each).
export async function routed(): Promise<Response> {
  const { partition, request } = await server.route(new Request("http://localhost/oauth2/token", { method: "POST", body: "grant_type=refresh_token" }));
  const named: string | null = server.core.partitionOf({ method: "GET", path: "/oauth2/authorize", headers: [], user: null });
  // @ts-expect-error: the partition may be null (no account's records): handle it before naming an object
  const object: string = partition;
  return partition === null ? server.fetch(request) : new Response(`${partition} ${named} ${object}`);
}
// @ts-expect-error: unlinking is done by a user or a team admin, nobody else
server.unlink("app", "dbid:a", "admin");
// An unlink resolves a reply, never a call to serve.
const unlinkStatus: number = (await server.unlink("app", "dbid:a")).status;
void unlinkStatus;
// Documents from any host with the web fetch (Workers): the operator's word, by name.
createAuthServer({ config, storage, anyDocumentHostWithoutAddressCheck: true });
// @ts-expect-error: the opt-out is a boolean, not a list of hosts (those go in profile.clients.documents.hosts)
createAuthServer({ config, storage, anyDocumentHostWithoutAddressCheck: ["*.example.com"] });
createAuthServer({
  config,
  storage,
  hooks: {
    // @ts-expect-error: the core renders the pages from config.pages; there is no page hook
    consentPage: () => page(200, "Allow?", "<p>…</p>"),
  },
});

/** A node:http-style host: plain values in, a reply to send or an API call to serve out. */
async function nodeHost(req: { method: string; url: string; rawHeaders: string[] }, body: Uint8Array, user: User | null) {
  const result: Result = await server.handle({ method: req.method, url: req.url, headers: req.rawHeaders, body, user });
  if (result.kind === "serve") return serveApi(result.principal);
  // @ts-expect-error: a reply has no principal; only an authorized call does
  result.principal;
  const headers: Record<string, string> = Object.fromEntries(result.headers);
  if (result.outcome === "refused") console.warn(result.refusal?.toUpperCase(), result.status);
  return { status: result.status, headers, body: result.body };
}
function serveApi(principal: Principal) {
  const expiry: string = principal.expires_at === null ? "never" : new Date(principal.expires_at * 1000).toISOString();
  return { status: 200, headers: {}, body: JSON.stringify({ account_id: principal.account_id, scopes: principal.scopes.join(" "), expiry }) };
}
const pairs = { method: "GET", path: "/oauth2/authorize", query: "client_id=app", headers: [["cookie", "s=1"]] } satisfies PlainRequest;
// @ts-expect-error: a body is bytes, not a string
server.handle({ method: "POST", path: "/oauth2/token", headers: [], body: "grant_type=refresh_token" });

// Lower down: the core and the one loop that runs its requests.
const core = createCore(config);
async function lowerDown(now: number): Promise<number> {
  const entropy = crypto.getRandomValues(new Uint8Array(entropyLength()));
  const audit: AuditEvent[] = [];
  const result = await runRequest(core.request({ ...pairs, user: { account_id: "dbid:a", uid: "1" } }, now, entropy), storage, { onAudit: (event) => audit.push(event) });
  switch (result.kind) {
    case "reply":
      return result.status;
    case "serve":
      return result.principal.scopes.length;
  }
}
/** The loop by hand, one step: a read answered from a map, packed. */
function firstStep(records: Map<string, Stored>): string {
  const request = core.request({ ...pairs }, 1_700_000_000, new Uint8Array(entropyLength()));
  const step = readStep(request.step());
  switch (step.kind) {
    case "r":
      return readStep(request.found(packRecords(step.keys, records))).kind;
    case "w":
      return step.transaction.puts[0].key;
    case "p":
      return step.body;
    default:
      // @ts-expect-error: only a reply has a body
      return step.body;
  }
}
// @ts-expect-error: a request of the core names its path
core.request({ method: "GET", headers: [] }, 0, new Uint8Array(112));
// @ts-expect-error: unlinking is done by a user or a team admin, nobody else
core.unlink("app", "dbid:a", "admin", 0, new Uint8Array(112));
const required: string | undefined = core.requiredScope("/2/users/get_current_account");

/** A host's own adapter: records are the core's opaque bytes, under versions from 1. */
function mapStorage(): Storage {
  const records = new Map<string, Stored>();
  return {
    async read(keys) {
      const found = new Map<string, Stored>();
      for (const key of keys) {
        const entry = records.get(key);
        if (entry) found.set(key, entry);
      }
      return found;
    },
    async apply({ puts }: Transaction) {
      const holds = (put: Put) => (put.expect === null ? !records.has(put.key) : records.get(put.key)?.version === put.expect);
      if (!puts.every(holds)) return false;
      for (const put of puts) records.set(put.key, { version: (put.expect ?? 0) + 1, bytes: put.bytes.slice() });
      return true;
    },
  };
}
const jsonStorage: Storage = {
  // @ts-expect-error: records are bytes now, not JSON values
  read: async (keys: string[]) => new Map(keys.map((key) => [key, { version: 1, record: { type: "link" } }])),
  apply: async () => true,
};
// @ts-expect-error: a put may expect absence (null): its version is not always a number
const nextVersion = (put: Put): number => put.expect + 1;

async function adapters(db: unknown, doStorage: unknown, kv: KvNamespace) {
  const sqlite = sqliteStorage(db, { table: "edgegrant_store" });
  const strong = durableObjectStorage(doStorage);
  const split = kvTokenStorage(kv, strong, { prefix: "tenant/" });
  // @ts-expect-error: the strong store must be able to purge, KV cannot do it for it
  kvTokenStorage(kv, { read: strong.read, apply: strong.apply });
  const unlinked: Result = await runRequest(core.unlink("app", "dbid:a", "user", 1_700_000_000, new Uint8Array(entropyLength())), split);
  const purged: number = await split.purge(1_700_000_000);
  const found: Map<string, Stored> = await sqlite.read(["link:app:dbid:a"]);
  const first: Uint8Array | undefined = found.get("link:app:dbid:a")?.bytes;
  sqlite.close();
  const postgres = await openPostgresStorage("postgres://edgegrant@127.0.0.1:5432/edgegrant", { table: "edgegrant_store", max: 4 });
  const records: number = await postgres.size();
  const disk: number = await postgres.diskBytes();
  await postgres.close();
  // @ts-expect-error: the pool comes first; options are not the connection
  await openPostgresStorage({ table: "t" });
  // @ts-expect-error: apply takes a transaction, not a list of puts
  await strong.apply([]);
  // @ts-expect-error: a put carries bytes, not a record object
  await strong.apply({ puts: [{ key: "link:a:b", expect: null, bytes: { type: "link" }, purgeAfter: null }], audit: [] });
  return [unlinked, purged, first, records, disk, page(200, "t", "<p>ok</p>"), response];
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
export { keyless, wrongApp, pageHook, adapters, client, nodeHost, lowerDown, firstStep, mapStorage, jsonStorage, nextVersion, required };

// A resource server on another host: metadata, challenges, the token check.
export async function resourceServer(request: Request): Promise<Response> {
  const rs = protectedResource({
    resource: "https://mcp.example/mcp",
    issuer: "https://auth.example/",
    scopes: ["account_info.read"],
    introspection: { endpoint: "https://auth.example/oauth2/introspect", clientId: "rs", clientSecret: "secret" },
  });
  if (new URL(request.url).pathname === rs.metadataPath) return rs.metadata();
  const checked = await rs.check(request, "account_info.read");
  if (checked.response) return checked.response;
  const subject: string = checked.token.sub;
  // @ts-expect-error: a checked token is live by construction
  const inactive: false = checked.token.active;
  return Response.json({ subject, inactive, challenge: rs.challenge("invalid_token") });
}

// The names the core answers with are generated from its own tables: every one is there, and
// nothing else.
const outcomes: OutcomeName[] = ["metadata", "introspected", "attempts_allowed", "refused"];
// @ts-expect-error: no such outcome
const noOutcome: OutcomeName = "done";
const refusals: RefusalName[] = ["storage_fault", "too_many_attempts", "code_expired"];
// @ts-expect-error: refusals are the core's names, not free text
const noRefusal: RefusalName = "expired";
const attempters: Attempter[] = [{ account: "alice" }, { source: "192.0.2.1" }];
// @ts-expect-error: an attempter is an account name or a source
const noAttempter: Attempter = { user: "alice" };
void [outcomes, noOutcome, refusals, noRefusal, attempters, noAttempter];
