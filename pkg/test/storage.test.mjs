// One suite every storage adapter must pass: conditional writes, all-or-nothing transactions,
// versions, purging, and the conflict case — two racing code exchanges, exactly one winner.
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createCore, runSteps } from "../src/node.js";
import { memoryStorage } from "../src/adapters/memory.js";
import { sqliteStorage } from "../src/adapters/sqlite.js";
import { Miniflare } from "miniflare";
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
  durableObjects: { RECORDS: "Records" },
  kvNamespaces: ["TOKENS"],
});
after(() => mf.dispose());

/** A Node-side handle on an adapter inside workerd; `store` "kv" selects the KV composition. */
function remote(db, store = "") {
  const call = async (op, ...args) => {
    const response = await mf.dispatchFetch(`http://do.test/?db=${db}&store=${store}`, { method: "POST", body: JSON.stringify({ op, args }) });
    const body = await response.json();
    if (body.error) throw new Error(body.error);
    return body.map ? new Map(body.map) : body.value;
  };
  return { db, read: (keys) => call("read", keys), apply: (tx) => call("apply", tx), purge: (now) => call("purge", now) };
}

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
};

const link = (epoch) => ({ type: "link", epoch, granted: [] });
const put = (key, expect, record, purge_after = null) => ({ key, expect, record, purge_after });
const absent = { expect: "absent" };
const version = (v) => ({ expect: "version", version: v });

for (const [name, open] of Object.entries(adapters)) {
  test(`${name}: absent keys are left out of a read`, async () => {
    const [storage] = open();
    const found = await storage.read(["link:a:b", "code:x"]);
    assert.equal(found.size, 0);
  });

  test(`${name}: puts create at version 1 and bump versions`, async () => {
    const [storage] = open();
    assert.equal(await storage.apply({ puts: [put("link:a:b", absent, link(0))], audit: [] }), true);
    assert.deepEqual((await storage.read(["link:a:b"])).get("link:a:b"), { version: 1, record: link(0) });
    assert.equal(await storage.apply({ puts: [put("link:a:b", version(1), link(1))], audit: [] }), true);
    assert.deepEqual((await storage.read(["link:a:b"])).get("link:a:b"), { version: 2, record: link(1) });
  });

  test(`${name}: a failed expectation applies nothing at all`, async () => {
    const [storage] = open();
    await storage.apply({ puts: [put("link:a:b", absent, link(0))], audit: [] });
    for (const bad of [absent, version(2), version(0)]) {
      const applied = await storage.apply({ puts: [put("grant:g", absent, link(9)), put("link:a:b", bad, link(5))], audit: [] });
      assert.equal(applied, false);
      assert.equal((await storage.read(["grant:g"])).size, 0, "the first put of a failed transaction is not applied");
      assert.deepEqual((await storage.read(["link:a:b"])).get("link:a:b"), { version: 1, record: link(0) });
    }
  });

  test(`${name}: purge removes what is due and keeps the rest`, async () => {
    const [storage] = open();
    await storage.apply({
      puts: [put("code:a", absent, link(0), 100), put("code:b", absent, link(0), 101), put("link:a:b", absent, link(0))],
      audit: [],
    });
    assert.equal(await storage.purge(100), 1);
    const left = await storage.read(["code:a", "code:b", "link:a:b"]);
    assert.deepEqual([...left.keys()].sort(), ["code:b", "link:a:b"]);
  });

  test(`${name}: two hosts racing on one code — exactly one gets tokens`, async () => {
    let conflicts = 0;
    const counting = (storage) => ({
      read: (keys) => storage.read(keys),
      apply: async (tx) => (await storage.apply(tx)) || (conflicts++, false),
    });
    for (let trial = 0; trial < 20; trial++) {
      const [hostA, hostB] = open().map(counting);
      const flow = pkceFlow();
      const exchange = await flow.exchangeInput(hostA);
      const results = await Promise.all([flow.run(hostA, exchange), flow.run(hostB, exchange)]);
      const statuses = results.map((r) => r.value.status).sort();
      assert.deepEqual(statuses, [200, 400], `trial ${trial}`);
      const loser = results.find((r) => r.value.status === 400);
      assert.equal(JSON.parse(loser.value.body).error, "invalid_grant");
    }
    assert.ok(conflicts > 0, "the racing commits must have met a failed conditional write");
  });

  test(`${name}: tokens issued by one host work on the other until revoked there`, async () => {
    const [hostA, hostB] = open();
    const flow = pkceFlow();
    const issued = await flow.run(hostA, await flow.exchangeInput(hostA));
    const { access_token, refresh_token } = JSON.parse(issued.value.body);
    const call = (token) => ({ kind: "api_call", endpoint: GET_ACCOUNT, request: bearer(token) });
    assert.equal((await flow.run(hostB, call(access_token))).kind, "authorized");
    const refreshed = await flow.run(hostB, { kind: "token", request: form({ grant_type: "refresh_token", refresh_token, client_id: PKCE_APP }) });
    const second = JSON.parse(refreshed.value.body).access_token;
    assert.equal((await flow.run(hostA, call(second))).kind, "authorized");
    assert.equal((await flow.run(hostA, { kind: "revoke", request: bearer(access_token) })).value.status, 200);
    for (const token of [access_token, second]) {
      const refused = await flow.run(hostB, call(token));
      assert.equal(refused.value.status, 401, "revocation on one host ends every token of the grant on the other");
    }
  });
}

