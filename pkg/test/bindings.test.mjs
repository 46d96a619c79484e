// The wasm bindings: a request's steps cross as plain values (keys, puts, bytes, a complete
// response, a principal), 64-bit values stay exact or are refused, refusals come with their
// reason, and misuse throws real Errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createCore, checkConfig, entropyLength } from "../src/node.js";
import { ALICE, CONF_APP, CONF_REDIRECT, GET_ACCOUNT, SERVER_KEY, config, form, pkceQuery } from "./fixtures.mjs";

const NOW = 1_700_000_000;
/** A request's next step, split: its kind ("r" read, "w" write, "p" reply, "s" serve) and its values. */
const next = (request) => {
  const [kind, ...values] = request.step().split("\0");
  return { kind, values };
};
const entropy = () => new Uint8Array(entropyLength()).fill(7);
const consentForm = (query = pkceQuery(), decision = "allow") => ({
  method: "POST",
  path: "/oauth2/authorize",
  headers: ["content-type", "application/x-www-form-urlencoded", "sec-fetch-site", "same-origin"],
  body: new TextEncoder().encode(new URLSearchParams({ query, decision }).toString()),
  user: ALICE,
});
const header = (request, name) => {
  const flat = request.headers().split("\0");
  for (let i = 0; i < flat.length; i += 2) if (flat[i].toLowerCase() === name) return flat[i + 1];
  return undefined;
};

test("read, write and respond cross as plain values", () => {
  const core = createCore(config());
  const request = core.request(consentForm(), NOW, entropy());
  assert.match(
    request.step(),
    new RegExp(`^r\0([A-Za-z0-9_-]{16})/link:pkce-app:${ALICE.account_id}\0\\1/ledger:$`),
    "the kind and the keys (the user's link and ledger, in their partition), NUL-joined, in one crossing",
  );
  request.supply(0, undefined, undefined);
  request.supply(1, undefined, undefined);
  request.advance("found");
  assert.equal(request.step(), "w");
  assert.equal(request.putCount(), 3);
  assert.match(request.putKey(0), /^[A-Za-z0-9_-]{16}\/code:[A-Za-z0-9_-]{43}$/);
  assert.equal(request.putExpect(0), undefined, "a new code's key must be absent");
  assert.ok(request.putBytes(0) instanceof Uint8Array && request.putBytes(0).length > 0);
  assert.equal(request.putPurgeAfter(0), NOW + 600 + 600, "a code is kept one lifetime past its expiry");
  assert.equal(request.putPurgeAfter(1), undefined, "a consenting link is kept (only an unlink ends it)");
  assert.match(request.putKey(2), /^[A-Za-z0-9_-]{16}\/ledger:$/, "a new link moves the account's ledger on");
  assert.equal(request.putExpect(2), undefined);
  assert.equal(request.putPurgeAfter(2), NOW + 2 * 14_400, "a ledger is kept two access-token lifetimes past an end");
  assert.equal(JSON.parse(request.audit())[0].event, "code_issued");
  request.advance("committed");
  assert.equal(request.step(), "p");
  assert.equal(request.status(), 302);
  assert.match(header(request, "location"), /^http:\/\/127\.0\.0\.1:8765\/cb\?code=[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}&state=xyz$/);
  assert.equal(header(request, "cache-control"), "no-store");
  assert.equal(request.outcome(), "redirect");
  assert.equal(request.refusal(), undefined);
  request.free();

  const refused = core.request({ path: "/oauth2/token", ...form({ grant_type: "password" }) }, NOW, entropy());
  assert.equal(refused.step(), "p");
  assert.equal(refused.status(), 400);
  assert.equal(JSON.parse(refused.body()).error, "unsupported_grant_type");
  assert.equal(refused.outcome(), "refused");
  assert.equal(refused.refusal(), "unsupported_grant_type");
  refused.free();
});

test("every outcome comes with a complete response and its name", () => {
  const core = createCore(config());
  const finish = (request, loaded = () => undefined) => {
    for (let step = next(request); step.kind === "r"; step = next(request)) {
      step.values.forEach((key, i) => request.supply(i, ...(loaded(key) ?? [])));
      request.advance("found");
    }
    if (next(request).kind === "w") request.advance("committed");
    return request;
  };
  const signIn = finish(core.request({ method: "GET", path: "/oauth2/authorize", query: pkceQuery() }, NOW, entropy()));
  assert.deepEqual([signIn.outcome(), signIn.status()], ["sign_in", 200]);
  assert.match(signIn.body(), /data-page="sign_in"/);
  const consent = finish(core.request({ method: "GET", path: "/oauth2/authorize", query: pkceQuery(), user: ALICE }, NOW, entropy()));
  assert.deepEqual([consent.outcome(), consent.status()], ["consent", 200]);
  assert.match(consent.body(), /data-page="consent" data-app="pkce-app" data-scopes="account_info.read files.metadata.read" data-access-type="offline"/);
  assert.equal(header(consent, "x-frame-options"), "DENY");
  const unknown = finish(core.request({ method: "GET", path: "/oauth2/authorize", query: "client_id=nobody" }, NOW, entropy()));
  assert.deepEqual([unknown.outcome(), unknown.refusal(), unknown.status()], ["refused", "unknown_client", 400]);
  assert.match(unknown.body(), /data-error="invalid_request"/);
  const display = finish(core.request(consentForm(`client_id=${CONF_APP}&response_type=code`), NOW, entropy()));
  assert.equal(display.outcome(), "display_code");
  assert.match(display.body(), /data-page="code" data-code="[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}"/);
  const unlinked = finish(core.unlink(CONF_APP, ALICE.account_id, "team_admin", NOW, entropy()));
  assert.deepEqual([unlinked.outcome(), unlinked.status(), unlinked.body()], ["unlinked", 200, "null"]);
  const missing = finish(core.request({ method: "POST", path: "/2/auth/token/revoke", headers: [] }, NOW, entropy()));
  assert.deepEqual([missing.refusal(), missing.status()], ["bearer_missing", 401]);
  assert.match(header(missing, "www-authenticate"), /^Bearer/);
  const nowhere = finish(core.request({ method: "GET", path: "/elsewhere" }, NOW, entropy()));
  assert.deepEqual([nowhere.refusal(), nowhere.status()], ["not_found", 404]);
  for (const r of [signIn, consent, unknown, display, unlinked, missing, nowhere]) r.free();
  assert.equal(core.requiredScope(GET_ACCOUNT), "account_info.read");
  assert.equal(core.requiredScope("/2/nope"), undefined);
  assert.equal(core.maxInputBytes(), 16384);
});

