#!/usr/bin/env node
// A bounded, self-stopping load and soak run of the example hosts on loopback.
//
//   node tests/load/load.mjs [--host node|worker|both] [--duration SECONDS] [--concurrency N]
//        [--warmup SECONDS] [--write-rate N] [--users N] [--apps N] [--grants N]
//        [--sample SECONDS] [--idle SECONDS] [--threshold PERCENT] [--json FILE]
//
// For each host (default both; 120 s each; 16 concurrent clients) it:
//   1. starts the host itself, normally (not in test mode), on a fresh configuration with a pool
//      of users and apps (half public PKCE apps, half confidential with a secret) and fresh
//      storage — the Node host in a child process, so that its memory is its own;
//   2. sets up tokens through the real HTTP flow: sign-in, authorize, consent, token exchange
//      (S256 PKCE for public apps, HTTP Basic for confidential ones), offline access, so every
//      grant has a refresh token; each client gets its own grants (--grants, default 4);
//   3. runs a warm-up (--warmup, default 15 s, not in the figures), pauses to read the store's
//      record count and the baseline memory, then runs the measured traffic for --duration:
//        api      POST /2/users/get_current_account with a live bearer token   (most of it)
//        refresh  refresh_token grant; the new token joins the grant's tokens
//        authorize + exchange   a new code (already granted: straight back) and its exchange
//        revoke   POST /2/auth/token/revoke, then every token of that grant must get 401
//                 (api-revoked) and its refresh token 400 (refresh-revoked); the client
//                 replaces the grant with a new one
//        probe    a token of an earlier revoked grant, which must still be refused
//      Operations that create records (refresh, exchange, revoke) share a budget of --write-rate
//      operations per second (default 50), split by their weights; a client whose pick finds
//      its share spent makes an API call instead. New records per second stay bounded whatever
//      the throughput, so store growth is data at a known rate, told apart from a leak;
//   4. stops, reads the record count and memory again (and once more after --idle s, default
//      3), then sweeps: every revoked grant's tokens once more (must be refused), every live
//      grant's newest token (must still work).
// --host miniflare, a diagnostic outside "both": the Worker host's code on Miniflare directly
// (workerd without wrangler dev's proxy, inspector and request log), to tell the Worker's memory
// from the dev tooling's; it needs tests/bench's npm install.
//
// An error is any unexpected status (every 5xx is one), a network error or timeout, a body that
// is not what the flow promises (wrong account, missing token, a refresh_token in a refresh
// response), and above all any success with a revoked token.
//
// Exit status: 1 on any error (or a host that failed to start or set up), 3 on a memory flag
// without errors, 2 on bad options, 0 otherwise.
//
// Memory: RSS (VmRSS, and RssAnon, from /proc/<pid>/status) of the server process — the Node
// host's child; for the Worker, the workerd that runs the Worker and its Durable Object (the
// proxy workerd wrangler puts in front is shown beside it) — sampled every --sample seconds.
// Growth is end-of-traffic RSS over the baseline taken after warm-up; above --threshold
// (default 20%) it is flagged. Why 20%: after warm-up the Node host's RSS moves within about
// ±3% from sample to sample (garbage collection), workerd's within about ±8%; and a leak of 50
// bytes per request at the Node host's ~5,000 req/s adds 30 MB in 120 s, 20% of its ~145 MB:
// the bar stays clear of GC noise and still catches a leak of that size. Node host: also the V8 heap after a full GC and
// the core's WebAssembly memory (which only grows), before and after: flat there while RSS grows
// would point away from the server's own objects. Store growth is reported beside it (records
// by kind, file size) since records are data, not a leak.
//
// workerd's RSS climbs for its first tens of thousands of requests before it levels off
// (Miniflare, same traffic: ~400 MB after ~60k requests), and under wrangler dev its proxy
// workerd, which runs none of this code, keeps growing with Durable Object traffic; see
// --host miniflare to tell the Worker's own memory from the dev tooling's.
//
// The last line sums up both hosts:
//   LOAD: node 1234 req/s p99 12 ms 0 errors rss +3%; worker ...
import http from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { REDIRECT, cpuSeconds, machineBusySeconds, readRss, startMiniflareHost, startNodeHost, startWorkerHost, writeConfig } from "./hosts.mjs";

export const DEFAULTS = {
  duration: 120,
  concurrency: 16,
  warmup: 15,
  writeRate: 50,
  users: 8,
  apps: 4,
  grants: 4,
  sample: 2,
  idle: 3,
  threshold: 20,
  // Relative weights of the operations each client picks from.
  mix: { api: 82, refresh: 8, exchange: 5, revoke: 2, probe: 3 },
};

