// The guarded fetch of Client ID Metadata Documents: which addresses and URLs are refused, and
// what each variant answers against a real HTTPS server (a self-signed certificate made with the
// openssl CLI — Node cannot make X.509 certificates itself). The web variant runs on Node's own
// fetch in a child process (NODE_EXTRA_CA_CERTS only works at start), and on a fake `fetch`
// returning real Response objects for what a local server cannot produce (opaque redirects,
// streams that stall or break, fetches that ignore the abort signal).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { checkDocumentUrl, documentFetchLimits, fetchDocument, isLoopbackAddress, isSpecialUseAddress } from "../src/documents.js";
import { fetchDocumentNode } from "../src/documents-node.js";

// ---------------------------------------------------------------------------------------------
// Addresses

// [address, special-use?] — both sides of each boundary.
const ADDRESSES = [
  ["0.0.0.0", true],
  ["0.255.255.255", true],
  ["1.0.0.0", false],
  ["9.255.255.255", false],
  ["10.0.0.0", true],
  ["10.255.255.255", true],
  ["11.0.0.0", false],
  ["100.63.255.255", false],
  ["100.64.0.0", true],
  ["100.100.100.200", true], // Alibaba Cloud metadata
  ["100.127.255.255", true],
  ["100.128.0.0", false],
  ["126.255.255.255", false],
  ["127.0.0.1", true],
  ["127.255.255.255", true],
  ["128.0.0.0", false],
  ["169.253.255.255", false],
  ["169.254.0.0", true],
  ["169.254.169.254", true], // AWS, GCP, Azure, Oracle metadata
  ["169.254.255.255", true],
  ["169.255.0.0", false],
  ["172.15.255.255", false],
  ["172.16.0.0", true],
  ["172.31.255.255", true],
  ["172.32.0.0", false],
  ["191.255.255.255", false],
  ["192.0.0.0", true],
  ["192.0.0.255", true],
  ["192.0.1.0", false],
  ["192.0.2.0", true],
  ["192.0.2.255", true],
  ["192.0.3.0", false],
  ["192.88.98.255", false],
  ["192.88.99.0", true],
  ["192.88.99.255", true],
  ["192.88.100.0", false],
  ["192.167.255.255", false],
  ["192.168.0.0", true],
  ["192.168.255.255", true],
  ["192.169.0.0", false],
  ["198.17.255.255", false],
  ["198.18.0.0", true],
  ["198.19.255.255", true],
  ["198.20.0.0", false],
  ["198.51.99.255", false],
  ["198.51.100.0", true],
  ["198.51.100.255", true],
  ["198.51.101.0", false],
  ["203.0.112.255", false],
  ["203.0.113.0", true],
  ["203.0.113.255", true],
  ["203.0.114.0", false],
  ["223.255.255.255", false],
  ["224.0.0.0", true],
  ["239.255.255.255", true],
  ["240.0.0.0", true],
  ["255.255.255.255", true],
  ["8.8.8.8", false],
  ["1.1.1.1", false],
  ["93.184.215.14", false],
  // IPv4 in the forms the URL parser and inet_aton accept
  ["127.1", true],
  ["0x7f.1", true],
  ["0x7f000001", true],
  ["2130706433", true],
  ["017700000001", true],
  ["0177.0.0.1", true],
  ["10.1", true],
  ["134744072", false], // 8.8.8.8
  ["127.0.0.1.", true],
  // IPv6
  ["::", true],
  ["::1", true],
  ["::2", true],
  ["0:0:0:0:0:0:0:1", true],
  ["::ffff:127.0.0.1", true],
  ["::ffff:7f00:1", true],
  ["::FFFF:7F00:0001", true],
  ["0:0:0:0:0:ffff:7f00:1", true],
  ["::ffff:169.254.169.254", true],
  ["::ffff:a9fe:a9fe", true],
  ["::ffff:10.0.0.1", true],
  ["::ffff:8.8.8.8", false],
  ["::ffff:808:808", false],
  ["::127.0.0.1", true], // deprecated IPv4-compatible: not global unicast
  ["::8.8.8.8", true],
  ["64:ff9b::8.8.8.8", false], // NAT64 to a public address
  ["64:ff9b::808:808", false],
  ["64:ff9b::127.0.0.1", true],
  ["64:ff9b::a9fe:a9fe", true],
  ["64:ff9b::a00:1", true],
  ["64:ff9b:1::1", true],
  ["100::1", true],
  ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true],
  ["2000::", false],
  ["2001::1", true], // Teredo
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", true],
  ["2001:1ff:ffff::1", true],
  ["2001:200::1", false], // first address past 2001::/23
  ["2001:db7:ffff::1", false], // past 2001::/23, short of 2001:db8::/32
  ["2001:db8::1", true],
  ["2001:db9::1", false],
  ["2001:4860:4860::8888", false],
  ["2002::1", true],
  ["2002:7f00:1::1", true],
  ["2003::1", false],
  ["2606:4700::1", false],
  ["2620:4f:8000::1", true], // AS112
  ["2620:4f:8001::1", false],
  ["2a00:1450:4001::200e", false],
  ["3ffe:ffff::1", false],
  ["3fff::1", true], // documentation (RFC 9637)
  ["4000::1", true],
  ["fbff:ffff::1", true],
  ["fc00::1", true],
  ["fd00:ec2::254", true], // AWS IMDS over IPv6
  ["fdff:ffff::1", true],
  ["fe80::1", true],
  ["fe80::1%eth0", true],
  ["febf:ffff::1", true],
  ["fec0::1", true],
  ["ff02::1", true],
  ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true],
  ["2606:4700::1%eth0", true], // a zone id is never on a global address
  // not addresses: names (false)
  ["example.com", false],
  ["localhost", false],
  ["", false],
  ["1.2.3.4.5", false],
  ["256.256.256.256", false],
  ["1.2.3.08", false],
  ["::1::", false],
  ["1:2:3:4:5:6:7:8:9", false],
  ["1:2:3:4:5:6:7:8::", false],
  ["12345::", false],
  ["::ffff:127.0.0.01", false],
  ["[::1]", false],
];

