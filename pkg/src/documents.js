// Fetching OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document-01)
// for the core. The core names a URL with a size cap and a deadline, `{ url, maxBytes, timeoutMs }`;
// the host fetches it and answers with what came back. The URL is a client_id, chosen by whoever
// starts an authorization request, so this fetch is the classic server-side request forgery
// channel: everything here errs on the side of refusing.
//
// Runtime-neutral: only web-standard APIs (fetch, AbortController, URL, ReadableStream,
// setTimeout), for Cloudflare Workers (workerd) and any runtime with fetch. On Node every entry
// point fetches with `fetchDocumentNode` (documents-node.js) instead, which also vets the
// addresses a name resolves to.

/**
 * What is checked where, for the host's documentation and logs.
 *
 * - Both variants (`checkDocumentUrl`): `https:` only; no userinfo; no IP literal of a
 *   special-use address (RFC 6890 registries, see `isSpecialUseAddress`; IPv4 literals in any
 *   form the URL parser accepts, `127.1` and `2130706433` included); no single-label names (they
 *   resolve through search domains and hosts files, e.g. GCE's `metadata`); no `localhost`,
 *   `*.localhost`, or names under `local`, `internal` (`metadata.google.internal`),
 *   `localdomain`, `arpa` (`home.arpa`), `invalid`, `onion`, `alt`, `lan`, `home`, `corp`,
 *   `intranet`, `private`. Loopback (IP literal or `localhost`) only with `allowLoopback`.
 * - Both: redirects are never followed (a 3xx is the answer); a deadline over the whole fetch,
 *   body included; the body is counted as it streams and cut off past `maxBytes`.
 * - Node (`fetchDocumentNode`): additionally every address the name resolves to must not be
 *   special-use, and the connection goes to a vetted address (no DNS rebinding between the
 *   check and the connect); SNI and the certificate check use the URL's host.
 * - Workers (`fetchDocument`): the resolved address cannot be checked — workerd's fetch resolves
 *   names itself and exposes no address. Cloudflare's network does not let a Worker's
 *   subrequests reach private addresses, so a name pointing at 10.0.0.1 or 127.0.0.1 gets
 *   nowhere; that guarantee is the platform's, not this code's. Under `wrangler dev`, in
 *   self-hosted workerd, or in Node, the web variant has no such network behind it: a public
 *   name that resolves to a private address is NOT refused. So createAuthServer, with this as
 *   its fetcher, takes documents only from the `hosts` of `profile.clients.documents`, or from
 *   any host when the operator says `anyDocumentHostWithoutAddressCheck: true`.
 */
export const documentFetchLimits =
  "URL (both): https only, no userinfo, no special-use IP literal (RFC 6890; loopback only when allowed), " +
  "no single-label, localhost or private-use names (.local .internal .localdomain .arpa .invalid .onion .alt .lan .home .corp .intranet .private). " +
  "Fetch (both): no redirects followed, one deadline over the whole fetch, body capped while streaming. " +
  "Node (fetchDocumentNode): every resolved address must not be special-use and the connection goes to the vetted address. " +
  "Workers (fetchDocument): resolved addresses are not checked here; Cloudflare's network keeps Workers off private addresses (wrangler dev and self-hosted workerd do not), " +
  "so createAuthServer with this fetcher needs documents.hosts, or anyDocumentHostWithoutAddressCheck: true.";

const EMPTY = new Uint8Array(0);
const noop = () => {};

// ---------------------------------------------------------------------------------------------
// Addresses

/** One number of a WHATWG IPv4 address: decimal, 0x-hex or 0-octal; null when not a number. */
function ipv4Number(part) {
  if (part === "") return null;
  let radix = 10;
  let digits = part;
  if (/^0[xX]/.test(part)) {
    radix = 16;
    digits = part.slice(2);
  } else if (part.length > 1 && part[0] === "0") {
    radix = 8;
    digits = part.slice(1);
  }
  if (digits === "") return 0; // "0x" is zero to the URL parser
  const valid = radix === 16 ? /^[0-9a-fA-F]+$/ : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!valid.test(digits)) return null;
  const value = parseInt(digits, radix);
  return value > 0xffffffff ? null : value;
}

/**
 * The four bytes of an IPv4 address in any form the WHATWG URL parser (and inet_aton, which
 * getaddrinfo uses) accepts — `127.1`, `0x7f.1`, `2130706433` — or null. Accepting them all
 * keeps the classification in step with where a connection would actually go.
 */