const REQUEST_TIMEOUT_MS = 15_000;
/** More errors than this and the run stops early: the figures would mean nothing. */
const MAX_ERRORS = 1000;
/** Error samples kept (with request and response) for the report. */
const KEPT_ERRORS = 20;
/** The operations that create records, and share the write budget (--write-rate per second). */
const WRITES = ["refresh", "exchange", "revoke"];
/** Newest access tokens kept per grant (older ones stay valid; the client forgets them). */
const TOKENS_PER_GRANT = 3;

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const pick = (list) => list[Math.floor(Math.random() * list.length)];
const b64url = (bytes) => Buffer.from(bytes).toString("base64url");
const mb = (kb) => (kb / 1024).toFixed(1);
const pct = (x) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;

/** One HTTP/1.1 exchange on `agent`: resolves `{ status, headers, body }` (body as text). */
function send(agent, base, { method, path, headers = {}, body }) {
  const { hostname, port } = new URL(base);
  const payload = body === undefined ? undefined : Buffer.from(body);
  const all = { ...headers };
  if (payload) all["content-length"] = payload.length;
  else if (method === "POST") all["content-length"] = 0;
  return new Promise((resolve, reject) => {
    const request = http.request({ agent, host: hostname, port, method, path, headers: all }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("error", reject);
      response.on("end", () => resolve({ status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    request.on("error", reject);
    request.end(payload);
  });
}

const json = (response) => {
  try {
    return JSON.parse(response.body);
  } catch {
    return undefined;
  }
};

/** The q-quantile (0..1) of sorted `values`, nearest rank. */
const quantile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] : NaN);

/** Requests and latencies of one phase, by kind. */
class Phase {
  constructor(name) {
    this.name = name;
    this.kinds = new Map();
    this.started = performance.now();
    this.ended = undefined;
  }
  record(kind, ms) {
    let list = this.kinds.get(kind);
    if (!list) this.kinds.set(kind, (list = []));
    list.push(ms);
  }
  get requests() {
    let n = 0;
    for (const list of this.kinds.values()) n += list.length;
    return n;
  }
  get seconds() {
    return ((this.ended ?? performance.now()) - this.started) / 1000;
  }
  /** `{ kind: { count, p50, p90, p99, max } }` and `all`, in ms. */
  summary() {
    const out = {};
    const every = [];
    for (const [kind, list] of [...this.kinds].sort(([a], [b]) => a.localeCompare(b))) {
      const sorted = Float64Array.from(list).sort();
      out[kind] = { count: list.length, p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] };
      every.push(list);
    }
    const sorted = Float64Array.from(every.flat()).sort();
    out.all = { count: sorted.length, p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] };
    return out;
  }
}