test(`isSpecialUseAddress: ${ADDRESSES.length} addresses on both sides of each range`, () => {
  const wrong = ADDRESSES.filter(([ip, special]) => isSpecialUseAddress(ip) !== special);
  assert.deepEqual(wrong, []);
});

test("isSpecialUseAddress: not-a-string is not an address", () => {
  for (const value of [undefined, null, 127, {}]) assert.equal(isSpecialUseAddress(value), false);
});

test("isLoopbackAddress: 127/8, ::1 and their mapped forms only", () => {
  for (const ip of ["127.0.0.1", "127.255.0.9", "127.1", "2130706433", "::1", "::ffff:127.0.0.1", "::ffff:7f00:1"]) assert.equal(isLoopbackAddress(ip), true, ip);
  for (const ip of ["0.0.0.0", "::", "10.0.0.1", "64:ff9b::127.0.0.1", "fe80::1", "::127.0.0.1", "localhost", "8.8.8.8"]) assert.equal(isLoopbackAddress(ip), false, ip);
});

// ---------------------------------------------------------------------------------------------
// URLs

const REFUSED_URLS = [
  "http://client.example.com/c",
  "ftp://client.example.com/c",
  "file:///etc/passwd",
  "javascript:alert(1)",
  "not a url",
  "https://user:pw@client.example.com/c",
  "https://user@client.example.com/c",
  "https://:pw@client.example.com/c",
  "https://localhost/c",
  "https://localhost./c",
  "https://LOCALHOST:8443/c",
  "https://app.localhost/c",
  "https://[::1]/c",
  "https://127.0.0.1/c",
  "https://127.1/c",
  "https://2130706433/c",
  "https://0x7f.0.0.1/c",
  "https://017700000001/c",
  "https://0.0.0.0/c",
  "https://0/c",
  "https://10.0.0.1/c",
  "https://169.254.169.254/latest/meta-data/",
  "https://[::ffff:169.254.169.254]/c",
  "https://[::ffff:127.0.0.1]/c",
  "https://[64:ff9b::a9fe:a9fe]/c",
  "https://[fd00:ec2::254]/latest/meta-data/",
  "https://[fe80::1]/c",
  "https://metadata.google.internal/computeMetadata/v1/",
  "https://metadata/computeMetadata/v1/",
  "https://intranet/c",
  "https://printer.local/c",
  "https://router.home.arpa/c",
  "https://1.0.0.127.in-addr.arpa/c",
  "https://db.localdomain/c",
  "https://svc.corp/c",
  "https://hidden.onion/c",
  "https://x.invalid/c",
];

