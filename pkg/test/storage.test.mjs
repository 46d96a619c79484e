// One suite every storage adapter must pass: conditional writes, all-or-nothing transactions,
// versions, purging, and the conflict case — two racing code exchanges, exactly one winner.
// Records are the core's opaque bytes: the adapter-level checks store arbitrary byte arrays.
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createCore, runRequest } from "../src/node.js";
import { memoryStorage } from "../src/adapters/memory.js";
import { sqliteStorage } from "../src/adapters/sqlite.js";
import { openPostgresStorage } from "../src/adapters/postgres.js";
import { startPostgres } from "../../tests/postgres/cluster.mjs";
import { Miniflare } from "miniflare";
import { remoteStorage } from "./workerd-storage.js";
import { ALICE, GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, VERIFIER, config, counterEntropy, form, pkceQuery } from "./fixtures.mjs";

const dir = mkdtempSync(join(tmpdir(), "edgegrant-storage-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
let files = 0;

// The Durable Object and KV adapters run where they will in production: inside workerd
// (Miniflare), with its Durable Object and KV implementations.
const mf = new Miniflare({
  modules: true,
  scriptPath: fileURLToPath(new URL("./workerd-storage.js", import.meta.url)),
  modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
  durableObjects: { RECORDS: "Records", ALARMED: "AlarmedRecords" },
  kvNamespaces: ["TOKENS"],
});
after(() => mf.dispose());

// A real PostgreSQL server, a throwaway cluster (tests/postgres/cluster.mjs); each test its own table.
const postgres = await startPostgres();
const pools = [];
after(async () => {
  await Promise.all(pools.map((storage) => storage.close()));
  await postgres.stop();
});
async function postgresHost(table) {
  const storage = await openPostgresStorage(postgres.url, { table, max: 4 });
  pools.push(storage);
  return storage;
}

/** A Node-side handle on an adapter inside workerd; `store` "kv" selects the KV composition. */
function remote(db, store = "") {
  const storage = remoteStorage((body) => mf.dispatchFetch(`http://do.test/?db=${db}&store=${store}`, { method: "POST", body }));
  return { db, ...storage };
}

/** A handle on an object whose alarm purges (the real clock). */
const alarmed = (db) => remoteStorage((body) => mf.dispatchFetch(`http://do.test/?db=${db}&alarms=1`, { method: "POST", body }));

/** What one database holds in KV: `[{ name, expiration }]`. */
const kvKeys = async (db) => (await mf.dispatchFetch(`http://do.test/?db=${db}&op=kv-keys`)).json();

/** Each adapter, twice over the same storage where the adapter can share it (two hosts). */
const adapters = {
  memory: () => {
    const storage = memoryStorage();
    return [storage, storage];
  },
  "durable-object": () => {
    const db = `db${++files}`;
    return [remote(db), remote(db)];
  },
  "kv + durable-object": () => {
    const db = `db${++files}`;
    return [remote(db, "kv"), remote(db, "kv")];
  },
  sqlite: () => {
    const file = join(dir, `db${++files}.sqlite`);
    return [sqliteStorage(new Database(file)), sqliteStorage(new Database(file))];
  },
  // Two pools on one table: two host processes' worth of connections.
  postgres: async () => {
    const table = `db${++files}`;
    return [await postgresHost(table), await postgresHost(table)];
  },
};

/** Arbitrary record bytes: the adapters never look inside. */
const bytes = (...values) => new Uint8Array(values);
/** One put; `expect` null: the key must be absent. */
const put = (key, expect, record, purgeAfter = null) => ({ key, expect, bytes: record, purgeAfter });
/** A read's entry as plain values (sqlite answers a Buffer, which is a Uint8Array too). */
function stored(entry) {
  if (entry === undefined) return undefined;
  assert.ok(entry.bytes instanceof Uint8Array, "a record is read back as a Uint8Array");
  return { version: entry.version, bytes: [...entry.bytes] };
}
const readOne = async (storage, key) => stored((await storage.read([key])).get(key));

for (const [name, open] of Object.entries(adapters)) {
  test(`${name}: absent keys are left out of a read`, async () => {
    const [storage] = await open();
    assert.equal(await storage.apply({ puts: [put("p/link:a:b", null, bytes(1))], audit: [] }), true);
    const found = await storage.read(["p/link:a:b", "p/code:x", "p/grant:g"]);
    assert.deepEqual([...found.keys()], ["p/link:a:b"]);
  });

  test(`${name}: puts create at version 1 and bump versions, bytes kept exactly`, async () => {
    const [storage] = await open();
    const first = bytes(1, 2, 3, 0, 255);
    assert.equal(await storage.apply({ puts: [put("p/link:a:b", null, first)], audit: [] }), true);
    assert.deepEqual(await readOne(storage, "p/link:a:b"), { version: 1, bytes: [1, 2, 3, 0, 255] });
    first.fill(9); // the caller's array is not the stored record
    assert.deepEqual(await readOne(storage, "p/link:a:b"), { version: 1, bytes: [1, 2, 3, 0, 255] });
    assert.equal(await storage.apply({ puts: [put("p/link:a:b", 1, bytes(4, 5))], audit: [] }), true);
    assert.deepEqual(await readOne(storage, "p/link:a:b"), { version: 2, bytes: [4, 5] });
    const large = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7) & 255);
    assert.equal(await storage.apply({ puts: [put("p/link:a:b", 2, large), put("p/grant:g", null, bytes())], audit: [] }), true);
    assert.deepEqual(await readOne(storage, "p/link:a:b"), { version: 3, bytes: [...large] });
    assert.deepEqual(await readOne(storage, "p/grant:g"), { version: 1, bytes: [] }, "an empty record is still a record");
  });

  test(`${name}: a failed expectation applies nothing at all`, async () => {
    const [storage] = await open();
    await storage.apply({ puts: [put("p/link:a:b", null, bytes(0))], audit: [] });
    for (const bad of [null, 2, 0]) {
      const applied = await storage.apply({ puts: [put("p/grant:g", null, bytes(9)), put("p/link:a:b", bad, bytes(5))], audit: [] });
      assert.equal(applied, false, `expect ${bad}`);
      assert.equal((await storage.read(["p/grant:g"])).size, 0, "the first put of a failed transaction is not applied");
      assert.deepEqual(await readOne(storage, "p/link:a:b"), { version: 1, bytes: [0] });
    }
    const missing = await storage.apply({ puts: [put("p/link:a:b", 1, bytes(6)), put("p/code:c", 1, bytes(6))], audit: [] });
    assert.equal(missing, false, "a version expected of an absent key fails");
    assert.deepEqual(await readOne(storage, "p/link:a:b"), { version: 1, bytes: [0] }, "and the put that held is not applied");
    assert.equal((await storage.read(["p/code:c"])).size, 0);
  });

  test(`${name}: purge removes what is due and keeps the rest`, async () => {
    const [storage] = await open();
    await storage.apply({
      puts: [put("p/code:a", null, bytes(1), 100), put("p/code:b", null, bytes(2), 101), put("p/link:a:b", null, bytes(3))],
      audit: [],
    });
    assert.equal(await storage.purge(100), 1);
    const left = await storage.read(["p/code:a", "p/code:b", "p/link:a:b"]);
    assert.deepEqual([...left.keys()].sort(), ["p/code:b", "p/link:a:b"]);
    assert.deepEqual(stored(left.get("p/code:b")), { version: 1, bytes: [2] });
    assert.equal(await storage.purge(99), 0);
    assert.equal(await storage.purge(1_000_000), 1, "a record without a purge time is kept");
    assert.deepEqual([...(await storage.read(["p/code:a", "p/code:b", "p/link:a:b"])).keys()], ["p/link:a:b"]);
  });

  test(`${name}: purge takes many due records at once, in the stores' batches`, async () => {
    const [storage] = await open();
    const puts = Array.from({ length: 300 }, (_, i) => put(`p${i % 3}/code:${i}`, null, bytes(i & 255), 500 + (i % 2)));
    for (let i = 0; i < puts.length; i += 100) assert.equal(await storage.apply({ puts: puts.slice(i, i + 100), audit: [] }), true);
    assert.equal(await storage.purge(500), 150);
    assert.equal(await storage.purge(501), 150);
    assert.equal((await storage.read(puts.slice(0, 50).map((p) => p.key))).size, 0);
  });

  test(`${name}: two hosts racing on one code — exactly one gets tokens`, async () => {
    let conflicts = 0;
    // Two hosts are two processes or isolates, whose steps interleave; in one thread a store
    // that answers at once would let each request run to its end first, so each read yields.
    const counting = (storage) => ({
      read: async (keys) => storage.read(keys),
      apply: async (tx) => (await storage.apply(tx)) || (conflicts++, false),
    });
    for (let trial = 0; trial < 20; trial++) {
      const [hostA, hostB] = (await open()).map(counting);
      const flow = pkceFlow();
      const exchange = await flow.exchange(hostA);
      const results = await Promise.all([flow.run(hostA, exchange), flow.run(hostB, exchange)]);
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 400], `trial ${trial}`);
      const winner = results.find((r) => r.status === 200);
      assert.equal(winner.outcome, "tokens");
      const loser = results.find((r) => r.status === 400);
      assert.equal(JSON.parse(loser.body).error, "invalid_grant");
      // The loser reads the code again after its failed write and finds it redeemed: a replay,
      // which revokes what the code produced.
      assert.equal(loser.outcome, "refused");
      assert.equal(loser.refusal, "code_reused", `trial ${trial}`);
      const refused = await flow.run(hostB, flow.apiCall(JSON.parse(winner.body).access_token));
      assert.equal(refused.status, 401, "the replayed code revoked the winner's tokens");
    }
    assert.ok(conflicts > 0, "the racing commits must have met a failed conditional write");
  });

  test(`${name}: tokens issued by one host work on the other until revoked there`, async () => {
    const [hostA, hostB] = await open();
    const flow = pkceFlow();
    const issued = await flow.run(hostA, await flow.exchange(hostA));
    assert.equal(issued.status, 200);
    const { access_token, refresh_token } = JSON.parse(issued.body);
    const served = await flow.run(hostB, flow.apiCall(access_token));
    assert.equal(served.kind, "serve");
    assert.equal(served.principal.account_id, ALICE.account_id);
    assert.equal(served.principal.app, PKCE_APP);
    const refreshed = await flow.run(hostB, tokenRequest({ grant_type: "refresh_token", refresh_token, client_id: PKCE_APP }));
    assert.equal(refreshed.outcome, "tokens");
    const second = JSON.parse(refreshed.body).access_token;
    assert.equal((await flow.run(hostA, flow.apiCall(second))).kind, "serve");
    const revoked = await flow.run(hostA, { method: "POST", path: "/2/auth/token/revoke", headers: ["authorization", `Bearer ${access_token}`] });
    assert.equal(revoked.status, 200);
    assert.equal(revoked.outcome, "revoked");
    for (const token of [access_token, second]) {
      const refused = await flow.run(hostB, flow.apiCall(token));
      assert.equal(refused.kind, "reply");
      assert.equal(refused.status, 401, "revocation on one host ends every token of the grant on the other");
    }
  });
}

