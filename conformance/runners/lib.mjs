// What the JavaScript runners share: loading and validating the corpus, turning a step into
// bytes, observing a response the same way in every layer, matching it against the step's
// expectation, captures. The Rust runner (tests/src/conformance.rs) implements the same rules;
// conformance/README.md states them once for both.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";

export const CONFORMANCE = dirname(dirname(fileURLToPath(import.meta.url)));
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));

/** Every vector file, validated against schema.json; vectors resolved to their setup. */
export function loadCorpus() {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowMatchingProperties: true, allowUnionTypes: true });
  const validate = ajv.compile(readJson(join(CONFORMANCE, "schema.json")));
  const vectors = [];
  const ids = new Set();
  const dir = join(CONFORMANCE, "vectors");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
    const doc = readJson(join(dir, file));
    if (!validate(doc)) {
      throw new Error(`${file} does not follow schema.json:\n${ajv.errorsText(validate.errors, { separator: "\n" })}`);
    }
    for (const vector of doc.vectors) {
      if (ids.has(vector.id)) throw new Error(`${file}: vector id ${vector.id} is used twice`);
      ids.add(vector.id);
      vectors.push({ file, vector, ...resolveSetup(vector) });
    }
  }
  return vectors;
}

/** The vector's configuration (its setup's, with `policy` merged over) and users. */
export function resolveSetup(vector) {
  const setup = typeof vector.setup === "string" ? readJson(join(CONFORMANCE, "setups", `${vector.setup}.json`)) : vector.setup;
  const config = structuredClone(setup.config);
  if (vector.policy) config.policy = { ...config.policy, ...vector.policy };
  return { config, users: setup.users };
}

/** Why `layer` cannot run the vector, if it says so (`http` covers both live hosts). */
export function unsupportedReason(vector, layer) {
  const reasons = vector.unsupported ?? {};
  return reasons[layer] ?? (layer.startsWith("http-") ? reasons.http : undefined);
}

/** The step's entropy: its hex bytes repeated to `length`. */
export function entropyBytes(hex, length) {
  const unit = Buffer.from(hex, "hex");
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = unit[i % unit.length];
  return bytes;
}

/** A `text` of the schema as bytes. */
export function textBytes(text) {
  if (typeof text === "string") return Buffer.from(text, "utf8");
  if (!Array.isArray(text)) return Buffer.from(text.hex, "hex");
  return Buffer.concat(text.map((part) => Buffer.from(typeof part === "string" ? part : part.repeat.repeat(part.count), "utf8")));
}

/** A `text` as a string (queries and header values). */
export const textString = (text) => (text === undefined ? "" : textBytes(text).toString("utf8"));

/** `value` with every `${name}` in its strings replaced by the captured value. */
export function substitute(value, captures) {
  if (typeof value === "string") {
    return value.replace(/\$\{([a-z][a-z0-9_]*)\}/g, (_, name) => {
      if (!(name in captures)) throw new Error(`\${${name}} is used before a step captured it`);
      return String(captures[name]);
    });
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, captures));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, captures)]));
  return value;
}

/** The user named `name` in the setup. */
export function userNamed(users, name) {
  const user = users.find((u) => u.name === name);
  if (!user) throw new Error(`no user named ${name} in the setup`);
  return user;
}

/** An HTTP input as method, path, query string, header pairs and body bytes. */
export function requestParts(input) {
  return {
    method: input.method,
    path: input.path,
    query: textString(input.query),
    headers: (input.headers ?? []).map(([name, value]) => [name, textString(value)]),
    body: input.body === undefined ? undefined : textBytes(input.body),
  };
}

const DPOP_KEYS = readJson(join(CONFORMANCE, "dpop-keys.json")).keys;
const b64url = (bytes) => Buffer.from(bytes).toString("base64url");

/**
 * `input` with the DPoP proof its `dpop` describes (README, "DPoP proofs") as its last
 * `DPoP` header: ES256 over `<header>.<claims>` by the key `signed_by` (else `key`), the
 * header carrying `key`'s public JWK.
 */
export async function withProof(input, at) {
  const { dpop, ...rest } = input;
  const { kty, crv, x, y, d } = DPOP_KEYS[dpop.key];
  const jwk = dpop.with_private_key ? { crv, d, kty, x, y } : { crv, kty, x, y };
  const header = { typ: dpop.typ ?? "dpop+jwt", alg: "ES256", jwk };
  const claims = { jti: dpop.jti, htm: dpop.htm, htu: dpop.htu, iat: dpop.iat ?? at };
  if (dpop.nonce !== undefined) claims.nonce = dpop.nonce;
  if (dpop.ath_of !== undefined) claims.ath = b64url(createHash("sha256").update(dpop.ath_of).digest());
  const input_ = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const signer = DPOP_KEYS[dpop.signed_by ?? dpop.key];
  const key = await crypto.subtle.importKey("jwk", { ...signer, ext: true }, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, new TextEncoder().encode(input_));
  return { ...rest, headers: [...(rest.headers ?? []), ["DPoP", `${input_}.${b64url(new Uint8Array(signature))}`]] };
}

