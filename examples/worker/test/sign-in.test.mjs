// The Worker host's sign-in and sessions: the shared suite over HTTP
// (../../host/sign-in-suite.mjs) against wrangler dev in test mode (its clock then moves the
// sign-in routes' time too), and the sample's placeholder session_secret refused at start.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { signInSuite } from "../../host/sign-in-suite.mjs";
import { SAMPLE_CONFIG, startWorker } from "../dev.mjs";

const dir = mkdtempSync(join(tmpdir(), "edgegrant-worker-signin-"));
after(() => rmSync(dir, { recursive: true, force: true }));

signInSuite("Worker host", () => startWorker({ configPath: SAMPLE_CONFIG, port: 0, persistTo: join(dir, "state"), testMode: true, allowSampleSecret: true }));

test("the sample's placeholder session_secret stops dev.mjs, with how to make a real one, unless the demo opts in", { timeout: 60_000 }, async () => {
  const started = startWorker({ configPath: SAMPLE_CONFIG, port: 0, persistTo: join(dir, "refused") });
  started.then((worker) => worker.close(), () => {}); // should it start after all, stop it
  await assert.rejects(started, /session_secret is the sample configuration's placeholder.*randomBytes\(32\)/s);
  const env = { ...process.env };
  delete env.EDGEGRANT_ALLOW_SAMPLE_SECRET;
  const dev = fileURLToPath(new URL("../dev.mjs", import.meta.url));
  const run = spawnSync(process.execPath, [dev, SAMPLE_CONFIG], { encoding: "utf8", timeout: 20_000, env });
  assert.equal(run.status, 1, run.stderr);
  assert.match(run.stderr, /session_secret is the sample configuration's placeholder/);
  assert.match(run.stderr, /EDGEGRANT_ALLOW_SAMPLE_SECRET=1/, "names the demo's opt-in");
});