const tokenRequest = (pairs) => ({ path: "/oauth2/token", ...form(pairs) });

/** A PKCE offline flow for ALICE on shared fixtures, at a fixed time, with deterministic entropy. */
function pkceFlow(now = 1_700_000_000) {
  const core = createCore(config());
  const entropy = counterEntropy();
  const run = (host, request) => runRequest(core.request(request, now, entropy()), host);
  return {
    run,
    /** Consents on `host` and returns the token request that redeems the code. */
    async exchange(host) {
      const consent = await run(host, {
        method: "POST",
        path: "/oauth2/authorize",
        headers: ["content-type", "application/x-www-form-urlencoded", "sec-fetch-site", "same-origin"],
        body: new TextEncoder().encode(new URLSearchParams({ query: pkceQuery(), decision: "allow" }).toString()),
        user: ALICE,
      });
      assert.equal(consent.status, 302, consent.body);
      assert.equal(consent.outcome, "redirect");
      const location = consent.headers.find(([name]) => name.toLowerCase() === "location")[1];
      const code = new URL(location).searchParams.get("code");
      return tokenRequest({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT });
    },
    /** A call of the declared API endpoint with `token`. */
    apiCall: (token) => ({ method: "POST", path: GET_ACCOUNT, headers: [["authorization", `Bearer ${token}`]] }),
  };
}

