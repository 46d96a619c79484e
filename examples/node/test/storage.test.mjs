// Storage trouble is not the client's fault: while another process holds the SQLite database's
// write lock past the busy timeout, a request that must write gets 503 with Retry-After (the
// core's answer to a store that failed), never a 4xx; once the lock is gone it succeeds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../server.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const Database = createRequire(join(here, "../../../pkg/package.json"))("better-sqlite3");

test("a locked database answers 503 with Retry-After, then recovers", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-node-storage-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "config.json");
  copyFileSync(join(here, "../config.sample.json"), path);
  const server = await startServer(path, { port: 0, allowSampleSecret: true, onAudit: () => {} });
  t.after(() => server.close());
  t.mock.method(console, "error", () => {}); // the driver logs the store's error

  // A wrong client secret is counted in the store (attempt limits): the request must write.
  const wrongSecret = () =>
    fetch(`${server.url}/oauth2/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: "x", client_id: "demo-server-app", client_secret: "wrong" }),
    });

  const other = new Database(join(dir, "edgegrant.sqlite"));
  other.exec("BEGIN EXCLUSIVE");
  const locked = await wrongSecret();
  assert.equal(locked.status, 503);
  assert.equal(locked.headers.get("retry-after"), "1");
  assert.equal((await locked.json()).error, "temporarily_unavailable");
  other.exec("ROLLBACK");
  other.close();

  const free = await wrongSecret();
  assert.equal(free.status, 400);
  assert.equal((await free.json()).error, "invalid_client");
});
