// What the interop tests with the official Dropbox SDKs share (dropbox-sdk.test.mjs: JavaScript;
// dropbox-python.test.mjs: Python): the hosts they run against, the sample user and apps, a TCP
// tap that keeps every byte a client sent (plain or behind TLS), the user's browser played over
// HTTP, and subtests that hand back a value.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const root = fileURLToPath(new URL("../../", import.meta.url));

/** A registered redirect URI of both sample apps (nothing listens there: the browser stops at it). */
export const REDIRECT = "http://127.0.0.1:8788/callback";

/** The server key of the hosts these tests start in the standards profile (public, tests only). */
export const SERVER_KEY = "aW50ZXJvcC10ZXN0cy1zZXJ2ZXIta2V5LTMyYnl0ZXM";
/** The sample configurations' first user. */
export const ALICE = { username: "alice", password: "alice-password", account_id: "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", display_name: "Alice Example", email: "alice@example.com" };

/** The sample configurations' apps: a public one (PKCE, no secret) and a confidential one. */
export const apps = [
  { name: "public PKCE app", clientId: "demo-pkce-app", pkce: true, scopes: ["account_info.read", "files.metadata.read"] },
  { name: "confidential app", clientId: "demo-server-app", clientSecret: "demo-confidential-secret", pkce: false, scopes: null },
];

// ---- hosts ---------------------------------------------------------------------------------------

function tempCopy(sample) {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-sdk-"));
  const path = join(dir, "config.json");
  copyFileSync(sample, path);
  return { dir, path };
}

/**
 * The three hosts, each on a copy of its sample configuration: `start()` resolves `{ url, close }`
 * within `startTimeout` ms (the native host's first start is a cargo build: minutes from a clean
 * target directory on two cores).
 */
