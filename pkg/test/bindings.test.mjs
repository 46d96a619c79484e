// The wasm bindings: each step of a request crosses once each way, packed in bytes (keys,
// puts, a complete response, a principal out, read in the module's memory; a read's records
// in), 64-bit values stay exact or are refused, refusals come with their reason, and misuse
// throws real Errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createCore, checkConfig, entropyLength } from "../src/node.js";
import { packRecords, readStep } from "../src/packed.js";
import { ALICE, CONF_APP, CONF_REDIRECT, GET_ACCOUNT, SERVER_KEY, config, form, pkceQuery } from "./fixtures.mjs";

const NOW = 1_700_000_000;
const NOTHING = new Map();
const entropy = () => new Uint8Array(entropyLength()).fill(7);
const consentForm = (query = pkceQuery(), decision = "allow") => ({
  method: "POST",
  path: "/oauth2/authorize",
  headers: ["content-type", "application/x-www-form-urlencoded", "sec-fetch-site", "same-origin"],
  body: new TextEncoder().encode(new URLSearchParams({ query, decision }).toString()),
  user: ALICE,
});
const header = (reply, name) => reply.headers.find(([n]) => n.toLowerCase() === name)?.[1];
/** A read's records: `version` and `bytes` under the first key, nothing under the others. */
const firstStored = (keys, version, bytes) => new Map([[keys[0], { version, bytes }]]);

test("read, write and respond each cross once each way, packed in bytes", () => {
  const core = createCore(config());
  const request = core.request(consentForm(), NOW, entropy());
  const address = request.step();
  assert.equal(typeof address, "number", "a step is read where it lies in the module's memory");
  const read = readStep(address);
  assert.equal(read.kind, "r");
  assert.match(
    read.keys.join("\0"),
    new RegExp(`^([A-Za-z0-9_-]{16})/link:pkce-app:${ALICE.account_id}\0\\1/ledger:$`),
    "the keys (the user's link and ledger, in their partition), in one crossing",
  );
  const write = readStep(request.found(packRecords(read.keys, NOTHING)));
  assert.equal(write.kind, "w", "the records go in and the next step comes out in one crossing");
  const { puts, audit } = write.transaction;
  assert.equal(puts.length, 3);
  assert.match(puts[0].key, /^[A-Za-z0-9_-]{16}\/code:[A-Za-z0-9_-]{43}$/);
  assert.equal(puts[0].expect, null, "a new code's key must be absent");
  assert.ok(puts[0].bytes instanceof Uint8Array && puts[0].bytes.length > 0);
  assert.equal(puts[0].bytes.byteOffset, 0, "each put's bytes are an array of their own");
  assert.equal(puts[0].purgeAfter, NOW + 600 + 600, "a code is kept one lifetime past its expiry");
  assert.equal(puts[1].purgeAfter, null, "a consenting link is kept (only an unlink ends it)");
  assert.match(puts[2].key, /^[A-Za-z0-9_-]{16}\/ledger:$/, "a new link moves the account's ledger on");
  assert.equal(puts[2].expect, null);
  assert.equal(puts[2].purgeAfter, NOW + 2 * 14_400, "a ledger is kept two access-token lifetimes past an end");
  assert.equal(audit[0].event, "code_issued");
  const reply = readStep(request.advance("committed"));
  assert.equal(reply.kind, "p");
  assert.equal(reply.status, 302);
  assert.match(header(reply, "location"), /^http:\/\/127\.0\.0\.1:8765\/cb\?code=[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}&state=xyz$/);
  assert.equal(header(reply, "cache-control"), "no-store");
  assert.equal(reply.outcome, "redirect");
  assert.equal(reply.refusal, null);
  request.free();

  const refused = core.request({ path: "/oauth2/token", ...form({ grant_type: "password" }) }, NOW, entropy());
  const answer = readStep(refused.step());
  assert.deepEqual([answer.kind, answer.status, answer.outcome, answer.refusal], ["p", 400, "refused", "unsupported_grant_type"]);
  assert.equal(JSON.parse(answer.body).error, "unsupported_grant_type");
  refused.free();
});

