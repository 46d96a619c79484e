#!/usr/bin/env node
// A soak of the stores: users keep arriving, each signs in to apps, calls the API, refreshes,
// now and then revokes a grant and signs in again, and finally unlinks the apps and leaves.
// Every store runs the package's server (the core and its driver) with a purge job like the
// Node host's, on the system clock, with short lifetimes so that a few minutes cover many
// lifetimes. Sampled as it runs: the record count (by kind) and the store's size on disk. With
// users arriving and leaving at a steady rate, both must level off: what the store holds is
// what the live users hold, plus what ended within the last token lifetime or two.
//
//   node tests/soak/soak.mjs [--minutes 10] [--stores sqlite,postgres] [--rate 10] [--life 40]
//        [--ttl 60] [--code-ttl 30] [--purge-every 10] [--sample 30] [--json FILE]
//
// Exit status 1 if any request failed or a token outlived its revocation or unlink.
import { mkdtempSync, rmSync, statSync, existsSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createAuthServer } from "../../pkg/src/node.js";
import { CONF_APP, CONF_REDIRECT, CONF_SECRET, GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, VERIFIER, config, form, pkceQuery } from "../../pkg/test/fixtures.mjs";

const requirePkg = createRequire(new URL("../../pkg/package.json", import.meta.url));

export const DEFAULTS = { minutes: 10, stores: ["sqlite", "postgres"], rate: 10, life: 40, ttl: 60, codeTtl: 30, purgeEvery: 10, sample: 30 };

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const now = () => Math.floor(Date.now() / 1000);

/** Counts by kind from rows of `{ kind, n }`. */
const tally = (rows) => {
  const byKind = Object.fromEntries(rows.map((r) => [r.kind, Number(r.n)]));
  return { total: Object.values(byKind).reduce((a, b) => a + b, 0), byKind };
};
const KIND_SQL = (table) =>
  `SELECT substr(key, instr(key, '/') + 1, instr(key, ':') - instr(key, '/') - 1) AS kind, count(*) AS n FROM ${table} GROUP BY kind`;

/** Opens store `name` in `dir`; resolves `{ storage, stats(), close() }`. */
async function openStore(name, dir) {
  if (name === "sqlite") {
    const { openSqliteStorage } = await import("../../pkg/src/adapters/sqlite.js");
    const path = join(dir, "soak.sqlite");
    const storage = await openSqliteStorage(path);
    const Database = requirePkg("better-sqlite3");
    const reader = new Database(path, { readonly: true });
    const files = () => ["", "-wal", "-shm"].reduce((sum, s) => sum + (existsSync(path + s) ? statSync(path + s).size : 0), 0);
    return {
      storage,
      stats: () => ({ ...tally(reader.prepare(KIND_SQL("edgegrant_store")).all()), bytes: files() }),
      close: async () => (reader.close(), storage.close()),
    };
  }
  if (name === "postgres") {
    const { startPostgres } = await import("../postgres/cluster.mjs");
    const { openPostgresStorage } = await import("../../pkg/src/adapters/postgres.js");
    const cluster = await startPostgres();
    const storage = await openPostgresStorage(cluster.url);
    const pg = requirePkg("pg");
    const reader = new pg.Client(cluster.url);
    await reader.connect();
    const kindSql = "SELECT split_part(split_part(key, '/', 2), ':', 1) AS kind, count(*) AS n FROM edgegrant_store GROUP BY kind";
    return {
      storage,
      stats: async () => ({ ...tally((await reader.query(kindSql)).rows), bytes: await storage.diskBytes() }),
      close: async () => {
        await reader.end();
        await storage.close();
        await cluster.stop();
      },
    };
  }
  throw new Error(`unknown store ${name} (sqlite, postgres)`);
}

