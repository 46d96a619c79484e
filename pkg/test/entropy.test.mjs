// The default entropy source (server.js drawEntropy): the platform CSPRNG drawn 64 requests'
// worth at a time, each request getting bytes of its own that no other request ever gets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { entropyLength } from "../src/node.js";
import { drawEntropy } from "../src/server.js";

test("every draw is fresh bytes of its own, never handed out twice, across pool refills", () => {
  const length = entropyLength();
  const seen = new Set();
  for (let i = 0; i < 64 * 3 + 5; i++) {
    const entropy = drawEntropy();
    assert.equal(entropy.length, length);
    // A slot handed out again would hold the zeros written below.
    const hex = Buffer.from(entropy).toString("hex");
    assert.ok(!seen.has(hex), `draw ${i} repeats an earlier one`);
    seen.add(hex);
    assert.ok(entropy.some((b) => b !== 0), `draw ${i} is a used slot's zeroed bytes`);
    entropy.fill(0); // as createAuthServer does once the core copied them
  }
});