function parseIPv4(text) {
  const parts = text.split(".");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length > 4) return null;
  const numbers = parts.map(ipv4Number);
  if (numbers.some((n) => n === null)) return null;
  const last = numbers.pop();
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) return null;
  const value = numbers.reduce((sum, n, i) => sum + n * 256 ** (3 - i), last);
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];
}

const DOTTED_QUAD = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** 16-bit words of IPv6 groups; a strict dotted quad is allowed as the last group when `quadLast`. */
function ipv6Words(groups, quadLast) {
  const words = [];
  for (let i = 0; i < groups.length; i++) {
    const group = groups[i];
    if (/^[0-9a-fA-F]{1,4}$/.test(group)) words.push(parseInt(group, 16));
    else if (quadLast && i === groups.length - 1 && DOTTED_QUAD.test(group)) {
      const [a, b, c, d] = group.split(".").map(Number);
      words.push((a << 8) | b, (c << 8) | d);
    } else return null;
  }
  return words;
}

/** The 16 bytes of an IPv6 address (RFC 4291 text forms, `::` and an embedded dotted quad), or null. */
function parseIPv6(text) {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const split = (half) => (half === "" ? [] : half.split(":"));
  let words;
  if (halves.length === 1) {
    words = ipv6Words(split(halves[0]), true);
    if (!words || words.length !== 8) return null;
  } else {
    const head = ipv6Words(split(halves[0]), false);
    const tail = ipv6Words(split(halves[1]), true);
    if (!head || !tail || head.length + tail.length > 7) return null;
    words = [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  }
  return words.flatMap((w) => [w >> 8, w & 255]);
}

/** Whether `bytes` starts with the first `bits` bits of `prefix`. */
function inPrefix(bytes, prefix, bits) {
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i] & mask) !== (prefix[i] & mask)) return false;
  }
  return true;
}