/** One store's soak; `log(line)` gets progress lines. Resolves the figures. */
export async function soakStore(name, options, log = console.log) {
  const o = { ...DEFAULTS, ...options };
  const dir = mkdtempSync(join(tmpdir(), `edgegrant-soak-${name}-`));
  const store = await openStore(name, dir);
  const doc = { ...config(), policy: { code_ttl: o.codeTtl, access_token_ttl: o.ttl } };
  const server = createAuthServer({ config: doc, storage: store.storage, onAudit: () => {} });
  const counts = { users: 0, left: 0, requests: 0, errors: 0, alive: 0, revoked: 0, unlinked: 0, purged: 0 };
  const errors = [];
  const fail = (what) => {
    counts.errors++;
    if (errors.length < 10) errors.push(what);
  };
  const call = async (input) => {
    counts.requests++;
    const result = await server.handle(input);
    if (result.status >= 500) fail(`${input.path}: ${result.status}`);
    return result;
  };

  const basic = `Basic ${Buffer.from(`${CONF_APP}:${CONF_SECRET}`).toString("base64")}`;
  async function signIn(user, app) {
    const query =
      app === PKCE_APP
        ? pkceQuery()
        : new URLSearchParams({ client_id: CONF_APP, response_type: "code", redirect_uri: CONF_REDIRECT, state: "s" }).toString();
    const body = new TextEncoder().encode(new URLSearchParams({ query, decision: "allow" }).toString());
    const consent = await call({ method: "POST", path: "/oauth2/authorize", headers: [["content-type", "application/x-www-form-urlencoded"], ["sec-fetch-site", "same-origin"]], body, user });
    const location = consent.headers?.find(([n]) => n.toLowerCase() === "location")?.[1];
    const code = location && new URL(location).searchParams.get("code");
    if (!code) return fail(`consent: ${consent.status} ${consent.body}`), null;
    const exchange =
      app === PKCE_APP
        ? await call({ path: "/oauth2/token", ...form({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }) })
        : await call({ path: "/oauth2/token", ...form({ grant_type: "authorization_code", code, redirect_uri: CONF_REDIRECT }), headers: [["content-type", "application/x-www-form-urlencoded"], ["authorization", basic]] });
    if (exchange.outcome !== "tokens") return fail(`exchange: ${exchange.status} ${exchange.body}`), null;
    const body2 = JSON.parse(exchange.body);
    return { access: body2.access_token, refresh: body2.refresh_token };
  }
  const api = (token) => call({ method: "POST", path: GET_ACCOUNT, headers: [["authorization", `Bearer ${token}`]] });
  const refresh = async (grant) => {
    const reply = await call({ path: "/oauth2/token", ...form({ grant_type: "refresh_token", refresh_token: grant.refresh, client_id: PKCE_APP }) });
    if (reply.outcome !== "tokens") return fail(`refresh: ${reply.status} ${reply.body}`);
    grant.access = JSON.parse(reply.body).access_token;
  };
  /** Every token in `tokens` must be refused now. */
  const mustBeDead = async (tokens, refreshToken) => {
    for (const token of tokens) if ((await api(token)).kind === "serve") counts.alive++;
    if (refreshToken) {
      const reply = await call({ path: "/oauth2/token", ...form({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: PKCE_APP }) });
      if (reply.outcome === "tokens") counts.alive++;
    }
  };

  async function life(n) {
    const user = { account_id: `dbid:soak${String(n).padStart(31, "0")}`, uid: String(10_000 + n) };
    counts.users++;
    let grant = await signIn(user, PKCE_APP);
    if (!grant) return;
    const ended = [];
    await api(grant.access);
    await refresh(grant);
    if (Math.random() < 0.5) {
      // Revoked on one device, signed in again.
      const old = { ...grant };
      await call({ method: "POST", path: "/2/auth/token/revoke", headers: [["authorization", `Bearer ${grant.access}`]] });
      counts.revoked++;
      await mustBeDead([old.access], old.refresh);
      grant = await signIn(user, PKCE_APP);
      if (!grant) return;
    }
    const server = Math.random() < 0.5 ? await signIn(user, CONF_APP) : null;
    if (server) await api(server.access);
    const stay = (o.life * (0.5 + Math.random())) * 1000;
    const until = Date.now() + stay;
    while (Date.now() < until) {
      await sleep(Math.min(o.ttl * 500, until - Date.now()));
      await refresh(grant);
      await api(grant.access);
    }
    ended.push(grant.access);
    await server_unlink(PKCE_APP, user);
    if (server) {
      ended.push(server.access);
      await server_unlink(CONF_APP, user);
    }
    await mustBeDead(ended, grant.refresh);
    counts.left++;
  }
  async function server_unlink(app, user) {
    counts.requests++;
    const result = await server.unlink(app, user.account_id);
    if (result.outcome !== "unlinked") fail(`unlink: ${result.status} ${result.body}`);
    counts.unlinked++;
  }

  // The purge job, as the host runs it.
  const purging = setInterval(async () => {
    try {
      counts.purged += await store.storage.purge(now());
    } catch (error) {
      fail(`purge: ${error.message}`);
    }
  }, o.purgeEvery * 1000);

  const samples = [];
  const started = Date.now();
  const end = started + o.minutes * 60_000;
  const sample = async () => {
    const s = await store.stats();
    const point = { t: Math.round((Date.now() - started) / 1000), records: s.total, byKind: s.byKind, bytes: s.bytes, users: counts.users, left: counts.left, live: counts.users - counts.left };
    samples.push(point);
    const kinds = Object.entries(s.byKind).sort().map(([k, v]) => `${k} ${v}`).join(", ");
    log(`soak ${name} ${String(point.t).padStart(4)} s: ${s.total} records (${kinds}); ${(s.bytes / 1048576).toFixed(2)} MB; users ${counts.users} in, ${counts.left} left, ${point.live} live; ${counts.purged} purged`);
  };
  const sampler = setInterval(() => void sample().catch((e) => fail(`sample: ${e.message}`)), o.sample * 1000);

  const lives = [];
  let n = 0;
  while (Date.now() < end) {
    lives.push(life(n++).catch((error) => fail(`life: ${error.stack}`)));
    await sleep(1000 / o.rate);
  }
  clearInterval(sampler);
  await sample();
  // Users still in their life finish it (they unlink); then one more purge past every purge
  // time they left behind.
  await Promise.all(lives);
  clearInterval(purging);
  await store.close();
  rmSync(dir, { recursive: true, force: true });

  const third = Math.max(1, Math.floor(samples.length / 3));
  const mean = (list, f) => list.reduce((s, p) => s + f(p), 0) / list.length;
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(-third);
  const growth = (f) => (middle.length ? mean(last, f) / mean(middle, f) - 1 : NaN);
  return { name, options: o, counts, errors, samples, recordGrowth: growth((p) => p.records), byteGrowth: growth((p) => p.bytes), peak: Math.max(...samples.map((p) => p.records)) };
}

