// Tool calls per second for one user through the MCP Worker example (examples/mcp/worker.js on
// ../worker/src/worker.js) under wrangler dev: one machine's token (one partition, so one
// Durable Object holds its records), `tools/call add` sent `CONCURRENCY` at a time, `CALLS` in
// all, after a warm-up. What issue 50 item 6 measures: whether the API handler runs inside that
// one object (every tool call of the user through it) or in the stateless Worker in front.
//   node tests/bench/mcp-worker.mjs [--calls N] [--concurrency C]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { startMcpWorker } from "../../examples/mcp/start.mjs";

const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const CALLS = option("--calls", 2000);
const CONCURRENCY = option("--concurrency", 16);

const freePort = () =>
  new Promise((ok, fail) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
    server.on("error", fail);
  });

/** The MCP example's sample configuration, its issuer on `port`, in `dir`. */
function configOn(dir, port) {
  const sample = JSON.parse(readFileSync(new URL("../../examples/mcp/config.sample.json", import.meta.url), "utf8"));
  const path = join(dir, "config.json");
  writeFileSync(path, JSON.stringify({ ...sample, listen: { host: "127.0.0.1", port }, profile: { ...sample.profile, issuer: `http://127.0.0.1:${port}` } }));
  return path;
}

/** A machine registered by RFC 7591 (the client credentials grant) and its access token. */
async function machineToken(url) {
  const registered = await fetch(`${url}/oauth2/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "bench machine", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "mcp:tools" }),
  });
  if (registered.status !== 201) throw new Error(`registration: ${registered.status} ${await registered.text()}`);
  const { client_id, client_secret } = await registered.json();
  const answer = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${encodeURIComponent(client_id)}:${encodeURIComponent(client_secret)}`)}` },
    body: new URLSearchParams({ grant_type: "client_credentials", scope: "mcp:tools" }),
  });
  if (answer.status !== 200) throw new Error(`token: ${answer.status} ${await answer.text()}`);
  return (await answer.json()).access_token;
}

/** One `tools/call add` over Streamable HTTP (JSON answers); throws unless it returned 3. */
async function toolCall(url, token, id) {
  const answer = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } }),
  });
  const body = await answer.text();
  if (answer.status !== 200 || !body.includes('"text":"3"')) throw new Error(`tool call: ${answer.status} ${body}`);
}

/** `count` calls, `concurrency` at a time: calls per second. */
async function rate(url, token, count, concurrency) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await toolCall(url, token, next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

const dir = mkdtempSync(join(tmpdir(), "edgegrant-mcp-bench-"));
const port = await freePort();
const host = await startMcpWorker(configOn(dir, port), { port, allowSampleSecret: true, persistTo: join(dir, "state"), timeoutMs: 120_000 });
try {
  const token = await machineToken(host.url);
  await rate(host.url, token, 200, CONCURRENCY); // warm-up
  const single = await rate(host.url, token, Math.min(CALLS, 500), 1);
  const parallel = await rate(host.url, token, CALLS, CONCURRENCY);
  console.log(JSON.stringify({ calls: CALLS, concurrency: CONCURRENCY, one_at_a_time_per_s: Math.round(single), concurrent_per_s: Math.round(parallel) }));
} finally {
  await host.close();
  rmSync(dir, { recursive: true, force: true });
}
