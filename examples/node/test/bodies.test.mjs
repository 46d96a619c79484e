// Request bodies are read with a limit: a client that posts an endless body gets its 4xx at once
// and the host's memory stays flat. The host runs as a child process (the sample configuration,
// SQLite in a temp dir), so its resident memory is its own: read from /proc/<pid>/status.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { send } from "../../host/sign-in-suite.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const SERVER = join(here, "../server.mjs");
const MiB = 1024 * 1024;
/** What the client offers to send: far more than any limit, generated as it goes. */
const ENDLESS = 1024 * MiB;
/** How much the host's resident memory may grow while it is offered that. */
const FLAT = 64 * MiB;

let host;
let base;
const dir = mkdtempSync(join(tmpdir(), "edgegrant-node-bodies-"));
before(async () => {
  const path = join(dir, "config.json");
  copyFileSync(join(here, "../config.sample.json"), path);
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), listen: { host: "127.0.0.1", port: 0 } }));
  host = spawn(process.execPath, [SERVER, path], { env: { ...process.env, EDGEGRANT_ALLOW_SAMPLE_SECRET: "1" }, stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: host.stdout });
  base = await new Promise((resolve, reject) => {
    lines.on("line", (line) => {
      const url = /listening on (http:\S+)/.exec(line)?.[1];
      if (url) resolve(url);
    });
    host.once("exit", (code) => reject(new Error(`the host exited (${code}) before listening`)));
  });
});
after(() => {
  host?.kill();
  rmSync(dir, { recursive: true, force: true });
});

/** The host's resident memory now, in bytes. */
const rss = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${host.pid}/status`, "utf8"))[1]) * 1024;

/**
 * POSTs a chunked body of up to `ENDLESS` bytes to `path`, generated chunk by chunk as the
 * connection takes them, and stops sending once the answer arrives. Resolves the status, how
 * much had been sent by then, and the host's peak resident memory meanwhile.
 */
function postEndless(path) {
  let peak = rss();
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rss());
    } catch {
      // the host is gone: the answer says so
    }
  }, 10);
  const { hostname, port } = new URL(base);
  const chunk = Buffer.alloc(64 * 1024, "a");
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = null;
    const request = http.request({ host: hostname, port, method: "POST", path, agent: false, headers: { "Content-Type": "application/x-www-form-urlencoded" } });
    const pump = () => {
      while (answered === null && sent < ENDLESS) {
        sent += chunk.length;
        if (!request.write(chunk)) return void request.once("drain", pump);
      }
      if (answered === null) request.end();
    };
    request.on("response", (response) => {
      answered = { status: response.statusCode, sentBefore: sent };
      response.resume();
    });
    // Once answered, the host may close the connection under the rest: a write fails then.
    request.on("error", (error) => answered === null && reject(error));
    request.on("close", () => {
      clearInterval(sampler);
      if (answered === null) return reject(new Error(`no answer after ${sent} bytes`));
      resolve({ ...answered, peak });
    });
    request.setTimeout(120_000, () => request.destroy(new Error("no answer within 120 s")));
    pump();
  });
}

test("a GET or HEAD with a body answers as the same request without one: the body of a GET means nothing to the core", async () => {
  const target = `/oauth2/authorize?${new URLSearchParams({ client_id: "demo-pkce-app", response_type: "code", redirect_uri: "http://127.0.0.1:8788/callback", code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256" })}`;
  for (const method of ["GET", "HEAD"]) {
    const plain = await send(base, { method, target });
    for (const body of ["x", "z".repeat(100_000)]) {
      const answer = await send(base, { method, target, headers: [["Content-Type", "application/x-www-form-urlencoded"]], body });
      assert.equal(answer.status, plain.status, `${method} with ${body.length} bytes: ${answer.body.slice(0, 200)}`);
      assert.equal(answer.body, plain.body, `${method} with ${body.length} bytes`);
    }
  }
});

// The sign-in form is the host's: 413. The token endpoint's refusal is the core's: 400
// invalid_request, "the request is too large".
for (const [what, path, refused] of [
  ["the sign-in form", "/signin", 413],
  ["the token endpoint", "/oauth2/token", 400],
]) {
  test(`an endless chunked body to ${what} is refused (${refused}) before a fraction of it is read, every time; the host's memory stays flat`, { timeout: 180_000 }, async (t) => {
    const before = rss();
    // Twenty in a row: the answer must reach the client each time (a host that closes at once
    // over the bytes still coming resets the connection, and the client loses the answer).
    for (let round = 1; round <= 20; round++) {
      const { status, sentBefore, peak } = await postEndless(path);
      const shown = `round ${round}: ${status} after ${(sentBefore / MiB).toFixed(1)} MiB sent; memory grew ${((peak - before) / MiB).toFixed(1)} MiB`;
      if (round === 1 || round === 20) t.diagnostic(shown);
      assert.equal(status, refused, shown);
      assert.ok(sentBefore < FLAT, `answered only after reading most of it: ${shown}`);
      assert.ok(peak - before < FLAT, `memory: ${shown}`);
    }
    // The host is still there, and serves the next client.
    const home = await fetch(`${base}/`);
    assert.equal(home.status, 200);
  });
}