test("every outcome comes with a complete response and its name", () => {
  const core = createCore(config());
  const finish = (request) => {
    let step = readStep(request.step());
    while (step.kind === "r") step = readStep(request.found(packRecords(step.keys, NOTHING)));
    if (step.kind === "w") step = readStep(request.advance("committed"));
    request.free();
    return step;
  };
  const signIn = finish(core.request({ method: "GET", path: "/oauth2/authorize", query: pkceQuery() }, NOW, entropy()));
  assert.deepEqual([signIn.outcome, signIn.status], ["sign_in", 200]);
  assert.match(signIn.body, /data-page="sign_in"/);
  const consent = finish(core.request({ method: "GET", path: "/oauth2/authorize", query: pkceQuery(), user: ALICE }, NOW, entropy()));
  assert.deepEqual([consent.outcome, consent.status], ["consent", 200]);
  assert.match(consent.body, /data-page="consent" data-app="pkce-app" data-scopes="account_info.read files.metadata.read" data-access-type="offline"/);
  assert.equal(header(consent, "x-frame-options"), "DENY");
  const unknown = finish(core.request({ method: "GET", path: "/oauth2/authorize", query: "client_id=nobody" }, NOW, entropy()));
  assert.deepEqual([unknown.outcome, unknown.refusal, unknown.status], ["refused", "unknown_client", 400]);
  assert.match(unknown.body, /data-error="invalid_request"/);
  const display = finish(core.request(consentForm(`client_id=${CONF_APP}&response_type=code`), NOW, entropy()));
  assert.equal(display.outcome, "display_code");
  assert.match(display.body, /data-page="code" data-code="[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}"/);
  const unlinked = finish(core.unlink(CONF_APP, ALICE.account_id, "team_admin", NOW, entropy()));
  assert.deepEqual([unlinked.outcome, unlinked.status, unlinked.body], ["unlinked", 200, "null"]);
  const missing = finish(core.request({ method: "POST", path: "/2/auth/token/revoke", headers: [] }, NOW, entropy()));
  assert.deepEqual([missing.refusal, missing.status], ["bearer_missing", 401]);
  assert.match(header(missing, "www-authenticate"), /^Bearer/);
  const nowhere = finish(core.request({ method: "GET", path: "/elsewhere" }, NOW, entropy()));
  assert.deepEqual([nowhere.refusal, nowhere.status], ["not_found", 404]);
  assert.equal(core.requiredScope(GET_ACCOUNT), "account_info.read");
  assert.equal(core.requiredScope("/2/nope"), undefined);
  assert.equal(core.maxInputBytes(), 16384);
});