test("an authorized call crosses as its principal", async () => {
  const core = createCore(config());
  const store = new Map();
  const run = (request) => {
    for (;;) {
      const step = next(request);
      if (step.kind === "r") {
        step.values.forEach((key, i) => request.supply(i, store.get(key)?.version, store.get(key)?.bytes));
        request.advance("found");
      } else if (step.kind === "w") {
        for (let i = 0; i < request.putCount(); i++) store.set(request.putKey(i), { version: (request.putExpect(i) ?? 0) + 1, bytes: request.putBytes(i) });
        request.advance("committed");
      } else return request;
    }
  };
  const redirect = run(core.request(consentForm(), NOW, entropy()));
  const code = new URL(header(redirect, "location")).searchParams.get("code");
  const exchange = { grant_type: "authorization_code", code, client_id: "pkce-app", code_verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", redirect_uri: "http://127.0.0.1:8765/cb" };
  const tokens = run(core.request({ path: "/oauth2/token", ...form(exchange) }, NOW, new Uint8Array(entropyLength()).fill(8)));
  assert.equal(tokens.outcome(), "tokens");
  const { access_token } = JSON.parse(tokens.body());
  const call = run(core.request({ method: "POST", path: GET_ACCOUNT, headers: ["authorization", `Bearer ${access_token}`] }, NOW + 1, entropy()));
  // The principal, then the headers the host's answer carries.
  assert.equal(
    call.step(),
    ["s", "pkce-app", ALICE.account_id, ALICE.uid, "account_info.read files.metadata.read", String(NOW + 14_400), "Cache-Control", "no-store", "X-Content-Type-Options", "nosniff"].join("\0"),
  );
  for (const r of [redirect, tokens, call]) r.free();
});

test("times and versions are safe integers: exact, or refused — never rounded", () => {
  const core = createCore(config());
  assert.throws(() => core.request(consentForm(), 2 ** 60, entropy()), /safe integer/);
  assert.throws(() => core.request(consentForm(), 1.5, entropy()), /safe integer/);
  const request = core.request(consentForm(), NOW, entropy());
  request.step();
  // The largest safe version round-trips; one beyond it is refused.
  const stored = createLinkBytes(core);
  assert.throws(() => request.supply(0, 2 ** 60, stored), /safe integer/);
  request.supply(0, Number.MAX_SAFE_INTEGER, stored);
  request.supply(1, undefined, undefined);
  request.advance("found");
  assert.equal(request.step(), "w");
  const link = [...Array(request.putCount()).keys()].find((i) => request.putKey(i).includes("/link:"));
  assert.equal(request.putExpect(link), Number.MAX_SAFE_INTEGER);
  request.free();
});

/** The bytes of a link record, as the core writes it. */
function createLinkBytes(core) {
  const request = core.request(consentForm(), NOW, entropy());
  request.step();
  request.supply(0, undefined, undefined);
  request.supply(1, undefined, undefined);
  request.advance("found");
  request.step();
  const link = [...Array(request.putCount()).keys()].find((i) => request.putKey(i).includes("/link:"));
  const bytes = request.putBytes(link);
  request.free();
  return bytes;
}

test("host misuse throws a real Error", () => {
  const core = createCore(config());
  const started = () => {
    const request = core.request(consentForm(), NOW, entropy());
    request.step();
    return request;
  };
  const misuse = [
    () => core.request(consentForm(), NOW, new Uint8Array(8)),
    () => core.request(consentForm(), -1, entropy()),
    () => core.request({ ...consentForm(), user: { account_id: "", uid: "1" } }, NOW, entropy()),
    () => core.unlink(CONF_APP, ALICE.account_id, "someone", NOW, entropy()),
    () => started().supply(3, undefined, undefined),
    () => started().advance("found"),
    () => started().advance("nothing"),
    () => {
      const request = started();
      request.supply(0, undefined, undefined);
      request.supply(0, undefined, undefined);
      request.advance("found");
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
  request.step();
  request.supply(0, 1, new Uint8Array([9, 9, 9]));
  request.supply(1, undefined, undefined);
  request.advance("found");
  assert.equal(request.step(), "p");
  assert.deepEqual([request.status(), request.refusal(), header(request, "retry-after")], [503, "storage_fault", "1"]);
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