/** The client side of one host's run: requests, checks, errors, the write budget. */
export class Client {
  constructor(base, { concurrency, writeRate, mix }) {
    this.base = base;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency + 2 });
    this.phase = new Phase("setup");
    this.phases = [this.phase];
    this.errorCount = 0;
    this.errorsByCategory = {};
    this.errorSamples = [];
    this.stopping = false;
    // The write budget, split among the writing operations by their weights: each has a bucket.
    const writing = WRITES.filter((op) => mix[op] > 0);
    const writeWeight = writing.reduce((s, op) => s + mix[op], 0);
    this.buckets = Object.fromEntries(writing.map((op) => [op, { rate: (writeRate * mix[op]) / writeWeight, level: 1, at: performance.now() }]));
    this.mix = Object.entries(mix);
    this.mixTotal = this.mix.reduce((s, [, w]) => s + w, 0);
    this.revoked = []; // grants revoked during the run: their tokens must stay refused
    this.ops = { api: 0, refresh: 0, exchange: 0, revoke: 0, probe: 0 };
  }

  startPhase(name) {
    this.phase.ended ??= performance.now();
    this.phase = new Phase(name);
    this.phases.push(this.phase);
    return this.phase;
  }

  fail(kind, category, why, request, response) {
    this.errorCount++;
    this.errorsByCategory[category] = (this.errorsByCategory[category] ?? 0) + 1;
    if (this.errorSamples.length < KEPT_ERRORS) {
      this.errorSamples.push({
        phase: this.phase.name,
        kind,
        category,
        why,
        request: request && { method: request.method, path: request.path.slice(0, 200), headers: request.headers, body: request.body?.slice?.(0, 300) },
        response: response && { status: response.status, headers: response.headers, body: response.body.slice(0, 500) },
      });
    }
    if (this.errorCount >= MAX_ERRORS) this.stopping = true;
    return null;
  }

  /**
   * Sends `request`, timed as `kind`. Resolves the response when its status is in `expect` and
   * `check(response)` finds nothing wrong; otherwise records an error and resolves null.
   */
  async call(kind, request, expect, check) {
    const phase = this.phase;
    const start = performance.now();
    let response;
    try {
      response = await send(this.agent, this.base, request);
    } catch (error) {
      return this.fail(kind, "network", `${error.code ?? ""} ${error.message}`.trim(), request);
    }
    phase.record(kind, performance.now() - start);
    if (!expect.includes(response.status)) {
      let category = response.status >= 500 ? "5xx" : "unexpected status";
      if (response.status >= 200 && response.status < 300 && kind.endsWith("-revoked")) category = "revoked token accepted";
      return this.fail(kind, category, `status ${response.status}, expected ${expect.join(" or ")}`, request, response);
    }
    const why = check?.(response);
    if (why) return this.fail(kind, "bad response", why, request, response);
    return response;
  }

  /** Takes one operation `op` from its share of the write budget; false when it is spent for now. */
  takeWrite(op) {
    const bucket = this.buckets[op];
    if (!bucket) return true;
    const now = performance.now();
    // Refilled at its rate, holding up to one second's worth (at least one operation).
    bucket.level = Math.min(Math.max(1, bucket.rate), bucket.level + ((now - bucket.at) / 1000) * bucket.rate);
    bucket.at = now;
    if (bucket.level < 1) return false;
    bucket.level -= 1;
    return true;
  }

  pickOp() {
    let r = Math.random() * this.mixTotal;
    for (const [op, weight] of this.mix) if ((r -= weight) < 0) return op;
    return "api";
  }

  // The flow, request by request.

  async signIn(user) {
    const request = { method: "POST", path: "/signin", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ username: user.username, password: user.password, return_to: "/" }).toString() };
    const response = await this.call("signin", request, [303], (r) => (/^session=/.test(r.headers["set-cookie"]?.[0] ?? "") ? undefined : "no session cookie"));
    if (!response) throw new Error(`${user.username} could not sign in`);
    user.cookie = response.headers["set-cookie"][0].split(";")[0];
  }

  /** The authorization request of `app` for a new code: the query and the PKCE verifier. */
  authorizationQuery(app) {
    const state = b64url(randomBytes(9));
    const verifier = app.confidential ? undefined : b64url(randomBytes(32));
    const params = { client_id: app.key, response_type: "code", redirect_uri: REDIRECT, token_access_type: "offline", state };
    if (verifier) Object.assign(params, { code_challenge: b64url(createHash("sha256").update(verifier).digest()), code_challenge_method: "S256" });
    return { query: new URLSearchParams(params).toString(), state, verifier };
  }

  /** The code in a redirect to the app, checked against `state`. */
  codeIn(response, state) {
    const location = response.headers.location;
    if (!location) return { why: "no Location" };
    const url = new URL(location);
    if (url.origin + url.pathname !== REDIRECT) return { why: `redirect to ${url.origin + url.pathname}` };
    if (url.searchParams.get("state") !== state) return { why: "state not returned unchanged" };
    const code = url.searchParams.get("code");
    return code ? { code } : { why: `no code: ${location}` };
  }

  /** First consent of `user` for `app`: the consent page, Allow, and the exchange. */
  async consent(user, app) {
    const { query, state, verifier } = this.authorizationQuery(app);
    const page = await this.call("consent-page", { method: "GET", path: `/oauth2/authorize?${query}`, headers: { cookie: user.cookie } }, [200], (r) =>
      r.body.includes('data-page="consent"') ? undefined : "not the consent page",
    );
    if (!page) throw new Error(`no consent page for ${user.username} and ${app.key}`);
    let code;
    const allow = await this.call(
      "consent-allow",
      { method: "POST", path: "/oauth2/authorize", headers: { cookie: user.cookie, origin: this.base, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ query, decision: "allow" }).toString() },
      [302],
      (r) => {
        const got = this.codeIn(r, state);
        code = got.code;
        return got.why;
      },
    );
    if (!allow) throw new Error(`consent of ${user.username} for ${app.key} failed`);
    const grant = await this.exchange(user, app, code, verifier);
    if (!grant) throw new Error(`the first exchange of ${user.username} for ${app.key} failed`);
    return grant;
  }

  /** A new grant of an already consented link: a code straight back, then its exchange. */
  async newGrant(user, app) {
    const { query, state, verifier } = this.authorizationQuery(app);
    let code;
    const response = await this.call("authorize", { method: "GET", path: `/oauth2/authorize?${query}`, headers: { cookie: user.cookie } }, [302], (r) => {
      const got = this.codeIn(r, state);
      code = got.code;
      return got.why;
    });
    if (!response) return null;
    return this.exchange(user, app, code, verifier);
  }

  /** Credentials at the token endpoint: Basic for a confidential app, client_id for a public one. */
  credentials(app, form, { basic }) {
    const headers = { "content-type": "application/x-www-form-urlencoded" };
    if (!app.confidential) form.client_id = app.key;
    else if (basic) headers.authorization = `Basic ${Buffer.from(`${app.key}:${app.secret}`).toString("base64")}`;
    else Object.assign(form, { client_id: app.key, client_secret: app.secret });
    return headers;
  }

  async exchange(user, app, code, verifier) {
    const form = { grant_type: "authorization_code", code, redirect_uri: REDIRECT };
    if (verifier) form.code_verifier = verifier;
    const headers = this.credentials(app, form, { basic: true });
    let body;
    const response = await this.call("exchange", { method: "POST", path: "/oauth2/token", headers, body: new URLSearchParams(form).toString() }, [200], (r) => {
      body = json(r);
      if (typeof body?.access_token !== "string" || typeof body.refresh_token !== "string") return "no access_token and refresh_token";
      if (body.token_type !== "bearer" || typeof body.expires_in !== "number") return "token_type or expires_in wrong";
      if (body.account_id !== user.account_id || body.uid !== user.uid) return `tokens for ${body.account_id}/${body.uid}, not ${user.account_id}/${user.uid}`;
      return undefined;
    });
    if (!response) return null;
    return { user, app, access: [{ token: body.access_token, expiresAt: Date.now() + body.expires_in * 1000 }], refresh: body.refresh_token };
  }

  async refresh(grant) {
    const form = { grant_type: "refresh_token", refresh_token: grant.refresh };
    const headers = this.credentials(grant.app, form, { basic: false });
    let body;
    const response = await this.call("refresh", { method: "POST", path: "/oauth2/token", headers, body: new URLSearchParams(form).toString() }, [200], (r) => {
      body = json(r);
      if (typeof body?.access_token !== "string" || body.token_type !== "bearer" || typeof body.expires_in !== "number") return "not a refresh response";
      if ("refresh_token" in body) return "a refresh response carries no refresh_token";
      if (grant.access.some((a) => a.token === body.access_token)) return "the same access token again";
      return undefined;
    });
    if (!response) return false;
    grant.access.push({ token: body.access_token, expiresAt: Date.now() + body.expires_in * 1000 });
    if (grant.access.length > TOKENS_PER_GRANT) grant.access.shift();
    return true;
  }

  /** An API call that must succeed, for the grant's user. */
  api(grant, token, kind = "api") {
    return this.call(kind, { method: "POST", path: "/2/users/get_current_account", headers: { authorization: `Bearer ${token}` } }, [200], (r) => {
      const body = json(r);
      return body?.account_id === grant.user.account_id ? undefined : `account ${body?.account_id}, not ${grant.user.account_id}`;
    });
  }

  /** A refused API call: the token was revoked. */
  apiRevoked(token) {
    return this.call("api-revoked", { method: "POST", path: "/2/users/get_current_account", headers: { authorization: `Bearer ${token}` } }, [401], (r) =>
      /invalid_token/.test(r.headers["www-authenticate"] ?? "") ? undefined : "401 without WWW-Authenticate: Bearer error=invalid_token",
    );
  }

  /** A refused refresh: the grant was revoked. */
  refreshRevoked(grant) {
    const form = { grant_type: "refresh_token", refresh_token: grant.refresh };
    const headers = this.credentials(grant.app, form, { basic: true });
    return this.call("refresh-revoked", { method: "POST", path: "/oauth2/token", headers, body: new URLSearchParams(form).toString() }, [400], (r) =>
      json(r)?.error === "invalid_grant" ? undefined : "not invalid_grant",
    );
  }

  async revoke(grant) {
    const token = pick(grant.access).token;
    const response = await this.call("revoke", { method: "POST", path: "/2/auth/token/revoke", headers: { authorization: `Bearer ${token}` } }, [200]);
    if (!response) return false;
    grant.revokedAt = Date.now();
    this.revoked.push(grant);
    // Every token of the grant ends with it, and its refresh token too.
    for (const { token: t } of grant.access) await this.apiRevoked(t);
    await this.refreshRevoked(grant);
    return true;
  }
}