/** The consent page's form, as the user's browser posts it. */
export const consentForm = (input) => new URLSearchParams({ query: input.query, decision: input.kind === "consent" ? "allow" : "deny" }).toString();

const HTML_ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" };
const unescapeHtml = (text) => text.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => HTML_ENTITIES[e]);

/**
 * A user-facing page, read from the `data-page` element every page of the flow carries
 * (`data-app`, `data-scopes`, `data-access-type`, `data-code`, `data-error`, `data-client-host`,
 * `data-unverified`).
 */
export function pageOf(html) {
  const tag = /<[a-z][a-z0-9]*\s[^>]*\bdata-page="[^"]*"[^>]*>/.exec(html)?.[0];
  if (!tag) return undefined;
  const attributes = Object.fromEntries([...tag.matchAll(/\bdata-([a-z-]+)="([^"]*)"/g)].map(([, name, value]) => [name, unescapeHtml(value)]));
  const page = { kind: attributes.page };
  for (const [attribute, field] of [["app", "app"], ["access-type", "access_type"], ["code", "code"], ["error", "error"], ["client-host", "client_host"], ["unverified", "unverified"]]) {
    if (attributes[attribute] !== undefined) page[field] = attributes[attribute];
  }
  for (const list of ["scopes", "resources"]) if (attributes[list] !== undefined) page[list] = attributes[list].split(" ").filter(Boolean);
  return page;
}

/** The redirect in a `Location`: target, and the query and fragment as ordered pairs. */
function redirectOf(location) {
  const hashAt = location.indexOf("#");
  const beforeHash = hashAt < 0 ? location : location.slice(0, hashAt);
  const queryAt = beforeHash.indexOf("?");
  return {
    target: queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt),
    query: queryAt < 0 ? [] : [...new URLSearchParams(beforeHash.slice(queryAt + 1))],
    fragment: hashAt < 0 ? [] : [...new URLSearchParams(location.slice(hashAt + 1))],
  };
}

/** An observation of an HTTP answer: the same shape the Rust runner builds from the core's outcome. */
export function observeHttp(status, headerPairs, body) {
  const headers = headerPairs.map(([name, value]) => [name.toLowerCase(), value]);
  const observation = { status, headers, body, audit: [] };
  const contentType = headers.find(([n]) => n === "content-type")?.[1] ?? "";
  if (contentType.startsWith("application/json")) {
    try {
      observation.json = JSON.parse(body);
    } catch {
      // Not JSON after all: an expectation on `json` will say so.
    }
  }
  const location = headers.find(([n]) => n === "location")?.[1];
  if (status >= 300 && status < 400 && location !== undefined) observation.redirect = redirectOf(location);
  if (contentType.startsWith("text/html")) observation.page = pageOf(body);
  return observation;
}

const typeOf = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
const isOperator = (e) => typeOf(e) === "object" && Object.keys(e).length === 1 && Object.keys(e)[0].startsWith("$");
const equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const show = (v) => (v === undefined ? "(absent)" : JSON.stringify(v));

