// Smoke test of tests/bench/breakdown.mjs (the README's breakdown of a call through the Fetch
// driver by layer): a short profiled run of the bearer check sorts every sample into a layer,
// and the layers the call must pass through are there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { profileFlow } from "../breakdown.mjs";

test("breakdown: a profiled bearer check through server.fetch, every sample in a layer, the core and the driver among them", () => {
  const { perCall, shares } = profileFlow("bearer", 400);
  assert.ok(Number.isFinite(perCall) && perCall > 0);
  const total = shares.reduce((sum, [, share]) => sum + share, 0);
  assert.ok(Math.abs(total - 1) < 1e-9, `the shares sum to 1 (${total})`);
  const layers = new Map(shares);
  for (const layer of ["wasm core", "driver JavaScript", "outside the server (the client's Request and JSON, the loop)"]) {
    assert.ok(layers.get(layer) > 0, `${layer}: ${JSON.stringify(shares)}`);
  }
});
