// Smoke test of the workerd side-by-side benchmark: a quick run in which every flow of both
// subjects ran inside workerd and succeeded (each flow throws unless it got its success
// response, and the worker answers 500 then, which fails the run).
import { test } from "node:test";
import assert from "node:assert/strict";
import { benchWorkerd } from "./bench.mjs";

test("benchWorkerd --quick: every flow of both subjects runs and succeeds in workerd", async () => {
  const result = await benchWorkerd({ rounds: 2, batch: 100, warmup: 10, latencySamples: 5 });
  assert.match(result.runtime, /^workerd \S+ \(Miniflare \S+\)$/);
  assert.equal(result.peer, "@cloudflare/workers-oauth-provider 1.2.3");
  assert.deepEqual(Object.keys(result.flows), ["exchange", "refresh", "bearer"]);
  for (const [flow, { edgegrant, peer, ratio }] of Object.entries(result.flows)) {
    for (const [name, summary] of [["edgegrant", edgegrant], ["peer", peer]]) {
      assert.equal(summary.ops, 200, `${flow}/${name}: every operation counted`);
      assert.ok(Number.isFinite(summary.opsPerSecond) && summary.opsPerSecond > 0, `${flow}/${name}: positive ops/s`);
      assert.equal(summary.latencySamples, 5, `${flow}/${name}: every latency sample taken`);
      assert.ok(summary.p50 > 0 && summary.p99 >= summary.p50, `${flow}/${name}: latencies`);
    }
    assert.ok(Number.isFinite(ratio) && ratio > 0, `${flow}: ratio`);
  }
  assert.ok(result.fairness.length >= 6 && result.fairness.every((line) => typeof line === "string" && line.length > 0));
});
