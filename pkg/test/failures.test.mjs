// What the host's parts can do wrong, and what the client sees then: a store that throws is a
// 503 with Retry-After on the endpoint's channel (never a 4xx, never an exception escaping); an
// audit sink that throws never loses a committed answer; an API handler gets the request's body
// and its answer carries the core's headers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { memoryStorage } from "../src/adapters/memory.js";
import { CONF_APP, GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, VERIFIER, pkceQuery, testServer } from "./fixtures.mjs";

const ORIGIN = "http://auth.test";
const tokenRequest = (pairs) =>
  new Request(`${ORIGIN}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(pairs) });
const consent = (query) =>
  new Request(`${ORIGIN}/oauth2/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
    body: new URLSearchParams({ query, decision: "allow" }),
  });

/** Memory storage whose reads or writes throw while `failing` says so. */
function flakyStorage() {
  const inner = memoryStorage();
  const state = { reads: false, writes: false };
  const busy = () => Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
  return {
    state,
    read(keys) {
      if (state.reads) throw busy();
      return inner.read(keys);
    },
    async apply(transaction) {
      if (state.writes) throw busy();
      return inner.apply(transaction);
    },
  };
}

async function tokensFor(srv) {
  const redirect = await srv.fetch(consent(pkceQuery("s")));
  const code = new URL(redirect.headers.get("location")).searchParams.get("code");
  const exchange = await srv.fetch(tokenRequest({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }));
  assert.equal(exchange.status, 200);
  return exchange.json();
}

test("a store that throws is a 503 with Retry-After on each endpoint's channel, and nothing is lost", async (t) => {
  t.mock.method(console, "error", () => {}); // the driver logs the store's error
  const storage = flakyStorage();
  const { srv } = testServer({ storage });
  const tokens = await tokensFor(srv);

  storage.state.reads = true;
  const refresh = await srv.fetch(tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: PKCE_APP }));
  assert.equal(refresh.status, 503);
  assert.equal(refresh.headers.get("retry-after"), "1");
  assert.equal(refresh.headers.get("cache-control"), "no-store");
  assert.equal((await refresh.json()).error, "temporarily_unavailable");
  const call = await srv.fetch(new Request(`${ORIGIN}${GET_ACCOUNT}`, { method: "POST", headers: { authorization: `Bearer ${tokens.access_token}` } }));
  assert.equal(call.status, 503);
  const page = await srv.fetch(new Request(`${ORIGIN}/oauth2/authorize?${pkceQuery("again")}`));
  assert.equal(page.status, 503);
  assert.match(page.headers.get("content-type"), /^text\/html/);
  assert.equal(page.headers.get("retry-after"), "1");
  assert.match(await page.text(), /data-page="error"/);

  storage.state.reads = false;
  storage.state.writes = true;
  const write = await srv.fetch(consent(pkceQuery("w")));
  assert.equal(write.status, 503);
  assert.equal(write.headers.get("location"), null, "no code is sent when its record was not written");

  storage.state.writes = false;
  const after = await srv.fetch(tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: PKCE_APP }));
  assert.equal(after.status, 200, "once the store is back, the same request succeeds");
});

test("an audit sink that throws never loses a committed answer", async (t) => {
  const logged = t.mock.method(console, "error", () => {});
  const { srv } = testServer({
    onAudit: () => {
      throw new Error("the log pipeline is down");
    },
  });
  const tokens = await tokensFor(srv);
  assert.match(tokens.access_token, /^sl\./, "the exchange committed, and its answer arrived");
  assert.ok(logged.mock.calls.some((call) => String(call.arguments[0]).includes("audit sink failed")));
});

