// The Node host's sign-in and sessions: the shared suite over HTTP (../../host/sign-in-suite.mjs),
// the Secure cookie over https (the shared routes on Fetch requests: node:http serves only
// http), and the sample's placeholder session_secret refused at start.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import "../../../pkg/src/node.js";
import { memoryStorage } from "../../../pkg/src/adapters/memory.js";
import { createApp, parseConfig } from "../../host/app.mjs";
import { ALICE, signInSuite } from "../../host/sign-in-suite.mjs";
import { startServer } from "../server.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const SAMPLE = join(here, "../config.sample.json");
const SERVER = join(here, "../server.mjs");

function sampleCopy(t) {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-node-signin-"));
  t?.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "config.json");
  copyFileSync(SAMPLE, path);
  return { dir, path };
}

signInSuite("Node host", async () => {
  const { dir, path } = sampleCopy();
  const server = await startServer(path, { port: 0, testMode: true, allowSampleSecret: true, onAudit: () => {} });
  return { url: server.url, close: async () => (await server.close(), rmSync(dir, { recursive: true, force: true })) };
});

test("over https the session cookie, and the one that clears it, are Secure; over http they are not", async () => {
  const app = createApp(parseConfig(JSON.parse(readFileSync(SAMPLE, "utf8")), { allowSampleSecret: true }), { storage: memoryStorage(), title: "test" });
  for (const origin of ["https://auth.example", "http://auth.example"]) {
    const secure = origin.startsWith("https:");
    const post = (path, body) =>
      app.fetch(new Request(`${origin}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", origin }, body, redirect: "manual" }));
    const signedIn = await post("/signin", new URLSearchParams({ ...ALICE, return_to: "/" }));
    assert.equal(signedIn.status, 303);
    const cookie = signedIn.headers.get("set-cookie");
    assert.equal(/; Secure(;|$)/.test(cookie), secure, `${origin}: ${cookie}`);
    const out = await post("/signout", "");
    assert.equal(out.status, 303);
    const cleared = out.headers.get("set-cookie");
    assert.match(cleared, /^session=;/);
    assert.equal(/; Secure(;|$)/.test(cleared), secure, `${origin}: ${cleared}`);
  }
});

test("with the store down, a sign-in with the right password is a 503 with Retry-After (not a 429 limit); once it is back it signs in", async (t) => {
  t.mock.method(console, "error", () => {}); // the driver logs the store's error
  const records = memoryStorage();
  let down = false;
  const outage = () => {
    if (down) throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
  };
  const storage = { read: (keys) => (outage(), records.read(keys)), apply: async (transaction) => (outage(), records.apply(transaction)) };
  const app = createApp(parseConfig(JSON.parse(readFileSync(SAMPLE, "utf8")), { allowSampleSecret: true }), { storage, title: "test" });
  const signIn = (fields) =>
    app.fetch(
      new Request("http://auth.example/signin", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ ...fields, return_to: "/" }),
        redirect: "manual",
      }),
    );
  down = true;
  for (const fields of [ALICE, { ...ALICE, password: "wrong" }]) {
    const refused = await signIn(fields);
    assert.equal(refused.status, 503, `${fields.password}: an outage, not a limit`);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(refused.headers.get("set-cookie"), null);
    assert.match(await refused.text(), /The service is unavailable; try again shortly\./);
  }
  down = false;
  const signedIn = await signIn(ALICE);
  assert.equal(signedIn.status, 303, "the store is back");
  assert.match(signedIn.headers.get("set-cookie"), /^session=./);
});

test("the sample's placeholder session_secret and server_key stop the host, with how to make real ones, unless the demo opts in", async (t) => {
  const { path } = sampleCopy(t);
  const env = { ...process.env };
  delete env.EDGEGRANT_ALLOW_SAMPLE_SECRET;
  const refused = spawnSync(process.execPath, [SERVER, path], { encoding: "utf8", timeout: 20_000, env });
  assert.equal(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, /session_secret is the sample configuration's placeholder/);
  assert.match(refused.stderr, /randomBytes\(32\)/, "says how to generate a secret");
  await assert.rejects(startServer(path, { port: 0 }), /session_secret is the sample configuration's placeholder/);
  // The sample's server key too: with it anyone could open the routes of its credentials.
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(SAMPLE, "utf8")), session_secret: randomBytes(32).toString("hex") }));
  await assert.rejects(startServer(path, { port: 0 }), /server_key is the sample configuration's placeholder.*randomBytes\(32\)/s);

  // The demo's opt-in: the variable examples/run-demo.sh sets (on any free port here).
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(SAMPLE, "utf8")), listen: { host: "127.0.0.1", port: 0 } }));
  const demo = spawn(process.execPath, [SERVER, path], { env: { ...env, EDGEGRANT_ALLOW_SAMPLE_SECRET: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  t.after(() => demo.kill());
  let stderr = "";
  demo.stderr.on("data", (text) => (stderr += text));
  const line = await new Promise((resolve) => {
    createInterface({ input: demo.stdout }).once("line", resolve);
    demo.once("exit", () => resolve(`exited: ${stderr}`));
  });
  assert.match(line, /^edgegrant Node host listening on http:\/\/127\.0\.0\.1:\d+$/);
});