// What KV may hold, checked where it runs: token records only, written once, rolled back with a
// failed transaction, expiring by themselves.
test("kv + durable-object: token records live in KV, codes, grants and links do not", async () => {
  const host = remote(`db${++files}`, "kv");
  const now = Math.floor(Date.now() / 1000); // KV expirations are real times
  const flow = pkceFlow(now);
  const issued = await flow.run(host, await flow.exchange(host));
  assert.equal(issued.status, 200);
  const held = await kvKeys(host.db);
  const kind = (k) => k.name.split("/")[1].split(":")[0];
  assert.deepEqual(held.map(kind).sort(), ["access", "refresh"]);
  const access = held.find((k) => kind(k) === "access");
  assert.equal(access.expiration, now + 2 * 14_400, "an access token expires from KV at its purgeAfter, one lifetime past its expiry");
  assert.equal(held.find((k) => kind(k) === "refresh").expiration, null, "live refresh tokens do not expire");
  // And the records KV holds serve: the token checks out through the composition.
  const access_token = JSON.parse(issued.body).access_token;
  assert.equal((await flow.run(host, flow.apiCall(access_token))).kind, "serve");
  // A revocation ends the grant in the strong store and gives its refresh token an expiration.
  const revoked = await flow.run(host, { method: "POST", path: "/2/auth/token/revoke", headers: [["authorization", `Bearer ${access_token}`]] });
  assert.equal(revoked.status, 200);
  const after = await kvKeys(host.db);
  assert.equal(after.find((k) => kind(k) === "refresh").expiration, now + 14_400, "a revoked grant's refresh token expires from KV with the grant");
  assert.equal((await flow.run(host, flow.apiCall(access_token))).status, 401);
});