test("an API handler gets the body; its answer carries no-store and nosniff", async () => {
  const seen = [];
  const { srv } = testServer({
    api: {
      "/2/files/upload": async (principal, request) => {
        seen.push(await request.json());
        return new Response(JSON.stringify({ ok: true }), { headers: { "Content-Type": "application/json", "Cache-Control": "max-age=3600" } });
      },
    },
  });
  const redirect = await srv.fetch(
    new Request(`${ORIGIN}/oauth2/authorize`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
      body: new URLSearchParams({ query: `client_id=${CONF_APP}&response_type=code&scope=files.content.write`, decision: "allow" }),
    }),
  );
  const code = (await redirect.text()).match(/data-code="([^"]+)"/)?.[1];
  assert.ok(code, "the code page shows the code");
  const tokens = await (
    await srv.fetch(
      new Request(`${ORIGIN}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CONF_APP}:conf-secret-0123456789`)}` },
        body: new URLSearchParams({ grant_type: "authorization_code", code }),
      }),
    )
  ).json();
  const upload = await srv.fetch(
    new Request(`${ORIGIN}/2/files/upload`, { method: "POST", headers: { authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json" }, body: JSON.stringify({ path: "/a.txt" }) }),
  );
  assert.equal(upload.status, 200);
  assert.deepEqual(seen, [{ path: "/a.txt" }]);
  assert.equal(upload.headers.get("cache-control"), "no-store", "the core's header wins over the handler's");
  assert.equal(upload.headers.get("x-content-type-options"), "nosniff");
});

test("an API handler's answer with immutable headers (Response.redirect, a fetch() result) still gets the core's headers", async () => {
  const { srv } = testServer({ api: { [GET_ACCOUNT]: () => Response.redirect("https://elsewhere.example/", 307) } });
  const redirect = await srv.fetch(consent(pkceQuery("s")));
  const code = new URL(redirect.headers.get("location")).searchParams.get("code");
  const tokens = await (
    await srv.fetch(tokenRequest({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT }))
  ).json();
  const answer = await srv.fetch(new Request(`${ORIGIN}${GET_ACCOUNT}`, { method: "POST", headers: { authorization: `Bearer ${tokens.access_token}` } }));
  assert.equal(answer.status, 307);
  assert.equal(answer.headers.get("location"), "https://elsewhere.example/");
  assert.equal(answer.headers.get("cache-control"), "no-store");
});

test("attempts() tells a store outage from a limit: unavailable (with Retry-After) while the store throws, refused only at the limit", async (t) => {
  t.mock.method(console, "error", () => {}); // the driver logs the store's error
  const storage = flakyStorage();
  const { srv } = testServer({ storage });
  const attempters = [{ account: "alice" }, { source: "192.0.2.1" }];
  assert.deepEqual(await srv.attempts(attempters), { allowed: true, limited: false, unavailable: false, retryAfter: null });

  storage.state.reads = true;
  assert.deepEqual(await srv.attempts(attempters), { allowed: false, limited: false, unavailable: true, retryAfter: 1 }, "an outage is not a limit");
  storage.state.reads = false;
  storage.state.writes = true;
  assert.deepEqual(await srv.attempts(attempters), { allowed: false, limited: false, unavailable: true, retryAfter: 1 }, "a check that could not be counted does not go ahead");

  storage.state.writes = false;
  // Each check is counted before it runs (the first above made one): nine more, and the tenth
  // of the window's limit of ten is the last that may go ahead.
  for (let i = 0; i < 9; i++) assert.equal((await srv.attempts(attempters)).allowed, true);
  assert.deepEqual(await srv.attempts(attempters), { allowed: false, limited: true, unavailable: false, retryAfter: 900 }, "the limit: refused, not unavailable");
  await assert.rejects(srv.attempts(attempters, { failed: true }), TypeError, "the old shape would count twice");
  assert.deepEqual(await srv.attempts([{ account: "" }]), { allowed: false, limited: false, unavailable: false, retryAfter: null }, "a name no one can have");
});

test("sign-in checks are counted before they run: checks racing each other never pass the limit together, and no one elsewhere locks the owner out", async () => {
  const { srv } = testServer();
  const from = (source) => [{ account: "alice" }, { source }];
  // Fifteen posts at once from one place, with the default limit of ten per name and place.
  const racing = await Promise.all(Array.from({ length: 15 }, () => srv.attempts(from("192.0.2.1"))));
  const allowed = racing.filter((r) => r.allowed).length;
  assert.ok(allowed >= 1 && allowed <= 10, `${allowed} went ahead`);
  assert.ok(racing.every((r) => r.allowed || r.limited || r.unavailable));
  assert.equal((await srv.attempts(from("192.0.2.1"))).limited, true);
  // The owner, from her own address, signs in all the same, and again and again.
  for (let i = 0; i < 12; i++) {
    assert.equal((await srv.attempts(from("203.0.113.5"))).allowed, true, `sign-in ${i}`);
    await srv.attempts(from("203.0.113.5"), { succeeded: true });
  }
});