// IANA IPv4 Special-Purpose Address Registry (RFC 6890 and its updates), every entry — the
// globally reachable ones too (AS112, AMT, 6to4 relay): no client's document lives there.
const V4_SPECIAL = [
  ["0.0.0.0", 8], // "this network"; 0.0.0.0 reaches the local host on Linux
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT (Alibaba's metadata is 100.100.100.200)
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local: cloud metadata at 169.254.169.254
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.31.196.0", 24],
  ["192.52.193.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["192.175.48.0", 24],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, with 255.255.255.255
].map(([base, bits]) => [parseIPv4(base), bits]);

// Within 2000::/3 (global unicast), the IPv6 special-purpose registry's entries. Everything
// outside 2000::/3 is special anyway (see `classify`): ::, ::1, ::ffff:0:0/96, 64:ff9b:1::/48,
// 100::/64, fc00::/7, fe80::/10, fec0::/10, ff00::/8 and all unallocated space.
const V6_SPECIAL = [
  ["2001::", 23], // IETF protocol assignments, Teredo 2001::/32 among them
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: the embedded IPv4 is reached through a relay
  ["2620:4f:8000::", 48], // AS112
  ["3fff::", 20], // documentation (RFC 9637)
].map(([base, bits]) => [parseIPv6(base), bits]);

const V4_MAPPED = parseIPv6("::ffff:0:0");
const NAT64 = parseIPv6("64:ff9b::");

function classifyV4(bytes) {
  return {
    special: V4_SPECIAL.some(([base, bits]) => inPrefix(bytes, base, bits)),
    loopback: bytes[0] === 127,
  };
}

/**
 * `{ special, loopback }` for an IP address in text, or null when it is not one (a name). A zone
 * id (`fe80::1%eth0`) makes any IPv6 address special: only scoped, non-global addresses need one.
 */
function classify(ip) {
  if (typeof ip !== "string" || ip === "") return null;
  const v4 = parseIPv4(ip);
  if (v4) return classifyV4(v4);
  const zone = ip.indexOf("%");
  const bytes = parseIPv6(zone === -1 ? ip : ip.slice(0, zone));
  if (!bytes) return null;
  if (zone !== -1) return { special: true, loopback: false };
  // IPv4-mapped (::ffff:a.b.c.d, also written ::ffff:7f00:1) and NAT64's well-known prefix
  // (64:ff9b::/96) carry an IPv4 address that is where the packets end up: judge that one.
  if (inPrefix(bytes, V4_MAPPED, 96)) return classifyV4(bytes.slice(12));
  if (inPrefix(bytes, NAT64, 96)) return { special: classifyV4(bytes.slice(12)).special, loopback: false };
  const loopback = bytes.every((b, i) => b === (i === 15 ? 1 : 0));
  if (!inPrefix(bytes, [0x20], 3)) return { special: true, loopback };
  return { special: V6_SPECIAL.some(([base, bits]) => inPrefix(bytes, base, bits)), loopback: false };
}

/**
 * Whether `ip` is a special-use address (RFC 6890 and its updates; IANA's special-purpose
 * registries), IPv4 or IPv6. IPv4 in any form the URL parser accepts (`127.1`, `0x7f.0.0.1`,
 * `2130706433`); IPv6 with `::`, an embedded dotted quad, or a zone id (always special).
 * IPv4-mapped (`::ffff:0:0/96`) and NAT64 (`64:ff9b::/96`) addresses are judged by their
 * embedded IPv4; any IPv6 outside 2000::/3 (global unicast) is special.
 *
 * @param {string} ip an address in text, without brackets
 * @returns {boolean} true for a special-use address; false for a public address and for
 *   anything that is not an IP address (a name)
 */
export function isSpecialUseAddress(ip) {
  return classify(ip)?.special ?? false;
}

/**
 * Whether `ip` is a loopback address: 127.0.0.0/8, `::1`, or IPv4-mapped 127.0.0.0/8.
 *
 * @param {string} ip an address in text, without brackets
 * @returns {boolean}
 */
export function isLoopbackAddress(ip) {
  return classify(ip)?.loopback ?? false;
}

// ---------------------------------------------------------------------------------------------
// URLs

// Names that are private by convention or reservation (RFC 6761, 6762, 7686, 8375, 9476, ICANN's
// .internal, RFC 6762 appendix G's private TLDs). `.test` and `.example` are not here: RFC 6761
// asks software not to treat them specially.
const PRIVATE_SUFFIXES = ["local", "internal", "localdomain", "arpa", "invalid", "onion", "alt", "lan", "home", "corp", "intranet", "private"];

/**
 * Checks a document URL before any connection: `https:` only; no userinfo; no special-use IP
 * literal (loopback only with `allowLoopback`); no single-label names; no `localhost` or
 * `*.localhost` (unless `allowLoopback`); no names under private-use suffixes (`.local`,
 * `.internal` — `metadata.google.internal` — `.localdomain`, `.home.arpa` and the rest of
 * `.arpa`, `.invalid`, `.onion`, `.alt`, `.lan`, `.home`, `.corp`, `.intranet`, `.private`).
 * It cannot know where a name resolves to: see `documentFetchLimits`.
 *
 * @param {string} url
 * @param {{ allowLoopback?: boolean }} [options] `allowLoopback` admits 127/8, `::1` and
 *   `localhost` (for development and tests)
 * @returns {null | "refused"} null when the URL may be fetched
 */
export function checkDocumentUrl(url, { allowLoopback = false } = {}) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return "refused";
  }
  if (parsed.protocol !== "https:") return "refused";
  if (parsed.username !== "" || parsed.password !== "") return "refused";
  // The URL parser has already turned every IPv4 form into a dotted quad.
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const address = classify(host);
  if (address) return address.special && !(allowLoopback && address.loopback) ? "refused" : null;
  const name = host.toLowerCase().replace(/\.+$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) return allowLoopback ? null : "refused";
  if (!name.includes(".")) return "refused";
  if (PRIVATE_SUFFIXES.some((suffix) => name.endsWith(`.${suffix}`))) return "refused";
  return null;
}

// ---------------------------------------------------------------------------------------------
// Fetching

/** Throws on arguments no network condition explains (a programming error). */
function assertRequest(request) {
  const { url, maxBytes, timeoutMs } = request ?? {};
  if (typeof url !== "string") throw new TypeError("fetchDocument: url must be a string");
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new TypeError("fetchDocument: maxBytes must be a non-negative integer");
  if (typeof timeoutMs !== "number" || !(timeoutMs > 0) || !Number.isFinite(timeoutMs)) throw new TypeError("fetchDocument: timeoutMs must be a positive number");
}

/** Whether a Content-Length header already says the body is too large. */
const declaredTooLarge = (contentLength, maxBytes) => contentLength != null && /^\s*\d+\s*$/.test(contentLength) && Number(contentLength) > maxBytes;