test("kv + durable-object: a rotation creates its tokens and expires the superseded one, after the strong transaction decided", async () => {
  const host = remote(`db${++files}`, "kv");
  const later = Math.floor(Date.now() / 1000) + 3600;
  await host.apply({ puts: [put("p/refresh:old", null, bytes(1)), put("p/grant:g", null, bytes(1))], audit: [] });
  // Lost: the grant moved on; the new records are taken back and the old one keeps no expiration.
  const lost = [put("p/access:a", null, bytes(2)), put("p/refresh:new", null, bytes(2)), put("p/refresh:old", 1, bytes(1), later), put("p/grant:g", 7, bytes(2))];
  assert.equal(await host.apply({ puts: lost, audit: [] }), false);
  assert.deepEqual(await kvKeys(host.db), [{ name: "p/refresh:old", expiration: null }]);
  // Applied: the new records are there, and the superseded token expires at its purge time.
  const won = [put("p/access:a", null, bytes(2)), put("p/refresh:new", null, bytes(2)), put("p/refresh:old", 1, bytes(1), later), put("p/grant:g", 1, bytes(2))];
  assert.equal(await host.apply({ puts: won, audit: [] }), true);
  const held = Object.fromEntries((await kvKeys(host.db)).map((k) => [k.name, k.expiration]));
  assert.deepEqual(held, { "p/access:a": null, "p/refresh:new": null, "p/refresh:old": later });
  assert.deepEqual(await readOne(host, "p/grant:g"), { version: 2, bytes: [2] });
});

