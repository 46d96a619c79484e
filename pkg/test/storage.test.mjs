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
import { ALICE, PKCE_APP, PKCE_REDIRECT, VERIFIER, config, counterEntropy, form, pkceQuery } from "./fixtures.mjs";

const dir = mkdtempSync(join(tmpdir(), "edgegrant-storage-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
let files = 0;

// The Durable Object adapter runs where it will in production: inside workerd (Miniflare).
const mf = new Miniflare({
  modules: true,
  scriptPath: fileURLToPath(new URL("./durable-object-worker.js", import.meta.url)),
  modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
  durableObjects: { RECORDS: "Records" },
});
after(() => mf.dispose());

/** A Node-side handle on the adapter inside one Durable Object. */
function remote(db) {
  const call = async (op, ...args) => {
    const response = await mf.dispatchFetch(`http://do.test/?db=${db}`, { method: "POST", body: JSON.stringify({ op, args }) });
    const body = await response.json();
    return body.map ? new Map(body.map) : body.value;
  };
  return { read: (keys) => call("read", keys), apply: (tx) => call("apply", tx), purge: (now) => call("purge", now) };
}

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
      const core = createCore(config());
      const random = counterEntropy();
      const options = { clock: () => 1_700_000_000, random };
      const consent = await runSteps(core, hostA, { kind: "consent", query: pkceQuery(), user: ALICE, decision: "allow" }, options);
      const code = new URL(consent.value).searchParams.get("code");
      const exchange = {
        kind: "token",
        request: form({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }),
      };
      const results = await Promise.all([runSteps(core, hostA, exchange, options), runSteps(core, hostB, exchange, options)]);
      const statuses = results.map((r) => r.value.status).sort();
      assert.deepEqual(statuses, [200, 400], `trial ${trial}`);
      const loser = results.find((r) => r.value.status === 400);
      assert.equal(JSON.parse(loser.value.body).error, "invalid_grant");
    }
    assert.ok(conflicts > 0, "the racing commits must have met a failed conditional write");
  });
}
