// Smoke test of the Node side-by-side benchmark: a quick run in which every flow of every subject
// ran and succeeded (each flow throws unless it got its success response), and every comparison
// has its ratios.
import { test } from "node:test";
import assert from "node:assert/strict";
import { benchNode, COMPARISONS, FLOWS, PEER_FLOWS, SUBJECTS } from "./bench.mjs";

// The flows each subject has: the peer has no token exchange; the empty Fetch handler and the
// bearer floor are floors for the bearer check only.
const EXPECTED = {
  [SUBJECTS.edgegrantFetch]: FLOWS,
  [SUBJECTS.peerFetch]: PEER_FLOWS,
  [SUBJECTS.fetchFloor]: ["bearer"],
  [SUBJECTS.edgegrantPlain]: FLOWS,
  [SUBJECTS.peerDirect]: PEER_FLOWS,
  [SUBJECTS.plainFloor]: ["bearer"],
};

test("benchNode --quick: every flow of every subject runs and succeeds", async () => {
  const result = await benchNode({ rounds: 2, batch: 10, warmup: 2 });
  assert.match(result.runtime, /^node v/);
  assert.deepEqual(Object.keys(result.subjects).sort(), Object.keys(EXPECTED).sort());
  for (const [name, flows] of Object.entries(EXPECTED)) {
    assert.deepEqual(Object.keys(result.subjects[name]), flows, `${name}: its flows`);
    for (const flow of flows) {
      const summary = result.subjects[name][flow];
      assert.equal(summary.ops, 20, `${flow}/${name}: every operation counted`);
      assert.ok(Number.isFinite(summary.opsPerSecond) && summary.opsPerSecond > 0, `${flow}/${name}: positive ops/s`);
      assert.ok(summary.p50 > 0 && summary.p99 >= summary.p50, `${flow}/${name}: latencies`);
    }
  }
  assert.deepEqual(result.comparisons.map((c) => c.id), ["fetch", "floor", "plain", "plainFloor"]);
  for (const [i, comparison] of result.comparisons.entries()) {
    assert.deepEqual(Object.keys(comparison.flows), COMPARISONS[i].flows, `${comparison.id}: its flows`);
    for (const [flow, { ratio }] of Object.entries(comparison.flows)) assert.ok(Number.isFinite(ratio) && ratio > 0, `${comparison.id}/${flow}: ratio`);
  }
  assert.ok(result.fairness.length >= 6 && result.fairness.every((line) => typeof line === "string" && line.length > 0));
});