test("kv + durable-object: a token record is read back from KV as its bytes, at version 1", async () => {
  const host = remote(`db${++files}`, "kv");
  assert.equal(await host.apply({ puts: [put("p/access:t", null, bytes(7, 0, 200)), put("p/link:a:b", null, bytes(1))], audit: [] }), true);
  const found = await host.read(["p/access:t", "p/link:a:b", "p/refresh:none"]);
  assert.deepEqual(stored(found.get("p/access:t")), { version: 1, bytes: [7, 0, 200] });
  assert.deepEqual(stored(found.get("p/link:a:b")), { version: 1, bytes: [1] });
  assert.equal(found.has("p/refresh:none"), false);
  assert.deepEqual((await kvKeys(host.db)).map((k) => k.name), ["p/access:t"]);
});

test("kv + durable-object: a failed strong transaction takes its token records back out of KV", async () => {
  const host = remote(`db${++files}`, "kv");
  await host.apply({ puts: [put("p/link:a:b", null, bytes(0))], audit: [] });
  const applied = await host.apply({ puts: [put("p/access:t", null, bytes(1)), put("p/refresh:r", null, bytes(1)), put("p/link:a:b", 7, bytes(1))], audit: [] });
  assert.equal(applied, false);
  assert.deepEqual(await kvKeys(host.db), []);
  assert.equal((await host.read(["p/access:t", "p/refresh:r"])).size, 0);
  assert.deepEqual(await readOne(host, "p/link:a:b"), { version: 1, bytes: [0] });
});

test("kv + durable-object: a token key already present is a conflict, and nothing is written", async () => {
  const host = remote(`db${++files}`, "kv");
  assert.equal(await host.apply({ puts: [put("p/access:t", null, bytes(0))], audit: [] }), true);
  assert.equal(await host.apply({ puts: [put("p/grant:g", null, bytes(1)), put("p/access:t", null, bytes(1))], audit: [] }), false);
  assert.equal((await host.read(["p/grant:g"])).size, 0);
  assert.deepEqual(await readOne(host, "p/access:t"), { version: 1, bytes: [0] });
});

test("kv + durable-object: a versioned write to a token key is refused as misuse", async () => {
  const host = remote(`db${++files}`, "kv");
  await assert.rejects(host.apply({ puts: [put("p/refresh:r", 2, bytes(0))], audit: [] }), /write-once/);
  await assert.rejects(host.apply({ puts: [put("p/access:t", 0, bytes(0))], audit: [] }), /write-once/);
  assert.deepEqual(await kvKeys(host.db), []);
});