const ALLOWED_URLS = [
  "https://client.example.com/metadata.json",
  "https://client.example.com:8443/c?v=1",
  "https://CLIENT.Example.com./c",
  "https://localhost.example.com/c", // not under .localhost
  "https://app.test/c", // RFC 6761: .test is not special to software
  "https://8.8.8.8/c",
  "https://[2606:4700::1]/c",
  "https://[64:ff9b::808:808]/c",
  "https://xn--bcher-kva.example/c",
];

test("checkDocumentUrl refuses what is not https, carries userinfo, or names a local place", () => {
  const wrong = REFUSED_URLS.filter((url) => checkDocumentUrl(url) !== "refused");
  assert.deepEqual(wrong, []);
});

test("checkDocumentUrl admits public https URLs", () => {
  const wrong = ALLOWED_URLS.filter((url) => checkDocumentUrl(url) !== null);
  assert.deepEqual(wrong, []);
});

test("checkDocumentUrl with allowLoopback admits loopback only", () => {
  const options = { allowLoopback: true };
  for (const url of ["https://localhost:8443/c", "https://app.localhost/c", "https://127.0.0.1/c", "https://127.1/c", "https://2130706433/c", "https://[::1]/c", "https://[::ffff:127.0.0.1]/c"]) {
    assert.equal(checkDocumentUrl(url, options), null, url);
  }
  for (const url of ["http://localhost/c", "https://0.0.0.0/c", "https://10.0.0.1/c", "https://169.254.169.254/c", "https://[fe80::1]/c", "https://[64:ff9b::127.0.0.1]/c", "https://metadata/c", "https://u@localhost/c"]) {
    assert.equal(checkDocumentUrl(url, options), "refused", url);
  }
});

test("documentFetchLimits says what is checked where", () => {
  assert.equal(typeof documentFetchLimits, "string");
  assert.match(documentFetchLimits, /Workers/);
  assert.match(documentFetchLimits, /resolved address/);
});

// ---------------------------------------------------------------------------------------------
// The web variant with a fake fetch: real Response objects and streams, for what a local server
// cannot produce. The `fetch` option is the one a Worker's service binding uses.

const enc = (text) => new TextEncoder().encode(text);
const DOC = JSON.stringify({ client_id: "https://client.example.com/c", client_name: "Example", redirect_uris: ["https://client.example.com/cb"] });
const REQ = (url = "https://client.example.com/c", maxBytes = 5120, timeoutMs = 2000) => ({ url, maxBytes, timeoutMs });

