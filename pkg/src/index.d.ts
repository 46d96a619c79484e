// Types of the driver. The values that cross into the core (Input, Step, Outcome, Records, …)
// are declared once, by the wasm bindings, in dist/edgegrant_wasm.d.ts (server) and
// dist/edgegrant_client.d.ts (PKCE client).
import type {
  App, AuditEvent, ConfigCheck, ConfigDocument, ConsentPrompt, Input, Outcome, Policy, Principal, Step, Transaction, UnixTime,
  User, Versioned,
} from "../dist/edgegrant_wasm.js";
import type { ClientConfig, ClientInput, ClientRequest, ClientState, ClientTransition } from "../dist/edgegrant_client.js";

export type {
  App, AuditEvent, ConfigCheck, ConfigDocument, ConsentPrompt, Expect, HttpRequest, HttpResponse, Input, Outcome, Policy,
  Principal, Put, RecordKey, Records, Scope, Step, StoredRecord, TokenAccessType, Transaction, UnixTime, User, Versioned,
} from "../dist/edgegrant_wasm.js";
export type {
  ClientConfig, ClientError, ClientInput, ClientRequest, ClientSession, ClientState, ClientStep, ClientTransition, SessionView,
} from "../dist/edgegrant_client.js";

/** Two verbs: read many keys in one batch, apply a transaction all-or-nothing. */
export interface Storage {
  /** The records stored under `keys`; absent keys are left out of the map. */
  read(keys: string[]): Promise<Map<string, Versioned>>;
  /** Applies every put if every `expect` holds, else nothing; resolves `false` on a conflict. */
  apply(transaction: Transaction): Promise<boolean>;
}

export interface Hooks {
  /** The signed-in user of this request, or null. */
  currentUser?(request: Request): Promise<User | null> | User | null;
  /** The sign-in page; afterwards send the browser back to `returnTo`. */
  signIn?(request: Request, context: { returnTo: string }): Promise<Response> | Response;
  /** The consent page: a form POSTing `query` and `decision` (allow | deny) to /oauth2/authorize. */
  consentPage?(context: { prompt: ConsentPrompt; query: string; user: User; request: Request }): Promise<Response> | Response;
  /** The page showing a code when the request had no redirect_uri. */
  codePage?(context: { app: string; code: string; request: Request }): Promise<Response> | Response;
  /** A user-facing error page (never a redirect). */
  errorPage?(context: { error: string; description: string; request: Request }): Promise<Response> | Response;
  /** The host's API, by path; called once the bearer token and Required Scope checked out. */
  api?: Record<string, (principal: Principal, request: Request) => Promise<Response> | Response>;
}

export interface AuthServerOptions {
  apps?: App[];
  policy?: Policy;
  /** Required Scope of each `/2/` endpoint, by path. */
  apiEndpoints?: Record<string, string>;
  /** Or the whole configuration document at once. */
  config?: ConfigDocument;
  storage: Storage;
  hooks?: Hooks;
  /** Seconds since the epoch; default: the system clock. */
  clock?: () => UnixTime | bigint;
  /** Fresh entropy of `entropyLength()` bytes; default: crypto.getRandomValues. */
  random?: () => Uint8Array;
  /** Attempts when a conditional write loses a race (default 5). */
  maxAttempts?: number;
  onAudit?: (event: AuditEvent) => void;
}

export interface AuthServer {
  fetch(request: Request): Promise<Response>;
  unlink(app: string, accountId: string, by?: "user" | "team_admin"): Promise<Outcome>;
  run(input: Input): Promise<Outcome>;
  core: Core;
}

export interface Core {
  /** One step, stateless: every record loaded so far goes in again. */
  handle(input: Input, now: UnixTime | bigint, entropy: Uint8Array, records: Record<string, Versioned | null>): Step;
  /** One request step by step: the input is parsed once; `step` takes only the records loaded since the last step. Call `free()` when done. */
  begin(input: Input, now: UnixTime | bigint, entropy: Uint8Array): PendingRequest;
  requiredScope(endpoint: string): string | undefined;
}