export const hosts = [
  {
    name: "node",
    startTimeout: 30_000,
    async start() {
      const { startServer } = await import(pathToFileURL(join(root, "examples/node/server.mjs")).href);
      const { dir, path } = tempCopy(join(root, "examples/node/config.sample.json"));
      // The sample's placeholder session_secret, allowed as for the demo.
      const server = await startServer(path, { port: 0, allowSampleSecret: true });
      return { url: server.url, close: async () => (await server.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  {
    name: "native",
    startTimeout: 20 * 60_000,
    // The native host (examples/native, the crate alone) reads the Node host's configuration file;
    // the first start builds it with cargo (a no-op after tests/all.sh's cargo test).
    async start() {
      const { startNative } = await import(pathToFileURL(join(root, "examples/native/start.mjs")).href);
      const { dir, path } = tempCopy(join(root, "examples/node/config.sample.json"));
      const host = await startNative(path, { port: 0, allowSampleSecret: true });
      return { url: host.url, close: async () => (await host.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  {
    name: "worker",
    startTimeout: 60_000,
    async start() {
      const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
      const { dir, path } = tempCopy(join(root, "examples/worker/config.sample.json"));
      const worker = await startWorker({ configPath: path, port: 0, persistTo: join(dir, "state"), allowSampleSecret: true });
      return { url: worker.url, close: async () => (await worker.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
];

// ---- the tap: a TCP relay that keeps a copy of every byte the client sent -------------------------

/**
 * A relay on 127.0.0.1 in front of `target` (an http:// URL) that keeps the client's bytes. With
 * `tls: { key, cert }` it serves TLS with that certificate and relays the decrypted bytes (so it
 * keeps those). Resolves `{ url, requests(), close() }`; `url` is http:// or https://.
 */
export async function startTap(target, { tls: credentials } = {}) {
  const { hostname, port } = new URL(target);
  // The client's bytes, one list per connection of { seq, data } chunks; `seq` orders requests
  // across connections (a keep-alive pool may send the next request on any of them).
  const connections = [];
  const sockets = new Set();
  let seq = 0;
  const relay = (client) => {
    const chunks = [];
    connections.push(chunks);
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => (client.destroy(), upstream.destroy()));
    }
    client.on("data", (data) => chunks.push({ seq: seq++, data }));
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const server = credentials ? tls.createServer(credentials, relay) : net.createServer(relay);
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `${credentials ? "https" : "http"}://127.0.0.1:${server.address().port}`,
    /** Every HTTP/1.1 request that went through, parsed from the raw bytes, in the order sent. */
    requests: () => connections.flatMap(parseRequests).sort((a, b) => a.seq - b.seq),
    close: () => new Promise((ok) => (sockets.forEach((s) => s.destroy()), server.close(ok))),
  };
}

function parseRequests(chunks) {
  const bytes = Buffer.concat(chunks.map((c) => c.data));
  const seqAt = (offset) => {
    for (const c of chunks) {
      if (offset < c.data.length) return c.seq;
      offset -= c.data.length;
    }
  };
  const requests = [];
  let at = 0;
  while (at < bytes.length) {
    const seq = seqAt(at);
    const end = bytes.indexOf("\r\n\r\n", at);
    if (end < 0) throw new Error(`tap: incomplete request head: ${bytes.subarray(at).toString("latin1")}`);
    const [line, ...fields] = bytes.subarray(at, end).toString("latin1").split("\r\n");
    const [method, target] = line.split(" ");
    const headers = fields.map((f) => [f.slice(0, f.indexOf(":")), f.slice(f.indexOf(":") + 1).trim()]);
    const get = (name) => headers.find(([n]) => n.toLowerCase() === name)?.[1];
    at = end + 4;
    let body;
    if (/chunked/i.test(get("transfer-encoding") ?? "")) {
      const parts = [];
      for (;;) {
        const eol = bytes.indexOf("\r\n", at);
        const size = parseInt(bytes.subarray(at, eol).toString("latin1"), 16);
        at = eol + 2;
        if (size === 0) break;
        parts.push(bytes.subarray(at, at + size));
        at += size + 2;
      }
      at = bytes.indexOf("\r\n", at) + 2; // after the (empty) trailer
      body = Buffer.concat(parts);
    } else {
      const length = Number(get("content-length") ?? 0);
      body = bytes.subarray(at, at + length);
      at += length;
    }
    requests.push({ seq, method, target, headers, body, header: (name) => get(name.toLowerCase()) });
  }
  return requests;
}

// ---- the browser --------------------------------------------------------------------------------

const unescapeHtml = (s) => s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[e]);
const attr = (tag, name) => {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`, "i"));
  return m ? unescapeHtml(m[1]) : undefined;
};

/**
 * Plays the user's browser from the authorization URL to the end of the flow: follows redirects,
 * keeps cookies, fills the sign-in form and presses Allow on the consent form, sending Origin as a
 * browser does. Resolves `{ redirect }`, the URL the app's redirect URI receives, or, when the
 * flow has no redirect URI, `{ code }`, the code the page shows the user (pages.json `code`).
 */
export async function browse(startUrl, hostUrl, user) {
  const cookies = new Map();
  let url = startUrl;
  let init = {};
  for (let hop = 0; hop < 10; hop++) {
    const headers = { ...init.headers, ...(cookies.size && { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") }) };
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      cookies.set(pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1));
    }
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get("location"), url).href;
      if (new URL(next).origin !== new URL(hostUrl).origin) return { redirect: next }; // left the host: the app's redirect URI
      url = next;
      init = {};
      continue;
    }
    const html = await res.text();
    assert.equal(res.status, 200, `the browser got ${res.status} at ${url}: ${html.slice(0, 500)}`);
    const form = html.match(/<form\b[^>]*>[\s\S]*?<\/form>/i)?.[0];
    if (!form) {
      const code = html.match(/<code id="code">([^<]*)<\/code>/)?.[1];
      assert.ok(code, `neither a form nor a code on the page at ${url}: ${html.slice(0, 500)}`);
      return { code: unescapeHtml(code) };
    }
    const fields = new URLSearchParams();
    for (const input of form.match(/<input\b[^>]*>/gi) ?? []) {
      const name = attr(input, "name");
      if (!name) continue;
      if (name === "username") fields.set(name, user.username);
      else if (attr(input, "type") === "password") fields.set(name, user.password);
      else fields.set(name, attr(input, "value") ?? "");
    }
    if (!fields.has("username")) {
      // The consent page: press Allow.
      const allow = (form.match(/<button\b[^>]*>/gi) ?? []).find((b) => /^allow$/i.test(attr(b, "value") ?? ""));
      assert.ok(allow, `no Allow button on the consent page: ${form}`);
      fields.set(attr(allow, "name"), attr(allow, "value"));
    }
    url = new URL(attr(form.match(/<form\b[^>]*>/i)[0], "action") ?? "", url).href;
    init = { method: "POST", body: fields, headers: { origin: new URL(hostUrl).origin } };
  }
  throw new Error(`the browser did not reach the end of the flow within 10 hops (last at ${url})`);
}

// ---- steps ---------------------------------------------------------------------------------------

/** Runs `fn` as a subtest; returns `{ value }`, or null when the subtest failed (the test fails too). */
export async function step(t, name, fn) {
  let outcome = null;
  await t.test(name, async () => {
    outcome = { value: await fn() };
  });
  return outcome;
}

export const b64url = (bytes) => Buffer.from(bytes).toString("base64url");

// ---- https of the test's own -----------------------------------------------------------------

/**
 * A CA of the test's own in `dir`, and a certificate it signed for 127.0.0.1 (openssl): for the
 * https servers the hosts fetch from (a client's metadata document, an identity provider's keys).
 */
export function testCertificates(dir) {
  const file = (name) => join(dir, name);
  const openssl = (...args) => execFileSync("openssl", args, { stdio: "pipe" });
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=edgegrant test CA", "-keyout", file("ca.key"), "-out", file("ca.pem"));
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", file("doc.key"), "-out", file("doc.csr"));
  writeFileSync(file("ext.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n");
  openssl("x509", "-req", "-in", file("doc.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial", "-days", "1", "-extfile", file("ext.cnf"), "-out", file("doc.pem"));
  return { caPath: file("ca.pem"), ca: readFileSync(file("ca.pem"), "utf8"), key: readFileSync(file("doc.key")), cert: readFileSync(file("doc.pem")) };
}

/** A fetch (for a client library's custom fetch) that trusts `ca` besides nothing: node:https. */
export function fetchTrusting(ca) {
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    const body = init.body === undefined || init.body === null ? null : Buffer.from(await new Response(init.body).arrayBuffer());
    return new Promise((ok, fail) => {
      const req = https.request(url, { method: init.method ?? "GET", headers: Object.fromEntries(headers), ca }, (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => ok(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: Object.entries(res.headers).map(([k, v]) => [k, String(v)]) })));
      });
      req.on("error", fail);
      req.end(body);
    });
  };
}