/** A PKCE offline flow for ALICE on shared fixtures, at a fixed time, with deterministic entropy. */
function pkceFlow(now = 1_700_000_000) {
  const core = createCore(config());
  const options = { clock: () => now, random: counterEntropy() };
  const run = (host, input) => runSteps(core, host, input, options);
  return {
    run,
    /** Consents on `host` and returns the token-endpoint input that redeems the code. */
    async exchangeInput(host) {
      const consent = await run(host, { kind: "consent", query: pkceQuery(), user: ALICE, decision: "allow" });
      const code = new URL(consent.value).searchParams.get("code");
      return {
        kind: "token",
        request: form({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }),
      };
    },
  };
}

const bearer = (token) => ({ method: "POST", headers: [["authorization", `Bearer ${token}`]] });

// What KV may hold, checked where it runs: token records only, written once, rolled back with a
// failed transaction, expiring by themselves.
test("kv + durable-object: token records live in KV, codes, grants and links do not", async () => {
  const host = remote(`db${++files}`, "kv");
  const now = Math.floor(Date.now() / 1000); // KV expirations are real times
  const flow = pkceFlow(now);
  const issued = await flow.run(host, await flow.exchangeInput(host));
  assert.equal(issued.value.status, 200);
  const held = await kvKeys(host.db);
  assert.deepEqual(held.map((k) => k.name.split(":")[0]).sort(), ["access", "refresh"]);
  const access = held.find((k) => k.name.startsWith("access:"));
  assert.equal(access.expiration, now + 14_400, "an access token expires from KV when it expires");
  assert.equal(held.find((k) => k.name.startsWith("refresh:")).expiration, null, "refresh tokens do not expire");
});

test("kv + durable-object: a failed strong transaction takes its token records back out of KV", async () => {
  const host = remote(`db${++files}`, "kv");
  await host.apply({ puts: [put("link:a:b", absent, link(0))], audit: [] });
  const applied = await host.apply({ puts: [put("access:t", absent, link(1)), put("refresh:r", absent, link(1)), put("link:a:b", version(7), link(1))], audit: [] });
  assert.equal(applied, false);
  assert.deepEqual(await kvKeys(host.db), []);
  assert.equal((await host.read(["access:t", "refresh:r"])).size, 0);
});

test("kv + durable-object: a token key already present is a conflict, and nothing is written", async () => {
  const host = remote(`db${++files}`, "kv");
  assert.equal(await host.apply({ puts: [put("access:t", absent, link(0))], audit: [] }), true);
  assert.equal(await host.apply({ puts: [put("grant:g", absent, link(1)), put("access:t", absent, link(1))], audit: [] }), false);
  assert.equal((await host.read(["grant:g"])).size, 0);
  assert.deepEqual((await host.read(["access:t"])).get("access:t"), { version: 1, record: link(0) });
});

test("kv + durable-object: a versioned write to a token key is refused as misuse", async () => {
  const host = remote(`db${++files}`, "kv");
  await assert.rejects(host.apply({ puts: [put("refresh:r", version(1), link(0))], audit: [] }), /write-once/);
});
