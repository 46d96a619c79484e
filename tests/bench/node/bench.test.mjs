// Smoke test of the Node side-by-side benchmark: a quick run in which every flow of both
// subjects ran and succeeded (each flow throws unless it got its success response).
import { test } from "node:test";
import assert from "node:assert/strict";
import { benchNode } from "./bench.mjs";

test("benchNode --quick: every flow of both subjects runs and succeeds", async () => {
  const result = await benchNode({ rounds: 2, batch: 10, warmup: 2 });
  assert.match(result.runtime, /^node v/);
  assert.deepEqual(Object.keys(result.flows), ["exchange", "refresh", "bearer"]);
  for (const [flow, { edgegrant, peer, ratio }] of Object.entries(result.flows)) {
    for (const [name, summary] of [["edgegrant", edgegrant], ["peer", peer]]) {
      assert.equal(summary.ops, 20, `${flow}/${name}: every operation counted`);
      assert.ok(Number.isFinite(summary.opsPerSecond) && summary.opsPerSecond > 0, `${flow}/${name}: positive ops/s`);
      assert.ok(summary.p50 > 0 && summary.p99 >= summary.p50, `${flow}/${name}: latencies`);
    }
    assert.ok(Number.isFinite(ratio) && ratio > 0, `${flow}: ratio`);
  }
  assert.ok(result.fairness.length >= 6 && result.fairness.every((line) => typeof line === "string" && line.length > 0));
});