/** Whether `actual` matches `expected` (see the schema's `matcher`); mismatches are pushed to `problems`. */
export function match(expected, actual, path, problems) {
  if (isOperator(expected)) {
    const [[op, arg]] = Object.entries(expected);
    const ok = {
      $absent: () => actual === undefined,
      $present: () => actual !== undefined,
      $re: () => typeof actual === "string" && new RegExp(arg, "u").test(actual),
      $ne: () => actual !== undefined && !equal(actual, arg),
      $type: () => actual !== undefined && typeOf(actual) === arg,
    }[op]();
    if (!ok) problems.push(`${path}: expected ${op} ${show(arg)}, got ${show(actual)}`);
  } else if (typeOf(expected) === "object") {
    if (typeOf(actual) !== "object") return problems.push(`${path}: expected an object, got ${show(actual)}`);
    for (const [key, value] of Object.entries(expected)) match(value, actual[key], `${path}.${key}`, problems);
  } else if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return problems.push(`${path}: expected ${show(expected)}, got ${show(actual)}`);
    expected.forEach((e, i) => match(e, actual[i], `${path}[${i}]`, problems));
  } else if (expected !== actual) {
    problems.push(`${path}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

const firstValues = (pairs) => {
  const object = {};
  for (const [k, v] of pairs) if (!(k in object)) object[k] = v;
  return object;
};
const sameKeys = (expected, actual) => equal([...expected].sort(), [...actual].sort());

/** Every way `observation` differs from `expect`. */
export function check(expect, observation) {
  const problems = [];
  if (expect.status !== undefined && expect.status !== observation.status) {
    problems.push(`status: expected ${expect.status}, got ${observation.status}`);
  }
  for (const [name, expected] of Object.entries(expect.headers ?? {})) match(expected, headerValue(observation, name), `headers.${name}`, problems);
  if (expect.json !== undefined) match(expect.json, observation.json, "json", problems);
  if (expect.json_keys !== undefined && !sameKeys(expect.json_keys, Object.keys(observation.json ?? {}))) {
    problems.push(`json keys: expected ${show(expect.json_keys)}, got ${show(Object.keys(observation.json ?? {}))}`);
  }
  if (expect.redirect !== undefined) {
    const redirect = observation.redirect;
    if (!redirect) {
      problems.push("redirect: expected a redirect, got none");
    } else {
      match(expect.redirect.target, redirect.target, "redirect.target", problems);
      for (const part of ["query", "fragment"]) {
        if (expect.redirect[part] !== undefined) match(expect.redirect[part], firstValues(redirect[part]), `redirect.${part}`, problems);
        const keys = expect.redirect[`${part}_keys`];
        if (keys !== undefined && !sameKeys(keys, redirect[part].map(([k]) => k))) {
          problems.push(`redirect.${part} keys: expected ${show(keys)}, got ${show(redirect[part].map(([k]) => k))}`);
        }
      }
    }
  }
  if (expect.page !== undefined) match(expect.page, observation.page, "page", problems);
  if (expect.outcome !== undefined && expect.outcome !== observation.outcome) {
    problems.push(`outcome: expected ${expect.outcome}, got ${show(observation.outcome)}`);
  }
  match(expect.audit ?? [], observation.audit, "audit", problems);
  return problems;
}

/** The values of header `name`, joined as one field value (RFC 9110 §5.3). */
function headerValue(observation, name) {
  const values = (observation.headers ?? []).filter(([n]) => n === name).map(([, v]) => v);
  return values.length ? values.join(", ") : undefined;
}

/** The value at a capture path of the schema. */
export function capture(observation, path) {
  const [head, ...rest] = path.split(".");
  let value;
  if (head === "status") value = observation.status;
  else if (head === "headers") value = headerValue(observation, rest[0]);
  else if (head === "json") value = rest.reduce((v, k) => (v && typeof v === "object" ? v[k] : undefined), observation.json);
  else if (head === "redirect") value = rest[0] === "target" ? observation.redirect?.target : firstValues(observation.redirect?.[rest[0]] ?? [])[rest[1]];
  else if (head === "page") value = observation.page?.[rest[0]];
  if (typeof value !== "string" && typeof value !== "number") throw new Error(`capture ${path}: nothing there (${show(value)})`);
  return value;
}

/** A short account of an observation, for failure messages. */
function describe(observation) {
  const { status, headers, json, redirect, page, outcome, audit, body } = observation;
  return JSON.stringify({ status, headers, json, redirect, page, outcome, audit, ...(json === undefined && page === undefined && { body: body?.slice(0, 300) }) });
}

/**
 * A step's web as the host's fetch answers from it: URL → `{ status, cacheControl, body }` (the
 * body's bytes) or `{ failed }`.
 */
export function webAnswers(web) {
  const answers = new Map();
  for (const [url, page] of Object.entries(web ?? {})) {
    answers.set(url, page.fails ? { failed: page.fails } : { status: page.status, cacheControl: page.cache_control ?? null, body: new Uint8Array(page.body === undefined ? 0 : textBytes(page.body)) });
  }
  return answers;
}

/** A step's web as test mode's /__test__/clock takes it: bodies in hex. */
export const webForHost = (web) =>
  Object.fromEntries(Object.entries(web ?? {}).map(([url, page]) => [url, page.fails ? { fails: page.fails } : { status: page.status, ...(page.cache_control !== undefined && { cache_control: page.cache_control }), body: page.body === undefined ? "" : textBytes(page.body).toString("hex") }]));

/**
 * Runs one vector through a layer: `layer.open({config, users})` gives a session whose
 * `step(at, entropy, input, web)` answers with an observation (and the URLs it fetched from
 * `web`, as `fetched`). Throws at the first mismatch.
 */
export async function runVector({ vector, config, users }, layer) {
  const session = await layer.open({ config, users });
  const captures = {};
  try {
    for (const [index, raw] of vector.steps.entries()) {
      const step = substitute(raw, captures);
      if (step.input.dpop) step.input = await withProof(step.input, step.at);
      const web = step.web ?? {};
      const observation = await session.step(step.at, entropyBytes(step.entropy, layer.entropyLength), step.input, web);
      const problems = check(step.expect, observation);
      // A fetch the step's web does not hold is one nobody expected (a cached document fetched again).
      for (const url of observation.fetched ?? []) {
        if (!Object.hasOwn(web, url)) problems.push(`fetched ${url}, which this step's web does not hold (a fetch where none was expected)`);
      }
      if (problems.length > 0) {
        throw new Error(`${vector.id}, step ${index + 1}${step.note ? ` (${step.note})` : ""}:\n  ${problems.join("\n  ")}\nobserved: ${describe(observation)}`);
      }
      for (const [name, path] of Object.entries(step.capture ?? {})) captures[name] = capture(observation, path);
    }
  } finally {
    await session.close?.();
  }
}