/** One client's loop: picks operations until the run stops. `slot.grants` are its own. */
async function clientLoop(client, slot, pairs) {
  while (!client.stopping) {
    let op = client.pickOp();
    if (!client.takeWrite(op)) op = "api";
    if (op === "probe" && client.revoked.length === 0) op = "api";
    client.ops[op]++;
    const index = Math.floor(Math.random() * slot.grants.length);
    const grant = slot.grants[index];
    try {
      if (op === "api") {
        // A token with a minute left at least; otherwise refresh first (a long soak outlives them).
        const live = grant.access.filter((a) => a.expiresAt - Date.now() > 60_000);
        if (live.length) await client.api(grant, pick(live).token);
        else await client.refresh(grant);
      } else if (op === "refresh") {
        await client.refresh(grant);
      } else if (op === "exchange") {
        // A new grant takes the place of one of the client's (the old one stays valid, forgotten).
        const [user, app] = pick(pairs);
        const fresh = await client.newGrant(user, app);
        if (fresh) slot.grants[index] = fresh;
      } else if (op === "revoke") {
        if (await client.revoke(grant)) {
          const fresh = await client.newGrant(grant.user, grant.app);
          if (fresh) slot.grants[index] = fresh;
          else slot.grants[index] = slot.grants[(index + 1) % slot.grants.length]; // keep going with the others
        }
      } else if (op === "probe") {
        const old = pick(client.revoked);
        if (Math.random() < 0.5) await client.apiRevoked(pick(old.access).token);
        else await client.refreshRevoked(old);
      }
    } catch (error) {
      client.fail(op, "client exception", error.stack);
    }
  }
}