/** A stream that counts pulls and records cancellation; `chunks` are handed out one per pull. */
function trackedStream(chunks, { stallAfter = Infinity, failAfter = Infinity } = {}) {
  const state = { pulls: 0, cancelled: false };
  const stream = new ReadableStream(
    {
      pull(controller) {
        state.pulls++;
        if (state.pulls > failAfter) return controller.error(new TypeError("connection reset"));
        if (state.pulls > stallAfter) return new Promise(() => {}); // never delivers again
        if (chunks.length === 0) return controller.close();
        controller.enqueue(chunks.shift());
      },
      cancel() {
        state.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

describe("fetchDocument (web) with a fake fetch", () => {
  test("sends a GET for JSON, with manual redirects and an abort signal; answers 200 with the bytes", async () => {
    const calls = [];
    const fetch = async (url, init) => {
      calls.push({ url, init });
      return new Response(DOC, { status: 200, headers: { "cache-control": "max-age=60", "content-type": "application/json" } });
    };
    const answer = await fetchDocument(REQ(), { fetch });
    assert.equal(answer.status, 200);
    assert.equal(answer.cacheControl, "max-age=60");
    assert.ok(answer.body instanceof Uint8Array);
    assert.equal(new TextDecoder().decode(answer.body), DOC);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].url, "https://client.example.com/c");
    assert.equal(calls[0].init.method, "GET");
    assert.equal(calls[0].init.redirect, "manual");
    assert.equal(new Headers(calls[0].init.headers).get("accept"), "application/json");
    assert.ok(calls[0].init.signal instanceof AbortSignal);
  });

  test("refused URLs never reach fetch", async () => {
    let called = 0;
    const fetch = async () => (called++, new Response("{}"));
    for (const url of ["http://client.example.com/c", "https://localhost/c", "https://127.1/c", "https://2130706433/c", "https://[::1]/c", "https://169.254.169.254/c", "https://u:p@client.example.com/c", "https://metadata.google.internal/c"]) {
      assert.deepEqual(await fetchDocument(REQ(url), { fetch }), { failed: "refused" }, url);
    }
    assert.equal(called, 0);
  });

  test("an opaque-redirect response (status 0) is a 302 with no Cache-Control", async () => {
    // Response objects of type opaqueredirect cannot be constructed; this one is a real Response
    // with the two getters a browser-like runtime would give it.
    const fetch = async () => {
      const response = new Response(null, { status: 200 });
      Object.defineProperty(response, "type", { value: "opaqueredirect" });
      Object.defineProperty(response, "status", { value: 0 });
      return response;
    };
    assert.deepEqual(await fetchDocument(REQ(), { fetch }), { status: 302, cacheControl: null, body: new Uint8Array(0) });
  });

  test("a 3xx is the answer, not followed; its body is not read", async () => {
    const { stream, state } = trackedStream([enc("moved")]);
    const fetch = async () => new Response(stream, { status: 301, headers: { location: "https://10.0.0.1/c", "cache-control": "no-store" } });
    assert.deepEqual(await fetchDocument(REQ(), { fetch }), { status: 301, cacheControl: "no-store", body: new Uint8Array(0) });
    assert.equal(state.pulls, 0);
    assert.equal(state.cancelled, true);
  });

  test("a 404 answers its status with an empty body, cancelled unread", async () => {
    const { stream, state } = trackedStream([enc("not here")]);
    const fetch = async () => new Response(stream, { status: 404 });
    assert.deepEqual(await fetchDocument(REQ(), { fetch }), { status: 404, cacheControl: null, body: new Uint8Array(0) });
    assert.equal(state.pulls, 0);
    assert.equal(state.cancelled, true);
  });

  test("Content-Length over maxBytes is too_large without reading", async () => {
    const { stream, state } = trackedStream([enc("{}")]);
    const fetch = async () => new Response(stream, { headers: { "content-length": "5121" } });
    assert.deepEqual(await fetchDocument(REQ(), { fetch }), { failed: "too_large" });
    assert.equal(state.pulls, 0);
    assert.equal(state.cancelled, true);
  });

  test("a streamed body past maxBytes is cut off and cancelled; exactly maxBytes succeeds", async () => {
    const over = trackedStream([new Uint8Array(100), new Uint8Array(100), new Uint8Array(1), new Uint8Array(1000), new Uint8Array(1000)]);
    assert.deepEqual(await fetchDocument(REQ(undefined, 200), { fetch: async () => new Response(over.stream) }), { failed: "too_large" });
    assert.equal(over.state.cancelled, true);
    assert.equal(over.state.pulls, 3); // stopped at the first byte too many

    const exact = trackedStream([new Uint8Array(100).fill(1), new Uint8Array(100).fill(2)]);
    const answer = await fetchDocument(REQ(undefined, 200), { fetch: async () => new Response(exact.stream) });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.length, 200);
    assert.equal(answer.body[0], 1);
    assert.equal(answer.body[199], 2);
  });

  test("a 200 without a body answers an empty one", async () => {
    assert.deepEqual(await fetchDocument(REQ(), { fetch: async () => new Response(null) }), { status: 200, cacheControl: null, body: new Uint8Array(0) });
  });

  test("network errors are unreachable: a rejected fetch, a throwing fetch, a network-error response, a body that breaks", async () => {
    const broken = trackedStream([enc("{")], { failAfter: 1 });
    const cases = [
      async () => {
        throw new TypeError("fetch failed");
      },
      () => {
        throw new TypeError("synchronously");
      },
      async () => Response.error(),
      async () => undefined, // a service binding answering nothing usable
      async () => new Response(broken.stream),
    ];
    for (const fetch of cases) assert.deepEqual(await fetchDocument(REQ(), { fetch }), { failed: "unreachable" });
  });

  test("a fetch that ignores the abort signal still times out on time, and the signal is aborted", async () => {
    let signal;
    const fetch = (url, init) => ((signal = init.signal), new Promise(() => {}));
    const started = Date.now();
    assert.deepEqual(await fetchDocument(REQ(undefined, 5120, 150), { fetch }), { failed: "timeout" });
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 140 && elapsed < 1000, `elapsed ${elapsed} ms`);
    assert.equal(signal.aborted, true);
  });

  test("the deadline covers the body: a stalled stream times out and is cancelled", async () => {
    const { stream, state } = trackedStream([enc('{"client_id":'), enc("1}")], { stallAfter: 1 });
    const started = Date.now();
    assert.deepEqual(await fetchDocument(REQ(undefined, 5120, 150), { fetch: async () => new Response(stream) }), { failed: "timeout" });
    assert.ok(Date.now() - started < 1000);
    assert.equal(state.cancelled, true);
  });

  test("bad arguments are programming errors (the promise rejects)", async () => {
    await assert.rejects(fetchDocument({ url: 1, maxBytes: 10, timeoutMs: 10 }), TypeError);
    await assert.rejects(fetchDocument({ url: "https://a.example/c", maxBytes: -1, timeoutMs: 10 }), TypeError);
    await assert.rejects(fetchDocument({ url: "https://a.example/c", maxBytes: 10, timeoutMs: 0 }), TypeError);
    await assert.rejects(fetchDocument(REQ(), { fetch: "no" }), TypeError);
    await assert.rejects(fetchDocument(undefined), TypeError);
  });
});

