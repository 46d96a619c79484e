// Fetching Client ID Metadata Documents on Node, with what the web variant cannot do: every
// address the name resolves to is vetted, and the socket connects to a vetted address. The
// check happens inside the connection's own `lookup`, so there is no second resolution an
// attacker's DNS could answer differently (no DNS rebinding between check and connect).
import { lookup as dnsLookup } from "node:dns";
import { request as httpsRequest } from "node:https";
import { createSecureContext, rootCertificates } from "node:tls";
import { checkDocumentUrl, isLoopbackAddress, isSpecialUseAddress } from "./documents.js";

const EMPTY = new Uint8Array(0);

/** Marks the error our lookup fails with, to answer `refused` rather than `unreachable`. */
const REFUSED = Symbol("refused address");

/**
 * The TLS context trusting Node's roots plus `ca`, made once per `ca`: building one from ~150
 * roots takes tens of milliseconds, which would otherwise come out of every fetch's deadline.
 */
let trusted = { ca: undefined, context: undefined };
function contextTrusting(ca) {
  if (trusted.ca !== ca) trusted = { ca, context: createSecureContext({ ca: [...rootCertificates, ca] }) };
  return trusted.context;
}

/** Throws on arguments no network condition explains (a programming error). */
function assertRequest(request) {
  const { url, maxBytes, timeoutMs } = request ?? {};
  if (typeof url !== "string") throw new TypeError("fetchDocumentNode: url must be a string");
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new TypeError("fetchDocumentNode: maxBytes must be a non-negative integer");
  if (typeof timeoutMs !== "number" || !(timeoutMs > 0) || !Number.isFinite(timeoutMs)) throw new TypeError("fetchDocumentNode: timeoutMs must be a positive number");
}

/** Whether one resolved address may be connected to. */
const permitted = (address, allowLoopback) => !isSpecialUseAddress(address) || (allowLoopback && isLoopbackAddress(address));

/**
 * A `lookup` for `net.connect` that resolves every address of the name and refuses them all if
 * any one is special-use: a name with one public and one private address could otherwise be
 * steered to the private one (Happy Eyeballs tries several).
 */
function vettedLookup(resolve, allowLoopback) {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error);
      const list = Array.isArray(addresses) ? addresses : [];
      if (list.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }));
      const bad = list.find(({ address }) => !permitted(address, allowLoopback));
      if (bad) {
        return callback(Object.assign(new Error(`${hostname} resolves to a special-use address (${bad.address})`), { code: "ESPECIALUSE", [REFUSED]: true }));
      }
      if (options.all) callback(null, list);
      else callback(null, list[0].address, list[0].family);
    });
  };
}

/**
 * Fetches a client's metadata document with `node:https`, for the core's
 * `{ url, maxBytes, timeoutMs }`; the same answers as `fetchDocument` (documents.js).
 *
 * - `refused`: the URL fails `checkDocumentUrl`, or ANY address its name resolves to is
 *   special-use (loopback only with `allowLoopback`); no connection is made.
 * - GET with `Accept: application/json`; redirects are never followed (node:https does not):
 *   a 3xx is the answer, with an empty body.
 * - Any status but 200 is answered with an empty body, without reading it.
 * - `too_large`: Content-Length above `maxBytes`, or more than `maxBytes` bytes arrive (the
 *   connection is destroyed at once).
 * - `timeout`: the whole fetch, body included, took longer than `timeoutMs`.
 * - `unreachable`: DNS, connection or TLS failure (the certificate is checked against the URL's
 *   host, which is also the SNI), or the body broke off.
 *
 * Never throws for any of these; only bad arguments throw (the promise rejects).
 *
 * @param {{ url: string, maxBytes: number, timeoutMs: number }} request the core's request
 * @param {{ allowLoopback?: boolean, ca?: string | Buffer, lookup?: typeof import("node:dns").lookup }} [options]
 *   `allowLoopback` admits loopback hosts and addresses (development, tests); `ca` is one more
 *   trusted CA in PEM, on top of Node's bundled roots (a test's self-signed certificate);
 *   `lookup` replaces `dns.lookup` as the resolver (same signature; a host's own resolver, or
 *   a test's) — its answers are vetted like the system's
 * @returns {Promise<import("./documents.js").DocumentAnswer>}
 */
export async function fetchDocumentNode(request, { allowLoopback = false, ca, lookup = dnsLookup } = {}) {
  assertRequest(request);
  if (typeof lookup !== "function") throw new TypeError("fetchDocumentNode: lookup must be a function");
  const { url, maxBytes, timeoutMs } = request;
  if (checkDocumentUrl(url, { allowLoopback })) return { failed: "refused" };

  const parsed = new URL(url);
  const literal = parsed.hostname.startsWith("[");
  const host = literal ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const isAddress = literal || /^[\d.]+$/.test(host); // the URL parser leaves IPv4 as a dotted quad

  return new Promise((resolve) => {
    let done = false;
    let response = null;
    const finish = (answer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      response?.destroy();
      req.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => finish({ failed: "timeout" }), timeoutMs);

    const req = httpsRequest({
      hostname: host,
      port: parsed.port || 443,
      path: `${parsed.pathname}${parsed.search}`,
      method: "GET",
      headers: { accept: "application/json" },
      // An IP literal is vetted above and never looked up (net connects to it directly); SNI
      // may not carry an address (RFC 6066), the certificate is then checked against it.
      servername: isAddress ? undefined : host,
      lookup: vettedLookup(lookup, allowLoopback),
      secureContext: ca === undefined ? undefined : contextTrusting(ca),
      agent: false, // a fresh socket: nothing pooled from another fetch
    });
    req.on("error", (error) => finish({ failed: error?.[REFUSED] ? "refused" : "unreachable" }));
    req.on("response", (res) => {
      response = res;
      const status = res.statusCode;
      const header = res.headers["cache-control"];
      const cacheControl = header === undefined ? null : String(header);
      if (status !== 200) return finish({ status, cacheControl, body: EMPTY });
      const declared = res.headers["content-length"];
      if (declared !== undefined && Number(declared) > maxBytes) return finish({ failed: "too_large" });
      const chunks = [];
      let size = 0;
      res.on("data", (chunk) => {
        size += chunk.length;
        if (size > maxBytes) return finish({ failed: "too_large" });
        chunks.push(chunk);
      });
      res.on("end", () => {
        // A fresh array with its own buffer (Buffer.concat may hand out a slice of a shared pool).
        const body = new Uint8Array(size);
        let offset = 0;
        for (const chunk of chunks) {
          body.set(chunk, offset);
          offset += chunk.length;
        }
        finish({ status, cacheControl, body });
      });
      // Closed before the end: the connection broke off mid-body.
      res.on("error", () => finish({ failed: "unreachable" }));
      res.on("close", () => finish({ failed: "unreachable" }));
    });
    req.end();
  });
}
