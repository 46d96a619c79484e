// The wasm bindings: every Step kind crosses intact, 64-bit values stay exact or are refused,
// expected failures are tagged values, misuse throws real Errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createCore, checkConfig, entropyLength } from "../src/node.js";
import { ALICE, CONF_APP, CONF_REDIRECT, GET_ACCOUNT, config, form, pkceQuery } from "./fixtures.mjs";

const NOW = 1_700_000_000;
const entropy = () => new Uint8Array(entropyLength()).fill(7);
const consent = (query = pkceQuery()) => ({ kind: "consent", query, user: ALICE, decision: "allow" });

test("need_records, commit and respond cross the boundary", () => {
  const core = createCore(config());
  const need = core.handle(consent(), NOW, entropy(), {});
  assert.deepEqual(need, { step: "need_records", keys: [`link:pkce-app:${ALICE.account_id}`] });
  const commit = core.handle(consent(), NOW, entropy(), { [need.keys[0]]: null });
  assert.equal(commit.step, "commit");
  assert.equal(commit.transaction.puts.length, 2);
  assert.deepEqual(commit.transaction.puts[0].expect, { expect: "absent" });
  assert.equal(commit.transaction.puts[0].record.type, "code");
  assert.equal(commit.transaction.puts[0].purge_after, NOW + 600);
  assert.equal(commit.transaction.puts[1].purge_after, null);
  assert.equal(commit.transaction.audit[0].event, "code_issued");
  assert.equal(commit.outcome.kind, "redirect");
  assert.match(commit.outcome.value, /^http:\/\/127\.0\.0\.1:8765\/cb\?code=[A-Za-z0-9_-]{43}&state=xyz$/);
  const respond = core.handle({ kind: "token", request: form({ grant_type: "password" }) }, NOW, entropy(), {});
  assert.equal(respond.step, "respond");
  assert.equal(respond.outcome.kind, "http");
  assert.equal(respond.outcome.value.status, 400);
  assert.equal(JSON.parse(respond.outcome.value.body).error, "unsupported_grant_type");
});

test("every outcome kind crosses as a tagged value", () => {
  const core = createCore(config());
  const noRedirect = `client_id=${CONF_APP}&response_type=code`;
  const kinds = new Set();
  kinds.add(core.handle({ kind: "authorize", query: pkceQuery(), user: null }, NOW, entropy(), {}).outcome.kind);
  kinds.add(core.handle({ kind: "authorize", query: "client_id=nobody", user: null }, NOW, entropy(), {}).outcome.kind);
  const display = core.handle(consent(noRedirect), NOW, entropy(), { [`link:${CONF_APP}:${ALICE.account_id}`]: null });
  assert.equal(display.outcome.kind, "display_code");
  assert.equal(display.outcome.value.code.length, 43);
  kinds.add(display.outcome.kind);
  const unlink = { kind: "unlink", app: CONF_APP, account_id: ALICE.account_id, by: "team_admin" };
  kinds.add(core.handle(unlink, NOW, entropy(), { [`link:${CONF_APP}:${ALICE.account_id}`]: null }).outcome.kind);
  assert.deepEqual([...kinds].sort(), ["consent", "display_code", "error_page", "unlinked"]);
  const revoke = { kind: "revoke", request: { method: "POST", headers: [] } };
  const refused = core.handle(revoke, NOW, entropy(), {});
  assert.equal(refused.outcome.value.status, 401);
  assert.ok(refused.outcome.value.headers.some(([n, v]) => n === "WWW-Authenticate" && v.startsWith("Bearer")));
  assert.equal(core.requiredScope(GET_ACCOUNT), "account_info.read");
  assert.equal(core.requiredScope("/2/nope"), undefined);
});

test("64-bit times and versions stay exact: safe numbers or bigint in, never a rounded number", () => {
  const core = createCore(config());
  const key = `link:pkce-app:${ALICE.account_id}`;
  const link = (version) => ({ [key]: { version, record: { type: "link", epoch: 0, granted: [] } } });
  // A bigint time is accepted; beyond 2^53 it is still exact inside the core...
  const refused = core.handle({ kind: "token", request: form({ grant_type: "x" }) }, 2n ** 60n, entropy(), {});
  assert.equal(refused.outcome.value.status, 400);
  // ...and a result beyond 2^53 cannot become a JS number: an Error, never a rounded value.
  assert.throws(() => core.handle(consent(), 2n ** 60n, entropy(), link(1)), /can't be represented/);
  // A number above 2^53 is refused on the way in.
  assert.throws(() => core.handle(consent(), 2 ** 60, entropy(), {}), Error);
  // Versions: the largest safe integer round-trips; a bigint version beyond it cannot come back.
  const safe = core.handle(consent(), NOW, entropy(), link(Number.MAX_SAFE_INTEGER));
  assert.deepEqual(safe.transaction.puts[1].expect, { expect: "version", version: Number.MAX_SAFE_INTEGER });
  assert.throws(() => core.handle(consent(), NOW, entropy(), link(2n ** 60n)), Error);
});

test("host misuse throws a real Error", () => {
  const core = createCore(config());
  const misuse = [
    () => core.handle({ kind: "nonsense" }, NOW, entropy(), {}),
    () => core.handle(consent(), NOW, new Uint8Array(8), {}),
    () => core.handle(consent(), -1, entropy(), {}),
    () => core.handle(consent(), NOW, entropy(), { "code:AAAA": null }),
    () => core.handle(consent(), NOW, entropy(), { "link:pkce-app:dbid:other": null }),
    () => core.handle({ kind: "api_call", endpoint: "/2/undeclared", request: { method: "POST", headers: [] } }, NOW, entropy(), {}),
    () => createCore({ apps: "not a list" }),
    () => createCore({ apps: [], policy: { code_ttl: 601 } }),
  ];
  for (const call of misuse) assert.throws(call, (e) => e instanceof Error && e.message.length > 0);
});

test("configuration checks are tagged values", () => {
  assert.deepEqual(checkConfig(config()), { tag: "ok" });
  const bad = checkConfig({ apps: [], policy: { code_ttl: 0 } });
  assert.equal(bad.tag, "invalid");
  assert.match(bad.content, /code_ttl/);
  assert.equal(checkConfig({ apps: [{ key: "bad key!" }] }).tag, "invalid");
  assert.equal(checkConfig({ apps: [], api_endpoints: { "/v1/x": "a.b" } }).tag, "invalid");
  // The neighbour of a bad redirect URI is a good one.
  const app = config().apps[1];
  assert.equal(checkConfig({ apps: [{ ...app, redirect_uris: [`${CONF_REDIRECT}#frag`] }] }).tag, "invalid");
  assert.equal(checkConfig({ apps: [app] }).tag, "ok");
});