test("an authorized call crosses as its principal", async () => {
  const core = createCore(config());
  const store = new Map();
  const run = (request) => {
    for (let step = readStep(request.step()); ; ) {
      if (step.kind === "r") {
        step = readStep(request.found(packRecords(step.keys, store)));
      } else if (step.kind === "w") {
        for (const put of step.transaction.puts) store.set(put.key, { version: (put.expect ?? 0) + 1, bytes: put.bytes });
        step = readStep(request.advance("committed"));
      } else {
        request.free();
        return step;
      }
    }
  };
  const redirect = run(core.request(consentForm(), NOW, entropy()));
  const code = new URL(header(redirect, "location")).searchParams.get("code");
  const exchange = { grant_type: "authorization_code", code, client_id: "pkce-app", code_verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", redirect_uri: "http://127.0.0.1:8765/cb" };
  const tokens = run(core.request({ path: "/oauth2/token", ...form(exchange) }, NOW, new Uint8Array(entropyLength()).fill(8)));
  assert.equal(tokens.outcome, "tokens");
  const { access_token } = JSON.parse(tokens.body);
  const call = run(core.request({ method: "POST", path: GET_ACCOUNT, headers: ["authorization", `Bearer ${access_token}`] }, NOW + 1, entropy()));
  // The principal, then the headers the host's answer carries.
  assert.deepEqual(call, {
    kind: "s",
    principal: { app: "pkce-app", subject: "account", account_id: ALICE.account_id, uid: ALICE.uid, scopes: ["account_info.read", "files.metadata.read"], expires_at: NOW + 14_400, props: null },
    headers: [["Cache-Control", "no-store"], ["X-Content-Type-Options", "nosniff"]],
  });
});

test("times and versions are safe integers: exact, or refused — never rounded", () => {
  const core = createCore(config());
  assert.throws(() => core.request(consentForm(), 2 ** 60, entropy()), /safe integer/);
  assert.throws(() => core.request(consentForm(), 1.5, entropy()), /safe integer/);
  const request = core.request(consentForm(), NOW, entropy());
  const { keys } = readStep(request.step());
  // The largest safe version round-trips; one beyond it, or a fraction, is refused.
  const stored = createLinkBytes(core);
  assert.throws(() => request.found(packRecords(keys, firstStored(keys, 2 ** 60, stored))), /safe integer/);
  assert.throws(() => request.found(packRecords(keys, firstStored(keys, 2.5, stored))), /safe integer/);
  const write = readStep(request.found(packRecords(keys, firstStored(keys, Number.MAX_SAFE_INTEGER, stored))));
  assert.equal(write.kind, "w");
  assert.equal(write.transaction.puts.find((put) => put.key.includes("/link:")).expect, Number.MAX_SAFE_INTEGER);
  request.free();
});

/** The bytes of a link record, as the core writes it. */
function createLinkBytes(core) {
  const request = core.request(consentForm(), NOW, entropy());
  const { keys } = readStep(request.step());
  const { transaction } = readStep(request.found(packRecords(keys, NOTHING)));
  request.free();
  return transaction.puts.find((put) => put.key.includes("/link:")).bytes;
}

test("host misuse throws a real Error", () => {
  const core = createCore(config());
  const started = () => core.request(consentForm(), NOW, entropy());
  const misuse = [
    () => core.request(consentForm(), NOW, new Uint8Array(8)),
    () => core.request(consentForm(), -1, entropy()),
    () => core.request({ ...consentForm(), user: { account_id: "", uid: "1" } }, NOW, entropy()),
    () => core.unlink(CONF_APP, ALICE.account_id, "someone", NOW, entropy()),
    // The read has two keys: one record, three, a tag that is neither 0 nor 1, a record cut short.
    () => started().found(new Uint8Array([0])),
    () => started().found(new Uint8Array([0, 0, 0])),
    () => started().found(new Uint8Array([2, 0])),
    () => started().found(new Uint8Array([1, 0, 0, 0])),
    () => started().found(packRecords(["a", "b"], new Map([["a", { version: 1, bytes: new Uint8Array(4) }]])).subarray(0, 15)),
    () => started().advance("found"),
    () => started().advance("nothing"),
    () => {
      const request = started();
      request.found(new Uint8Array([0, 0]));
      request.found(new Uint8Array([0, 0]));
    },
    () => started().advance("committed"),
    () => started().advance("conflicted"),
    () => createCore({ apps: "not a list" }),
    () => createCore({ ...config(), policy: { code_ttl: 601 } }),
    () => createCore({ ...config(), pages: { consent: "{{no_such_variable}}" } }),
  ];
  for (const call of misuse) assert.throws(call, (e) => e instanceof Error && e.message.length > 0);
});

test("a stored record the core cannot read is a storage fault, not host misuse", () => {
  const core = createCore(config());
  const request = core.request(consentForm(), NOW, entropy());
  const { keys } = readStep(request.step());
  const reply = readStep(request.found(packRecords(keys, firstStored(keys, 1, new Uint8Array([9, 9, 9])))));
  assert.deepEqual([reply.kind, reply.status, reply.refusal, header(reply, "retry-after")], ["p", 503, "storage_fault", "1"]);
  request.free();
});

test("a request publishes how many reads and writes it may ask for", () => {
  const core = createCore(config());
  const request = core.request(consentForm(), NOW, entropy());
  assert.equal(request.maxSteps(), 621, "(max_attempts 5 + 64 sweep pages) × (5 reads + 4 counts)");
  request.free();
});

test("configuration checks are tagged values", () => {
  assert.deepEqual(checkConfig(config()), { tag: "ok" });
  const bad = checkConfig({ apps: [], policy: { code_ttl: 0 } });
  assert.equal(bad.tag, "invalid");
  assert.match(bad.content, /code_ttl/);
  assert.equal(checkConfig({ apps: [{ key: "bad key!" }] }).tag, "invalid");
  assert.equal(checkConfig({ apps: [], api_endpoints: { "/v1/x": "a.b" } }).tag, "invalid");
  assert.match(checkConfig({ apps: [], pages: { code: "{{#code}}" } }).content, /code page template/);
  // The neighbour of a bad redirect URI is a good one.
  const app = config().apps[1];
  assert.equal(checkConfig({ apps: [{ ...app, redirect_uris: [`${CONF_REDIRECT}#frag`] }] }).tag, "invalid");
  assert.equal(checkConfig({ apps: [app], server_key: SERVER_KEY }).tag, "ok");
  // Every deployment has its own key; the field names itself when it is missing or malformed.
  assert.match(checkConfig({ apps: [app] }).content, /server_key: is missing/);
  assert.match(checkConfig({ apps: [app], server_key: "c2hvcnQ" }).content, /server_key: must be 32 bytes/);
});