// ---------------------------------------------------------------------------------------------
// Against a real HTTPS server with a self-signed certificate

const opensslMissing = spawnSync("openssl", ["version"]).error ? "the openssl CLI is not installed; Node cannot make an X.509 certificate without it" : false;

const MAX = 1000;
const TIMEOUT = 300;
const SLACK = 1500;

describe("against a real HTTPS server", { skip: opensslMissing }, () => {
  let dir;
  let certPath;
  let cert;
  let server;
  let silent; // a TCP server that accepts and never speaks TLS
  let port;
  let silentPort;
  let closedPort; // nothing listens there
  const seen = []; // every request: { path, host, accept, servername }
  let connections = 0;
  const hanging = [];
  const silentSockets = [];

  const base = (host = "localhost") => `https://${host}:${port}`;
  const request = (path, { host, maxBytes = MAX, timeoutMs = 2000 } = {}) => ({ url: `${base(host)}${path}`, maxBytes, timeoutMs });
  const node = (req, options = {}) => fetchDocumentNode(req, { allowLoopback: true, ca: cert, ...options });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "edgegrant-documents-"));
    certPath = join(dir, "cert.pem");
    const keyPath = join(dir, "key.pem");
    const made = spawnSync(
      "openssl",
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", keyPath, "-out", certPath, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,DNS:docs.example,IP:127.0.0.1,IP:::1"],
      { encoding: "utf8" },
    );
    assert.equal(made.status, 0, made.stderr);
    cert = readFileSync(certPath, "utf8");

    server = createHttpsServer({ key: readFileSync(keyPath), cert }, (req, res) => {
      seen.push({ path: req.url, host: req.headers.host, accept: req.headers.accept, servername: req.socket.servername });
      const [, route, arg] = req.url.split("/");
      const n = Number(arg);
      switch (route) {
        case "doc":
          res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=300" });
          return res.end(DOC);
        case "redirect":
          res.writeHead(302, { location: `${base()}/doc`, "cache-control": "no-store" });
          return res.end("see /doc");
        case "missing":
          res.writeHead(404, { "content-type": "text/plain" });
          return res.end("x".repeat(100_000));
        case "sized": // with Content-Length
          res.writeHead(200, { "content-type": "application/json", "content-length": n });
          return res.end(Buffer.alloc(n, 0x61));
        case "chunked": // no Content-Length: only counting can tell
          res.writeHead(200, { "content-type": "application/json" });
          for (let i = 0; i < n; i += 100) res.write(Buffer.alloc(Math.min(100, n - i), 0x62));
          return res.end();
        case "lying": // says 500 bytes, sends 10 and hangs up
          res.writeHead(200, { "content-length": 500 });
          res.write(Buffer.alloc(10, 0x63));
          return setTimeout(() => res.socket.destroy(), 20);
        case "stall": // headers and a little body, then nothing
          res.writeHead(200, { "content-type": "application/json" });
          res.write("{");
          return hanging.push(res);
        case "hang": // never answers
          return hanging.push(res);
        default:
          res.writeHead(500);
          res.end();
      }
    });
    server.on("connection", () => connections++);
    await new Promise((resolve) => server.listen(0, "::", resolve)); // dual stack: 127.0.0.1 and ::1
    port = server.address().port;

    silent = createTcpServer((socket) => silentSockets.push(socket));
    await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentPort = silent.address().port;

    const probe = createTcpServer();
    await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
    closedPort = probe.address().port;
    await new Promise((resolve) => probe.close(resolve));
  });

  after(async () => {
    for (const res of hanging) res.destroy();
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
    for (const socket of silentSockets) socket.destroy();
    await new Promise((resolve) => (silent ? silent.close(resolve) : resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `fn` and asserts the server saw no connection meanwhile. */
  async function noConnection(fn) {
    const before = { connections, requests: seen.length };
    const result = await fn();
    await new Promise((resolve) => setTimeout(resolve, 50)); // a connection would have arrived by now
    assert.deepEqual({ connections, requests: seen.length }, before, "the server saw a connection");
    return result;
  }

  async function assertTimesOut(start, timeoutMs) {
    const started = Date.now();
    assert.deepEqual(await start(), { failed: "timeout" });
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= timeoutMs - 5 && elapsed < timeoutMs + SLACK, `elapsed ${elapsed} ms for a ${timeoutMs} ms deadline`);
  }

  describe("fetchDocumentNode", () => {
    test("200: status, Cache-Control and the body's bytes; SNI, Host and Accept are the URL's", async () => {
      const answer = await node(request("/doc"));
      assert.equal(answer.status, 200);
      assert.equal(answer.cacheControl, "max-age=300");
      assert.ok(answer.body instanceof Uint8Array);
      assert.equal(answer.body.byteOffset, 0);
      assert.equal(answer.body.buffer.byteLength, answer.body.length); // its own buffer
      assert.equal(new TextDecoder().decode(answer.body), DOC);
      assert.deepEqual(seen.at(-1), { path: "/doc", host: `localhost:${port}`, accept: "application/json", servername: "localhost" });
    });

    test("IP literals connect directly (no SNI; the certificate is checked against the address)", async () => {
      assert.equal((await node(request("/doc", { host: "127.0.0.1" }))).status, 200);
      assert.equal(seen.at(-1).servername, false);
      assert.equal((await node(request("/doc", { host: "[::1]" }))).status, 200);
      assert.equal(seen.at(-1).host, `[::1]:${port}`);
    });

    test("302 is the answer, not followed", async () => {
      const before = seen.length;
      assert.deepEqual(await node(request("/redirect")), { status: 302, cacheControl: "no-store", body: new Uint8Array(0) });
      assert.deepEqual(seen.slice(before).map((r) => r.path), ["/redirect"]);
    });

    test("404 is answered with an empty body", async () => {
      assert.deepEqual(await node(request("/missing")), { status: 404, cacheControl: null, body: new Uint8Array(0) });
    });

    test("exactly maxBytes succeeds, maxBytes + 1 is too_large (with and without Content-Length)", async () => {
      for (const route of ["sized", "chunked"]) {
        const fits = await node(request(`/${route}/${MAX}`));
        assert.equal(fits.status, 200, route);
        assert.equal(fits.body.length, MAX, route);
        assert.deepEqual(await node(request(`/${route}/${MAX + 1}`)), { failed: "too_large" }, route);
        assert.deepEqual(await node(request(`/${route}/${MAX * 50}`)), { failed: "too_large" }, route);
      }
    });

    test("a body cut short of its Content-Length is unreachable", async () => {
      assert.deepEqual(await node(request("/lying")), { failed: "unreachable" });
    });

    test("a server that never answers times out within timeoutMs", async () => {
      await assertTimesOut(() => node(request("/hang", { timeoutMs: TIMEOUT })), TIMEOUT);
    });

    test("the deadline covers the body: a stalled body times out", async () => {
      await assertTimesOut(() => node(request("/stall", { timeoutMs: TIMEOUT })), TIMEOUT);
    });

    test("a peer that never completes the TLS handshake times out", async () => {
      await assertTimesOut(() => node({ url: `https://127.0.0.1:${silentPort}/c`, maxBytes: MAX, timeoutMs: TIMEOUT }), TIMEOUT);
    });

    test("a refused port is unreachable", async () => {
      assert.deepEqual(await node({ url: `https://localhost:${closedPort}/c`, maxBytes: MAX, timeoutMs: 2000 }), { failed: "unreachable" });
    });

    test("an untrusted certificate is unreachable", async () => {
      assert.deepEqual(await fetchDocumentNode(request("/doc"), { allowLoopback: true }), { failed: "unreachable" });
    });

    test("without allowLoopback, loopback is refused before any connection", async () => {
      for (const host of ["localhost", "127.0.0.1", "[::1]", "127.1", "2130706433", "[::ffff:127.0.0.1]"]) {
        assert.deepEqual(await noConnection(() => fetchDocumentNode(request("/doc", { host }), { ca: cert })), { failed: "refused" }, host);
      }
    });

    // A resolver of our own (the `lookup` option, same signature as dns.lookup) stands in for
    // DNS: this machine has no resolver that maps a dotted name to loopback.
    const resolver = (table, calls = []) => (hostname, options, callback) => {
      calls.push({ hostname, all: options.all });
      const addresses = table[hostname];
      setImmediate(() => {
        if (!addresses) callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }));
        else callback(null, addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })));
      });
    };

    test("a name is connected to at its vetted address, with the name as SNI and for the certificate", async () => {
      const calls = [];
      const answer = await node(request("/doc", { host: "docs.example" }), { lookup: resolver({ "docs.example": ["127.0.0.1"] }, calls) });
      assert.equal(answer.status, 200);
      assert.deepEqual(seen.at(-1), { path: "/doc", host: `docs.example:${port}`, accept: "application/json", servername: "docs.example" });
      assert.deepEqual(calls, [{ hostname: "docs.example", all: true }]); // resolved once, all addresses
    });

    test("a name whose certificate does not match is unreachable", async () => {
      const lookup = resolver({ "other.example": ["127.0.0.1"] });
      assert.deepEqual(await node(request("/doc", { host: "other.example" }), { lookup }), { failed: "unreachable" });
    });

    test("a name resolving to a special-use address is refused before any connection", async () => {
      const lookup = resolver({
        "docs.example": ["127.0.0.1"],
        "mixed.example": ["93.184.215.14", "10.1.2.3"],
        "mapped.example": ["::ffff:169.254.169.254"],
        "nat64.example": ["64:ff9b::a9fe:a9fe"],
        "ula.example": ["2606:4700::1", "fd00:ec2::254"],
      });
      // loopback without allowLoopback
      assert.deepEqual(await noConnection(() => fetchDocumentNode(request("/doc", { host: "docs.example" }), { ca: cert, lookup })), { failed: "refused" });
      // any special-use address refuses the name, loopback allowed or not
      for (const host of ["mixed.example", "mapped.example", "nat64.example", "ula.example"]) {
        assert.deepEqual(await noConnection(() => node(request("/doc", { host }), { lookup })), { failed: "refused" }, host);
      }
    });

    test("a name that does not resolve is unreachable", async () => {
      assert.deepEqual(await node(request("/doc", { host: "nowhere.example" }), { lookup: resolver({}) }), { failed: "unreachable" });
    });

    test("http:, userinfo and private names are refused before any connection", async () => {
      for (const url of [`http://localhost:${port}/doc`, `https://u:p@localhost:${port}/doc`, `https://metadata.google.internal:${port}/doc`]) {
        assert.deepEqual(await noConnection(() => node({ url, maxBytes: MAX, timeoutMs: 2000 })), { failed: "refused" }, url);
      }
    });

    test("bad arguments are programming errors (the promise rejects)", async () => {
      await assert.rejects(fetchDocumentNode({ url: "https://a.example/c", maxBytes: 1.5, timeoutMs: 10 }), TypeError);
      await assert.rejects(fetchDocumentNode({ url: "https://a.example/c", maxBytes: 10 }), TypeError);
      await assert.rejects(fetchDocumentNode(REQ(), { lookup: 1 }), TypeError);
    });
  });

  // Node's global fetch trusts an extra CA only through NODE_EXTRA_CA_CERTS, read at start: the
  // web variant runs in a child process with it set, against the same server. Every case runs in
  // one child; each test checks its answer.
  describe("fetchDocument (web) on Node's fetch", () => {
    const cases = {
      doc: () => request("/doc"),
      redirect: () => request("/redirect"),
      missing: () => request("/missing"),
      exact: () => request(`/chunked/${MAX}`),
      sizedOver: () => request(`/sized/${MAX + 1}`),
      chunkedOver: () => request(`/chunked/${MAX + 1}`),
      hang: () => request("/hang", { timeoutMs: TIMEOUT }),
      stall: () => request("/stall", { timeoutMs: TIMEOUT }),
      closed: () => ({ url: `https://localhost:${closedPort}/c`, maxBytes: MAX, timeoutMs: 2000 }),
    };
    let answers;
    let requestsBefore;

    before(async () => {
      const child = `
        const { fetchDocument } = await import(process.argv[1]);
        const out = {};
        for (const [name, request] of Object.entries(JSON.parse(process.argv[2]))) {
          const started = Date.now();
          const answer = await fetchDocument(request, { allowLoopback: true });
          const body = answer.body && { isUint8Array: answer.body instanceof Uint8Array, text: new TextDecoder().decode(answer.body) };
          out[name] = { ...answer, body, elapsed: Date.now() - started };
        }
        process.stdout.write(JSON.stringify(out));`;
      const requests = Object.fromEntries(Object.entries(cases).map(([name, make]) => [name, make()]));
      requestsBefore = seen.length;
      const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", child, new URL("../src/documents.js", import.meta.url).href, JSON.stringify(requests)], {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: certPath },
        timeout: 30_000,
      });
      answers = JSON.parse(stdout);
    });

    const empty = { isUint8Array: true, text: "" };
    const answer = (name) => {
      const { elapsed, ...rest } = answers[name];
      return rest;
    };

    test("200: status, Cache-Control and the body", () => {
      assert.deepEqual(answer("doc"), { status: 200, cacheControl: "max-age=300", body: { isUint8Array: true, text: DOC } });
    });

    test("302 is the answer, not followed; Accept is application/json", () => {
      assert.deepEqual(answer("redirect"), { status: 302, cacheControl: "no-store", body: empty });
      const paths = seen.slice(requestsBefore).map((r) => r.path);
      assert.equal(paths.filter((p) => p === "/doc").length, 1); // the doc case's own request only
      assert.ok(seen.slice(requestsBefore).every((r) => r.accept === "application/json"));
    });

    test("404 is answered with an empty body", () => {
      assert.deepEqual(answer("missing"), { status: 404, cacheControl: null, body: empty });
    });

    test("exactly maxBytes succeeds; one more is too_large, with or without Content-Length", () => {
      assert.equal(answer("exact").body.text.length, MAX);
      assert.deepEqual(answer("sizedOver"), { failed: "too_large" });
      assert.deepEqual(answer("chunkedOver"), { failed: "too_large" });
    });

    test("a server that never answers, and a stalled body, time out within timeoutMs", () => {
      for (const name of ["hang", "stall"]) {
        const { elapsed, ...rest } = answers[name];
        assert.deepEqual(rest, { failed: "timeout" }, name);
        assert.ok(elapsed >= TIMEOUT - 5 && elapsed < TIMEOUT + SLACK, `${name}: elapsed ${elapsed} ms`);
      }
    });

    test("a refused port is unreachable", () => {
      assert.deepEqual(answer("closed"), { failed: "unreachable" });
    });
  });
});