/** Runs `count` async tasks `task(i)`, at most `limit` at a time. */
async function pool(count, limit, task) {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, count) }, async () => {
    while (next < count) await task(next++);
  });
  await Promise.all(workers);
}

/** Least-squares slope of `points` [[x, y]…]. */
function slope(points) {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxx ? sxy / sxx : NaN;
}

/** Samples the RSS of `host`'s processes every `seconds`, with the phase each sample fell in. */
function memorySampler(host, client, seconds, t0) {
  const samples = [];
  const take = (label) => {
    const sample = { t: (performance.now() - t0) / 1000, phase: label ?? client.phase.name, processes: {} };
    for (const { role, pid } of host.processes()) sample.processes[role] = readRss(pid);
    samples.push(sample);
    return sample;
  };
  const timer = setInterval(() => take(), seconds * 1000);
  return { samples, take, stop: () => clearInterval(timer) };
}

/** CPU seconds used so far: by each of the host's processes, by this runner, by the machine. */
function cpuSnapshot(host) {
  const usage = process.cpuUsage();
  return {
    processes: Object.fromEntries(host.processes().map(({ role, pid }) => [role, cpuSeconds(pid)])),
    runner: (usage.user + usage.system) / 1e6,
    machine: machineBusySeconds(),
  };
}

/** What each used between two snapshots, and what the rest of the machine did meanwhile. */
function cpuBetween(a, b) {
  const processes = Object.fromEntries(Object.keys(b.processes).map((role) => [role, b.processes[role] - a.processes[role]]));
  const runner = b.runner - a.runner;
  const machine = b.machine - a.machine;
  const ours = runner + Object.values(processes).reduce((s, v) => s + (Number.isFinite(v) ? v : 0), 0);
  return { processes, runner, machine, others: Math.max(0, machine - ours), cores: availableParallelism() };
}

/**
 * One host's whole run. `log` prints a line. Resolves the result: figures, errors, memory,
 * records, and `ok` / `memoryFlag`.
 */