test("sqlite: keys and bytes are bound parameters, never SQL (a key of SQL metacharacters is just a key)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-sql-"));
  try {
    const db = new Database(join(dir, "store.sqlite"));
    const storage = sqliteStorage(db);
    const hostile = "p/code:x'); DROP TABLE edgegrant_store; --\"`";
    const bytes = new Uint8Array([1, 39, 34, 59]);
    assert.equal(storage.apply({ puts: [{ key: hostile, expect: null, bytes, purgeAfter: null }], audit: [] }), true);
    assert.deepEqual([...storage.read([hostile]).get(hostile).bytes], [...bytes]);
    assert.equal(storage.size(), 1, "the table is still there, with the one record");
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("postgres: keys and bytes are bound parameters, never SQL; a transaction of many puts is one all-or-nothing call", async () => {
  const storage = await postgresHost("hostile");
  const hostile = "p/code:x'); DROP TABLE hostile; --\"`$$";
  const record = new Uint8Array([0, 1, 39, 34, 59, 92, 255]);
  assert.equal(await storage.apply({ puts: [{ key: hostile, expect: null, bytes: record, purgeAfter: null }], audit: [] }), true);
  assert.deepEqual([...(await storage.read([hostile])).get(hostile).bytes], [...record]);
  assert.equal(await storage.size(), 1, "the table is still there, with the one record");
  // Forty puts over four partitions, the last one's condition false: nothing of it is written.
  const puts = Array.from({ length: 40 }, (_, i) => put(`q${i % 4}/grant:${i}`, null, bytes(i), i));
  assert.equal(await storage.apply({ puts: [...puts, put(hostile, 5, bytes(1))], audit: [] }), false);
  assert.equal(await storage.size(), 1);
  assert.equal(await storage.apply({ puts, audit: [] }), true);
  assert.equal(await storage.size(), 41);
  assert.ok((await storage.diskBytes()) > 0);
});

test("postgres: purge deletes in batches through the index, and several purgers share the work", async () => {
  const storage = await postgresHost("purging");
  const other = await postgresHost("purging");
  const puts = Array.from({ length: 2500 }, (_, i) => put(`p${i % 16}/code:${i}`, null, bytes(1), 100 + (i % 2)));
  for (let i = 0; i < puts.length; i += 500) assert.equal(await storage.apply({ puts: puts.slice(i, i + 500), audit: [] }), true);
  const [a, b] = await Promise.all([storage.purge(100), other.purge(100)]);
  assert.equal(a + b, 1250, "each due record deleted once, by one of the two");
  assert.equal(await storage.size(), 1250);
  assert.equal(await storage.purge(101), 1250);
  assert.equal(await storage.size(), 0);
});

test("durable-object: an object purges by its alarm, at the earliest purge time, and keeps what is not due", { timeout: 30_000 }, async () => {
  const host = alarmed(`db${++files}`);
  const now = Math.floor(Date.now() / 1000);
  assert.equal(await host.apply({ puts: [put("p/code:soon", null, bytes(1), now + 1), put("p/code:later", null, bytes(2), now + 3600), put("p/link:a:b", null, bytes(3))], audit: [] }), true);
  // Rewritten with a later purge time before it was due: moves in the index, and stays. (Due
  // in five seconds, not one: `now` is floored, so now + 1 can be due a millisecond later, and
  // the alarm then purged it before the rewrite — once, on a loaded machine.)
  assert.equal(await host.apply({ puts: [put("p/grant:g", null, bytes(4), now + 5)], audit: [] }), true);
  assert.equal(await host.apply({ puts: [put("p/grant:g", 1, bytes(5), now + 7200)], audit: [] }), true);
  const deadline = Date.now() + 15_000;
  while ((await host.read(["p/code:soon"])).size > 0 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 200));
  const left = await host.read(["p/code:soon", "p/code:later", "p/link:a:b", "p/grant:g"]);
  assert.deepEqual([...left.keys()].sort(), ["p/code:later", "p/grant:g", "p/link:a:b"], "the alarm purged the due record, nothing else");
  assert.deepEqual(stored(left.get("p/grant:g")), { version: 2, bytes: [5] });
  // The index holds the rest: purging at their times removes them one by one.
  assert.equal(await host.purge(now + 3600), 1);
  assert.equal(await host.purge(now + 7200), 1);
  assert.deepEqual([...(await host.read(["p/code:later", "p/grant:g", "p/link:a:b"])).keys()], ["p/link:a:b"]);
});

test("every adapter applies a transaction of 400 puts (an unlink of many grants) whole", async () => {
  for (const [name, open] of Object.entries(adapters)) {
    const [storage] = await open();
    const puts = Array.from({ length: 400 }, (_, i) => put(`p/grant:${i}`, null, bytes(i & 255), i % 2 ? 1_000 : null));
    assert.equal(await storage.apply({ puts, audit: [] }), true, name);
    const found = await storage.read(puts.map((p) => p.key));
    assert.equal(found.size, 400, name);
    const again = puts.map((p, i) => put(p.key, 1, bytes(7), i === 399 ? 2_000 : null));
    again[399] = put(again[399].key, 5, bytes(7));
    assert.equal(await storage.apply({ puts: again, audit: [] }), false, `${name}: the last put's condition fails, nothing applies`);
    assert.deepEqual(stored((await storage.read(["p/grant:0"])).get("p/grant:0")), { version: 1, bytes: [0] }, name);
    assert.equal(await storage.purge(1_000), 200, `${name}: purge through the index`);
  }
});