/** The summary line of one store's soak. */
export const lineOf = (r) =>
  `SOAK ${r.name}: ${r.options.minutes} min, ${r.counts.users} users (${r.counts.revoked} revocations, ${r.counts.unlinked} unlinks), ${r.counts.requests} requests, ` +
  `${r.counts.errors} errors, ${r.counts.alive} tokens alive after revoke/unlink; records peak ${r.peak}, last third vs middle third ${(r.recordGrowth * 100).toFixed(1)}%; ` +
  `store size ${(r.samples.at(-1).bytes / 1048576).toFixed(2)} MB, last third vs middle third ${(r.byteGrowth * 100).toFixed(1)}%; ${r.counts.purged} records purged`;

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const options = {};
  const names = { "--minutes": "minutes", "--rate": "rate", "--life": "life", "--ttl": "ttl", "--code-ttl": "codeTtl", "--purge-every": "purgeEvery", "--sample": "sample" };
  let json;
  for (let i = 0; i < args.length; i += 2) {
    if (args[i] === "--stores") options.stores = args[i + 1].split(",");
    else if (args[i] === "--json") json = args[i + 1];
    else if (names[args[i]]) options[names[args[i]]] = Number(args[i + 1]);
    else {
      console.error(`unknown option ${args[i]}\nusage: node tests/soak/soak.mjs [--minutes 10] [--stores sqlite,postgres] [--rate 10] [--life 40] [--ttl 60] [--code-ttl 30] [--purge-every 10] [--sample 30] [--json FILE]`);
      process.exit(2);
    }
  }
  const stores = options.stores ?? DEFAULTS.stores;
  const results = await Promise.all(stores.map((name) => soakStore(name, options)));
  for (const r of results) {
    console.log(lineOf(r));
    for (const e of r.errors) console.log(`  ${e}`);
  }
  if (json) writeFileSync(json, JSON.stringify(results, null, 2));
  process.exit(results.some((r) => r.counts.errors > 0 || r.counts.alive > 0) ? 1 : 0);
}
