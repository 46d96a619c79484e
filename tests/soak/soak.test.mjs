// The soak (soak.mjs) scaled down to seconds, as a test: lifetimes of a few seconds, users
// arriving and leaving for 24 s on SQLite and on PostgreSQL. No request fails, no token outlives
// its revocation or unlink, the purge job deletes most of what was written, and the record
// count levels off (the full ten-minute run, `node tests/soak/soak.mjs`, gives the figures).
import { test } from "node:test";
import assert from "node:assert/strict";
import { lineOf, soakStore } from "./soak.mjs";

const SHORT = { minutes: 0.4, rate: 10, life: 3, ttl: 3, codeTtl: 2, purgeEvery: 1, sample: 2 };

for (const store of ["sqlite", "postgres"]) {
  test(`${store}: users keep coming and going, and the store levels off`, { timeout: 120_000 }, async (t) => {
    const lines = [];
    const result = await soakStore(store, SHORT, (line) => lines.push(line));
    t.diagnostic(lineOf(result));
    assert.equal(result.counts.errors, 0, `${result.errors.join("\n")}\n${lines.join("\n")}`);
    assert.equal(result.counts.alive, 0, "a token outlived its revocation or unlink");
    assert.ok(result.counts.users >= 200 && result.counts.unlinked >= result.counts.users, `${lines.join("\n")}`);
    const last = result.samples.at(-1).records;
    assert.ok(result.counts.purged > 2 * last, `purged ${result.counts.purged}, left ${last}:\n${lines.join("\n")}`);
    assert.ok(Math.abs(result.recordGrowth) < 0.3, `records still growing (${(result.recordGrowth * 100).toFixed(1)}%):\n${lines.join("\n")}`);
  });
}