/** A request between its steps (see `Core.begin`). */
export interface PendingRequest {
  /** Adds the records loaded since the last step (none on the first) and runs the next step. */
  step(loaded: Record<string, Versioned | null>): Step;
  /** Releases the request's memory in the wasm module. */
  free(): void;
}

/** Instantiates the server's module (`edgegrant/wasm`); the node and workers entry points do it. */
export function initialize(module: WebAssembly.Module | BufferSource): void;
/** Instantiates the PKCE client's module (`edgegrant/client-wasm`); the node and browser entry points do it. */
export function initializeClient(module: WebAssembly.Module | BufferSource): void;
export function createCore(config: ConfigDocument): Core;
export function checkConfig(config: ConfigDocument): ConfigCheck;
/** The configuration with the legacy app `app` migrated to scopes (scopes pre-selected from its legacy access type); tokens already issued keep theirs. Throws if the app is unknown or already scoped. */
export function migrateApp(config: ConfigDocument, app: string): ConfigDocument;
export function secretDigest(secret: string): string;
export function entropyLength(): number;
export function createAuthServer(options: AuthServerOptions): AuthServer;
export function runSteps(
  core: Core,
  storage: Storage,
  input: Input,
  options?: { clock?: () => UnixTime | bigint; random?: () => Uint8Array; maxAttempts?: number; onAudit?: (event: AuditEvent) => void },
): Promise<Outcome>;
/** An HTML page with the flow's security headers (no framing, no caching, no referrer). */
export function page(status: number, title: string, bodyHtml: string): Response;
export function escapeHtml(text: unknown): string;
/** Attributes (` data-page="…" data-app="…" …`) that tell machines which page of the flow this is; put them on the page's first element. */
export function pageData(
  kind: "sign_in" | "consent" | "code" | "error",
  fields?: { app?: string; scopes?: string[]; access_type?: string; code?: string; error?: string },
): string;
/** `pageData("consent", …)` for a consent prompt. */
export function consentPageData(prompt: ConsentPrompt): string;

/** A store that can also delete the records whose purge time has passed. */
export interface PurgeableStorage extends Storage {
  /** Deletes the records whose purge time is at or before `now`; resolves how many. */
  purge(now: number): Promise<number>;
}

/** The PKCE client machine: one pure transition per call. */
export interface PkceMachine {
  handle(state: ClientState, input: ClientInput, now: UnixTime | bigint, entropy: Uint8Array): ClientTransition;
}
export function createPkceMachine(config: ClientConfig): PkceMachine;
export function clientEntropyLength(): number;

/** The state a new client starts in. */
export const IDLE: ClientState;

export interface PkceClientOptions {
  /** Seconds since the epoch; default: the system clock. */
  clock?: () => UnixTime | bigint;
  /** Fresh entropy of `clientEntropyLength()` bytes; default: crypto.getRandomValues. */
  random?: () => Uint8Array;
  /** Default: the global fetch. */
  fetch?: (input: string | Request, init?: RequestInit) => Promise<Response>;
  /** Sees every request the machine sends and the raw answer. */
  onExchange?: (request: ClientRequest, response: { status: number; headers: [string, string][]; body: string }) => void;
}

export interface PkceClient {
  /** One transition at the host's time with fresh entropy. */
  step(state: ClientState, input: ClientInput): ClientTransition;
  /** A transition, carrying out `send` steps until the machine wants something else. */
  run(state: ClientState, input: ClientInput): Promise<ClientTransition>;
  /** An API call with the bearer token, refreshing when due or after a 401 as the machine says. */
  call(state: ClientState, url: string, init?: RequestInit): Promise<{ state: ClientState; response: Response } | ClientTransition>;
  config: ClientConfig;
}
export function createPkceClient(config: ClientConfig, options?: PkceClientOptions): PkceClient;