/** The chunks in one fresh Uint8Array (its own buffer: nothing else shares it). */
function joined(chunks, size) {
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

const TIMED_OUT = Symbol("timed out");

/**
 * @typedef {{ status: number, cacheControl: string | null, body: Uint8Array }
 *   | { failed: "refused" | "too_large" | "timeout" | "unreachable" }} DocumentAnswer
 * What came back: a status with the Cache-Control header and the body (empty unless the status
 * is 200), or why nothing usable came back.
 */

/**
 * Fetches a client's metadata document with web-standard `fetch` (Workers, or any runtime), for
 * the core's `{ url, maxBytes, timeoutMs }`.
 *
 * - `refused`: the URL fails `checkDocumentUrl`; nothing is fetched.
 * - GET with `Accept: application/json` and `redirect: "manual"`: a 3xx is the answer (status,
 *   Cache-Control, empty body), never followed. Where `manual` yields an opaque-redirect
 *   response (browsers, some fetch implementations: status 0, no headers), the answer is status
 *   302 with no Cache-Control: a redirect whose code and target cannot be seen.
 * - Any status but 200 is answered with an empty body; the body is cancelled, not read.
 * - `too_large`: Content-Length above `maxBytes`, or more than `maxBytes` bytes streamed (the
 *   stream is cancelled at once).
 * - `timeout`: the whole fetch, body included, took longer than `timeoutMs` (it is aborted).
 * - `unreachable`: DNS, connection or TLS failure, or the body broke off.
 *
 * Never throws for any of these; only bad arguments throw (the promise rejects).
 * Resolved addresses are not checked here — see `documentFetchLimits`.
 *
 * @param {{ url: string, maxBytes: number, timeoutMs: number }} request the core's request
 * @param {{ fetch?: typeof globalThis.fetch, allowLoopback?: boolean }} [options] `fetch`
 *   replaces the global one (a Worker's service binding, say); `allowLoopback` admits loopback
 *   hosts (development)
 * @returns {Promise<DocumentAnswer>}
 */
export async function fetchDocument(request, { fetch = globalThis.fetch, allowLoopback = false } = {}) {
  assertRequest(request);
  if (typeof fetch !== "function") throw new TypeError("fetchDocument: fetch must be a function");
  const { url, maxBytes, timeoutMs } = request;
  if (checkDocumentUrl(url, { allowLoopback })) return { failed: "refused" };

  // One deadline for everything. Each step is raced against it as well as aborted by it: a
  // fetch (or a service binding) that ignores the signal still cannot hold us past it.
  const controller = new AbortController();
  let expired = false;
  let timer;
  const deadline = new Promise((resolve) => {
    timer = setTimeout(() => {
      expired = true;
      resolve(TIMED_OUT);
      controller.abort();
    }, timeoutMs);
  });
  const within = (promise) => Promise.race([promise, deadline]);
  const failure = () => ({ failed: expired ? "timeout" : "unreachable" });

  try {
    let response;
    let pending;
    try {
      pending = Promise.resolve(fetch(url, { method: "GET", headers: { accept: "application/json" }, redirect: "manual", signal: controller.signal }));
      response = await within(pending);
    } catch {
      return failure();
    }
    if (response === TIMED_OUT) {
      // Should the response still come, nobody reads it.
      pending.then((late) => late?.body?.cancel().catch(noop), noop);
      return { failed: "timeout" };
    }
    // Response.error() (a network error as a value), or not a Response at all.
    if (response?.type === "error" || typeof response?.headers?.get !== "function") return { failed: "unreachable" };
    if (response.type === "opaqueredirect") {
      response.body?.cancel().catch(noop);
      return { status: 302, cacheControl: null, body: EMPTY };
    }
    const { status } = response;
    const cacheControl = response.headers.get("cache-control");
    if (status !== 200) {
      response.body?.cancel().catch(noop);
      return { status, cacheControl, body: EMPTY };
    }
    if (declaredTooLarge(response.headers.get("content-length"), maxBytes)) {
      response.body?.cancel().catch(noop);
      return { failed: "too_large" };
    }
    if (!response.body) return { status, cacheControl, body: EMPTY };

    const reader = response.body.getReader();
    const chunks = [];
    let size = 0;
    for (;;) {
      let step;
      try {
        step = await within(reader.read());
      } catch {
        return failure();
      }
      if (step === TIMED_OUT) {
        reader.cancel().catch(noop);
        return { failed: "timeout" };
      }
      if (step.done) break;
      size += step.value.byteLength;
      if (size > maxBytes) {
        reader.cancel().catch(noop);
        return { failed: "too_large" };
      }
      chunks.push(step.value);
    }
    return { status, cacheControl, body: joined(chunks, size) };
  } finally {
    clearTimeout(timer);
  }
}