export async function runHost(kind, options = {}, log = console.log) {
  const o = { ...DEFAULTS, ...options, mix: { ...DEFAULTS.mix, ...options.mix } };
  const dir = mkdtempSync(join(tmpdir(), `edgegrant-load-${kind}-`));
  const config = writeConfig(dir, { users: o.users, apps: o.apps });
  let host;
  let client;
  try {
    const startedAt = performance.now();
    const start = { node: () => startNodeHost(config.path), worker: () => startWorkerHost(config.path, dir), miniflare: () => startMiniflareHost(config.path, dir) }[kind];
    host = await start();
    log(`== ${kind} host at ${host.url}, ${host.processes().map((p) => `${p.role} pid ${p.pid}`).join(", ")} (started in ${((performance.now() - startedAt) / 1000).toFixed(1)} s)`);
    client = new Client(host.url, o);

    // Setup: sign in every user, a first consent (and grant) per user and app, then the
    // remaining grants each client starts with.
    const t0 = performance.now();
    const sampler = memorySampler(host, client, o.sample, t0);
    for (const user of config.users) await client.signIn(user);
    const pairs = config.users.flatMap((user) => config.apps.map((app) => [user, app]));
    const firstGrants = [];
    await pool(pairs.length, o.concurrency, async (i) => (firstGrants[i] = await client.consent(...pairs[i])));
    const slots = Array.from({ length: o.concurrency }, () => ({ grants: [] }));
    const wanted = o.concurrency * o.grants;
    await pool(wanted, o.concurrency, async (i) => {
      const [user, app] = pairs[i % pairs.length];
      const grant = i < pairs.length ? firstGrants[i] : await client.newGrant(user, app);
      if (!grant) throw new Error(`setup: no grant for ${user.username} and ${app.key}`);
      slots[i % o.concurrency].grants.push(grant);
    });
    log(`setup: ${config.users.length} users signed in, ${pairs.length} consents, ${wanted} grants for ${o.concurrency} clients in ${((performance.now() - t0) / 1000).toFixed(1)} s (${client.errorCount} errors)`);

    const runPhase = async (name, seconds) => {
      const phase = client.startPhase(name);
      client.stopping = client.errorCount >= MAX_ERRORS;
      const timer = setTimeout(() => (client.stopping = true), seconds * 1000);
      await Promise.all(slots.map((slot) => clientLoop(client, slot, pairs)));
      clearTimeout(timer);
      phase.ended = performance.now();
      return phase;
    };
    const quiet = async (label) => {
      const stats = await host.stats(true);
      return { sample: sampler.take(label), records: host.records(), stats };
    };

    const warm = await runPhase("warm-up", o.warmup);
    log(`warm-up ${warm.seconds.toFixed(1)} s: ${warm.requests} requests, ${(warm.requests / warm.seconds).toFixed(0)} req/s (${client.errorCount} errors so far)`);
    const before = await quiet("baseline");
    const cpuStart = cpuSnapshot(host);
    const measured = await runPhase("measured", o.duration);
    const cpu = cpuBetween(cpuStart, cpuSnapshot(host));
    const after = await quiet("end");
    client.startPhase("idle");
    await sleep(o.idle * 1000);
    const idle = sampler.take("idle");

    // The sweep: revoked stays revoked, live stays live.
    const sweep = client.startPhase("sweep");
    for (const grant of client.revoked) {
      for (const { token } of grant.access) await client.apiRevoked(token);
      await client.refreshRevoked(grant);
    }
    let liveChecked = 0;
    for (const slot of slots) {
      for (const grant of new Set(slot.grants)) {
        await client.api(grant, grant.access.at(-1).token, "api-final");
        liveChecked++;
      }
    }
    sweep.ended = performance.now();
    sampler.stop();
    const audit = (await host.stats(false))?.audit;

    const result = summarize({ kind, o, host, client, warm, measured, before, after, idle, sampler, liveChecked, audit, cpu });
    report(result, log);
    return result;
  } finally {
    client?.agent.destroy();
    await host?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function summarize({ kind, o, host, client, warm, measured, before, after, idle, sampler, liveChecked, audit, cpu }) {
  const primary = host.processes()[0].role;
  const rssOf = (sample, role = primary) => sample.processes[role]?.rss ?? NaN;
  const measuredSamples = sampler.samples.filter((s) => s.phase === "measured" || s.phase === "baseline" || s.phase === "end");
  const values = measuredSamples.map((s) => rssOf(s)).filter(Number.isFinite);
  const baseline = rssOf(before.sample);
  const end = rssOf(after.sample);
  const growth = (end - baseline) / baseline;
  const memory = {
    role: primary,
    baselineKb: baseline,
    endKb: end,
    idleKb: rssOf(idle),
    minKb: Math.min(...values),
    maxKb: Math.max(...values),
    growth,
    slopeMbPerMin: slope(measuredSamples.map((s) => [s.t / 60, rssOf(s) / 1024])),
    others: host.processes().slice(1).map(({ role }) => ({ role, baselineKb: rssOf(before.sample, role), endKb: rssOf(after.sample, role) })),
    heap: before.stats && { baselineUsed: before.stats.memory.heapUsed, endUsed: after.stats.memory.heapUsed, wasmBefore: before.stats.wasm, wasmAfter: after.stats.wasm, externalBefore: before.stats.memory.external, externalAfter: after.stats.memory.external },
  };
  const records = { before: before.records, after: after.records, perSecond: (after.records.total - before.records.total) / measured.seconds };
  const summary = measured.summary();
  const memoryFlag = growth > o.threshold / 100;
  return {
    host: kind,
    url: host.url,
    options: { duration: o.duration, concurrency: o.concurrency, warmup: o.warmup, writeRate: o.writeRate, users: o.users, apps: o.apps, grants: o.grants, threshold: o.threshold, idle: o.idle },
    requests: measured.requests,
    seconds: measured.seconds,
    throughput: measured.requests / measured.seconds,
    warmup: { requests: warm.requests, seconds: warm.seconds },
    latency: summary,
    ops: client.ops,
    revokedGrants: client.revoked.length,
    liveGrantsChecked: liveChecked,
    errors: client.errorCount,
    errorsByCategory: client.errorsByCategory,
    errorSamples: client.errorSamples,
    records,
    memory,
    samples: sampler.samples,
    cpu,
    audit,
    hostOutputTail: host.stderr().slice(-4000),
    memoryFlag,
    ok: client.errorCount === 0,
  };
}

function report(r, log) {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : "-");
  log(`measured ${r.seconds.toFixed(1)} s at concurrency ${r.options.concurrency}: ${r.requests} requests, ${r.throughput.toFixed(0)} req/s`);
  log(`  ${"kind".padEnd(16)}${"count".padStart(9)}${"p50 ms".padStart(9)}${"p90 ms".padStart(9)}${"p99 ms".padStart(9)}${"max ms".padStart(9)}`);
  for (const [kind, s] of Object.entries(r.latency)) {
    log(`  ${kind.padEnd(16)}${String(s.count).padStart(9)}${f(s.p50).padStart(9)}${f(s.p90).padStart(9)}${f(s.p99).padStart(9)}${f(s.max).padStart(9)}`);
  }
  const c = r.cpu;
  log(
    `CPU while measured (core-seconds of ${(c.cores * r.seconds).toFixed(0)} available on ${c.cores} cores): ${Object.entries(c.processes).map(([role, v]) => `${role} ${v.toFixed(1)}`).join(", ")}, ` +
      `this runner ${c.runner.toFixed(1)}, everything else on the machine ${c.others.toFixed(1)}`,
  );
  log(`  operations picked (warm-up and measured): ${Object.entries(r.ops).map(([k, v]) => `${k} ${v}`).join(", ")}; grants revoked ${r.revokedGrants} (all re-checked refused at the end), live grants re-checked ${r.liveGrantsChecked}`);
  const kinds = (b) => Object.entries(b.byKind).map(([k, v]) => `${k} ${v}`).join(", ");
  log(`records${r.records.after.objects !== undefined ? ` (in ${r.records.after.objects} objects)` : ""}: ${r.records.before.total} after warm-up (${kinds(r.records.before)}), ${r.records.after.total} at the end (${kinds(r.records.after)}): ${r.records.perSecond.toFixed(1)} new records/s; store files ${mb(r.records.before.bytes / 1024)} → ${mb(r.records.after.bytes / 1024)} MB${r.audit !== undefined ? `; audit events ${r.audit}` : ""}`);
  const m = r.memory;
  log(`memory, ${m.role}: RSS ${mb(m.baselineKb)} MB after warm-up → ${mb(m.endKb)} MB at the end (${pct(m.growth)}), ${mb(m.idleKb)} MB after ${r.options.idle} s idle; min ${mb(m.minKb)}, max ${mb(m.maxKb)} MB while measured; trend ${m.slopeMbPerMin >= 0 ? "+" : ""}${m.slopeMbPerMin.toFixed(2)} MB/min${r.memoryFlag ? `  <-- FLAG: growth above ${r.options.threshold}%` : ""}`);
  if (r.memoryFlag && r.host === "worker") log("  (wrangler dev's own workerds grow under Durable Object traffic: `--host miniflare` runs the same Worker on workerd alone)");
  for (const other of m.others) log(`memory, ${other.role}: RSS ${mb(other.baselineKb)} → ${mb(other.endKb)} MB (${pct((other.endKb - other.baselineKb) / other.baselineKb)})`);
  if (m.heap) {
    log(`memory, node host after a full GC: V8 heap used ${mb(m.heap.baselineUsed / 1024)} → ${mb(m.heap.endUsed / 1024)} MB, external ${mb(m.heap.externalBefore / 1024)} → ${mb(m.heap.externalAfter / 1024)} MB, core's wasm memory ${mb(m.heap.wasmBefore / 1024)} → ${mb(m.heap.wasmAfter / 1024)} MB`);
  }
  const roles = Object.keys(r.samples[0]?.processes ?? {});
  log(`RSS samples (s phase: ${roles.map((role) => `${role} rss/anon MB`).join(" | ")}):`);
  const lines = r.samples.map((s) => `${s.t.toFixed(0).padStart(4)}s ${s.phase.padEnd(8)} ${roles.map((role) => (s.processes[role] ? `${mb(s.processes[role].rss)}/${mb(s.processes[role].anon)}` : "gone")).join(" | ")}`);
  const perLine = roles.length > 1 ? 2 : 4;
  for (let i = 0; i < lines.length; i += perLine) log(`  ${lines.slice(i, i + perLine).join("   ")}`);
  log(`errors: ${r.errors}${r.errors ? ` (${Object.entries(r.errorsByCategory).map(([k, v]) => `${k} ${v}`).join(", ")})` : ""}`);
  for (const e of r.errorSamples) log(`  ${JSON.stringify(e)}`);
  if (r.errors && r.hostOutputTail) log(`host output (tail):\n${r.hostOutputTail}`);
}

/** The summary line of one host. */
export const lineOf = (r) =>
  r.error
    ? `${r.host} FAILED (${r.error.split("\n")[0]})`
    : `${r.host} ${r.throughput.toFixed(0)} req/s p99 ${r.latency.all.p99.toFixed(1)} ms ${r.errors} errors rss ${r.memory.growth >= 0 ? "+" : ""}${Math.round(r.memory.growth * 100)}%${r.memoryFlag ? " (FLAG)" : ""}`;

/** Both hosts (or one): `{ results, line, code }`; `code` is the exit status (see the header). */
export async function runLoad({ hosts = ["node", "worker"], log = console.log, ...options } = {}) {
  const results = [];
  for (const kind of hosts) {
    try {
      results.push(await runHost(kind, options, log));
    } catch (error) {
      log(`${kind}: the run failed: ${error.stack}`);
      results.push({ host: kind, error: error.stack, ok: false, errors: NaN });
    }
  }
  const line = `LOAD: ${results.map(lineOf).join("; ")}`;
  const code = results.some((r) => !r.ok) ? 1 : results.some((r) => r.memoryFlag) ? 3 : 0;
  return { results, line, code };
}

function parseArgs(argv) {
  const names = { "--host": "host", "--duration": "duration", "--concurrency": "concurrency", "--warmup": "warmup", "--write-rate": "writeRate", "--users": "users", "--apps": "apps", "--grants": "grants", "--sample": "sample", "--threshold": "threshold", "--idle": "idle", "--json": "json" };
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s);
    const name = names[flag];
    const value = inline ?? argv[++i];
    if (!name || value === undefined) throw new Error(`unknown or incomplete option ${argv[i - (inline === undefined ? 1 : 0)] ?? flag}`);
    out[name] = name === "host" || name === "json" ? value : Number(value);
    if (typeof out[name] === "number" && !(out[name] > 0)) throw new Error(`${flag} takes a positive number`);
  }
  const host = out.host ?? "both";
  if (!["node", "worker", "both", "miniflare"].includes(host)) throw new Error("--host is node, worker, both (or miniflare, a diagnostic)");
  delete out.host;
  for (const k of ["concurrency", "users", "apps", "grants"]) if (out[k] !== undefined) out[k] = Math.round(out[k]);
  return { hosts: host === "both" ? ["node", "worker"] : [host], ...out };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error(`${error.message}\nusage: node tests/load/load.mjs [--host node|worker|both] [--duration SECONDS] [--concurrency N] [--warmup SECONDS] [--write-rate N] [--users N] [--apps N] [--grants N] [--sample SECONDS] [--idle SECONDS] [--threshold PERCENT] [--json FILE]`);
    process.exit(2);
  }
  const { json: jsonPath, ...options } = args;
  const { results, line, code } = await runLoad(options);
  if (jsonPath) writeFileSync(jsonPath, JSON.stringify(results, null, 2));
  console.log(line);
  process.exit(code);
}
