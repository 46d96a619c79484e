// The tests of the hosts' own sign-in and sessions (app.mjs signInRoutes), over real HTTP, shared
// by the Node and Worker hosts' test files (the native host's twin is
// examples/native/tests/sign_in.rs). The host runs the sample configuration (alice /
// alice-password) in test mode, before any reset: a real sign-in, and /__test__/clock to move
// the host's clock.
//
//   signInSuite("Node host", () => startServer(path, { port: 0, testMode: true, allowSampleSecret: true }));
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { entropyLength } from "../../pkg/src/node.js";

/** The sample's user. */
export const ALICE = { username: "alice", password: "alice-password" };

/**
 * `return_to` values that try to lead the browser elsewhere after it signs in, or to break the
 * answer: schemes, authorities, backslashes, the characters URL parsing strips or encodes (tab,
 * CR, LF, NUL, leading spaces), encoded slashes, dot segments, user information, non-ASCII, very
 * long values. `host` is the host's authority (127.0.0.1:port): some tricks name it.
 */
export function hostileReturnTo(host) {
  return [
    "//evil.example",
    "//evil.example/path",
    "///evil.example",
    "////evil.example",
    "/\\evil.example",
    "/\\\\evil.example",
    "\\\\evil.example",
    "\\/evil.example",
    "/\\/evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
    "/\r/evil.example",
    "/\r\n/evil.example",
    "\t//evil.example",
    " //evil.example",
    "\u0000//evil.example",
    "/\u0000/evil.example",
    "/a\u0000b",
    "/a\nb",
    "/a\r\nSet-Cookie: x=1",
    "/a\tb",
    "https:evil.example",
    "http:evil.example",
    "https:/evil.example",
    "https://evil.example/",
    "HTTP://evil.example",
    "ftp://evil.example/",
    "javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "/%2F%2Fevil.example",
    "/%2f/evil.example",
    "%2F%2Fevil.example",
    "/%5Cevil.example",
    "/%09/evil.example",
    "/.//evil.example",
    "/..//evil.example",
    "/./../..//evil.example",
    "//@evil.example",
    "/@evil.example",
    "//user:pass@evil.example",
    "https://user@evil.example",
    `//${host}@evil.example`,
    `http://${host}@evil.example/`,
    `http://evil.example\\@${host}/`,
    `http://evil.example#@${host}/`,
    `http://${host}.evil.example/`,
    `http://${host}/oauth2/authorize?client_id=x`,
    `http://user:pass@${host}/account`,
    "//évil.example",
    "/ü",
    "/日本語?q=é#ß",
    "/\u3000/evil.example",
    "\uFF0F\uFF0Fevil.example",
    "/\u2028/evil.example",
    "/\u0085/evil.example",
    `/${"a".repeat(3000)}`,
    `//${"a".repeat(3000)}.example`,
    "",
    "?next=1",
    "#top",
    "signin",
    "..",
  ];
}

/**
 * One HTTP/1.1 exchange through node:http, headers exactly as given (pairs, after Host). Resolves
 * `{ status, headers: {name: [values]}, body }`, names lower case.
 */
export function send(base, { method = "GET", target = "/", headers = [], body } = {}) {
  const { hostname, port, host } = new URL(base);
  const lines = [["Host", host], ...headers];
  if (body !== undefined) lines.push(["Content-Length", String(Buffer.byteLength(body))]);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: hostname, port, method, path: target, headers: lines.flat(), agent: false }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("error", reject);
      response.on("end", () => {
        const heads = {};
        for (let i = 0; i < response.rawHeaders.length; i += 2) (heads[response.rawHeaders[i].toLowerCase()] ??= []).push(response.rawHeaders[i + 1]);
        resolve({ status: response.statusCode, headers: heads, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    request.setTimeout(30_000, () => request.destroy(new Error(`${method} ${target}: no answer within 30 s`)));
    request.on("error", reject);
    request.end(body);
  });
}

const FORM = ["Content-Type", "application/x-www-form-urlencoded"];
const form = (fields) => new URLSearchParams(fields).toString();
const pageKind = (html) => /data-page="([a-z_]+)"/.exec(html)?.[1];
const cookiePair = (answer) => answer.headers["set-cookie"]?.[0]?.split(";")[0];

/** Posts the sign-in form (username and password first: a long return_to is the part cut off). */
export const signIn = (base, fields, headers = []) => send(base, { method: "POST", target: "/signin", headers: [FORM, ...headers], body: form(fields) });

/** Sets the host's clock (test mode). */
async function setClock(base, now) {
  const answer = await send(base, {
    method: "POST",
    target: "/__test__/clock",
    headers: [["Content-Type", "application/json"]],
    body: JSON.stringify({ now, entropy: "07".repeat(entropyLength()) }),
  });
  assert.equal(answer.status, 200, answer.body);
}

// The sample's public PKCE app, for a page that needs a signed-in user.
const AUTHORIZE = `/oauth2/authorize?${new URLSearchParams({
  client_id: "demo-pkce-app",
  response_type: "code",
  redirect_uri: "http://127.0.0.1:8788/callback",
  code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
  code_challenge_method: "S256",
})}`;

/**
 * The suite, against the host `start()` resolves (`{ url, close() }`): the sample configuration
 * in test mode, no reset.
 */
export function signInSuite(name, start) {
  describe(`${name}: sign-in and sessions`, { timeout: 300_000 }, () => {
    let host;
    let base;
    before(async () => {
      host = await start();
      base = host.url;
    });
    after(() => host?.close());

    test("a return_to that would lead off the host after a real sign-in gets a 400 page; the rest a 303 on the host; never a 5xx", async () => {
      const origin = new URL(base).origin;
      for (const value of hostileReturnTo(new URL(base).host)) {
        const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
        // Where a browser would go if the value were the Location as it is (WHATWG URL), a
        // relative one taken from the host's root.
        let raw = null;
        try {
          raw = new URL(value, `${origin}/`);
        } catch {
          // not a URL at all
        }
        const leaves = raw === null || raw.origin !== origin;
        const answer = await signIn(base, { ...ALICE, return_to: value });
        assert.ok(answer.status < 500, `${shown}: ${answer.status} ${answer.body.slice(0, 200)}`);
        if (answer.status === 303) {
          assert.ok(!leaves, `${shown} leads a browser off the host, yet sign-in redirected`);
          const location = answer.headers.location?.[0];
          assert.match(location, /^\/(?![/\\])[\x21-\x7e]*$/, `${shown}: Location ${JSON.stringify(location)}`);
          const landed = new URL(location, `${base}/signin`); // as the browser resolves it
          assert.equal(landed.origin, origin, `${shown}: Location ${location}`);
          if (value.length < 1000) {
            raw.username = raw.password = "";
            assert.equal(landed.href, raw.href, `${shown}: the redirect goes where the value points on this host`);
          }
          assert.match(cookiePair(answer) ?? "", /^session=./, `${shown}: signed in`);
        } else {
          assert.equal(answer.status, 400, `${shown}: ${answer.status} ${answer.body.slice(0, 200)}`);
          assert.equal(answer.headers["set-cookie"], undefined, `${shown}: refused, so not signed in`);
          assert.equal(pageKind(answer.body), "sign_in", `${shown}: the sign-in page again`);
        }
        // The sign-in page with that return_to: a form that will go back on the host, or a 400.
        const page = await send(base, { target: `/signin?${new URLSearchParams({ return_to: value })}` });
        assert.ok([200, 400].includes(page.status), `GET ${shown}: ${page.status}`);
        if (leaves) assert.equal(page.status, 400, `GET ${shown}: a link that would lead off the host`);
      }
      // A request line too long for any server: refused, never a 5xx.
      const huge = await send(base, { target: `/signin?return_to=/${"a".repeat(100_000)}` });
      assert.ok(huge.status >= 400 && huge.status < 500, `a 100 kB return_to: ${huge.status}`);
    });

    test("a cross-site sign-in post gets a 403 page and no cookie (login CSRF); a same-origin one signs in", async () => {
      const origin = new URL(base).origin;
      const crossSite = [
        [["Origin", "https://evil.example"]],
        [["Origin", "null"]],
        [["Sec-Fetch-Site", "cross-site"]],
        [["Sec-Fetch-Site", "same-site"], ["Origin", "http://sub.example"]],
        [["Sec-Fetch-Site", "none"]],
        [["Sec-Fetch-Site", "cross-site"], ["Origin", origin]],
      ];
      for (const headers of crossSite) {
        const answer = await signIn(base, { ...ALICE, return_to: "/" }, headers);
        assert.equal(answer.status, 403, `${JSON.stringify(headers)}: ${answer.body.slice(0, 200)}`);
        assert.equal(answer.headers["set-cookie"], undefined, JSON.stringify(headers));
        assert.equal(pageKind(answer.body), "sign_in");
      }
      const sameOrigin = [[], [["Origin", origin]], [["Sec-Fetch-Site", "same-origin"]], [["Sec-Fetch-Site", "same-origin"], ["Origin", "null"]]];
      for (const headers of sameOrigin) {
        const answer = await signIn(base, { ...ALICE, return_to: "/" }, headers);
        assert.equal(answer.status, 303, `${JSON.stringify(headers)}: ${answer.body.slice(0, 200)}`);
        assert.match(cookiePair(answer), /^session=./);
      }
    });

    test("a wrong password or an unknown user is a 403 sign-in page (a 401 would need WWW-Authenticate)", async () => {
      for (const fields of [{ ...ALICE, password: "nope" }, { username: "mallory", password: "alice-password" }, {}]) {
        const answer = await signIn(base, { ...fields, return_to: "/" });
        assert.equal(answer.status, 403, JSON.stringify(fields));
        assert.equal(answer.headers["set-cookie"], undefined);
        assert.equal(pageKind(answer.body), "sign_in");
        assert.match(answer.body, /Wrong username or password/);
        // The host's own pages carry the flow's page headers.
        assert.deepEqual(
          ["x-frame-options", "content-security-policy", "referrer-policy", "cache-control", "x-content-type-options"].map((name) => answer.headers[name]?.[0]),
          ["DENY", "frame-ancestors 'none'", "no-referrer", "no-store", "nosniff"],
        );
      }
    });

    test("failed sign-ins are limited per account name: the 11th try in the window is a 429 with Retry-After, even with the right password, until the window ends", async () => {
      const at = 1_950_000_000;
      await setClock(base, at);
      const carol = { username: "carol-who-does-not-exist", password: "guess" };
      for (let i = 1; i <= 10; i++) {
        const answer = await signIn(base, { ...carol, return_to: "/" });
        assert.equal(answer.status, 403, `try ${i}`);
      }
      const held = await signIn(base, { ...carol, return_to: "/" });
      assert.equal(held.status, 429);
      assert.equal(held.headers["retry-after"]?.[0], "900");
      assert.equal(pageKind(held.body), "sign_in");
      await setClock(base, at + 899);
      assert.equal((await signIn(base, { ...carol, return_to: "/" })).status, 429, "one second before the window ends");
      await setClock(base, at + 900);
      assert.equal((await signIn(base, { ...carol, return_to: "/" })).status, 403, "checked again once it ended");
      // Another account from the same address is not held.
      assert.equal((await signIn(base, { ...ALICE, return_to: "/" })).status, 303);
    });

    test("the server ends a session a day after sign-in by its own clock, whatever the browser keeps", async () => {
      const at = 1_900_000_000;
      await setClock(base, at);
      const answer = await signIn(base, { ...ALICE, return_to: "/" });
      assert.equal(answer.status, 303);
      const setCookie = answer.headers["set-cookie"][0];
      assert.match(setCookie, /; Max-Age=86400(;|$)/);
      assert.match(setCookie, /; HttpOnly(;|$)/);
      assert.match(setCookie, /; SameSite=Lax(;|$)/);
      assert.doesNotMatch(setCookie, /Secure/, "served over http");
      const cookie = cookiePair(answer);
      const authorize = async () => pageKind((await send(base, { target: AUTHORIZE, headers: [["Cookie", cookie]] })).body);
      assert.equal(await authorize(), "consent", "signed in");
      await setClock(base, at + 86_399);
      assert.equal(await authorize(), "consent", "one second before the end");
      await setClock(base, at + 86_400);
      assert.equal(await authorize(), "sign_in", "a day later the cookie no longer signs anyone in");
      // The cookie's own fields cannot be edited to last longer: the signature covers them.
      const [value, expires, mac] = cookie.slice("session=".length).split(".");
      assert.equal(Number(expires), at + 86_400, "the cookie carries its end");
      await setClock(base, at + 86_400);
      const stretched = `session=${value}.${Number(expires) + 86_400}.${mac}`;
      assert.equal(pageKind((await send(base, { target: AUTHORIZE, headers: [["Cookie", stretched]] })).body), "sign_in");
    });

    test("POST /signout (CSRF-checked like sign-in) clears the cookie and goes home; the home page offers it", async () => {
      const signedIn = await signIn(base, { ...ALICE, return_to: "/" });
      const cookie = cookiePair(signedIn);
      const home = await send(base, { target: "/", headers: [["Cookie", cookie]] });
      assert.equal(home.status, 200);
      assert.match(home.body, /<form method="post" action="\/signout">/);
      assert.doesNotMatch((await send(base, { target: "/" })).body, /action="\/signout"/, "signed out: nothing to sign out of");
      for (const headers of [[["Origin", "https://evil.example"]], [["Sec-Fetch-Site", "cross-site"]]]) {
        const refused = await send(base, { method: "POST", target: "/signout", headers: [FORM, ["Cookie", cookie], ...headers], body: "" });
        assert.equal(refused.status, 403, JSON.stringify(headers));
        assert.equal(refused.headers["set-cookie"], undefined);
      }
      const out = await send(base, { method: "POST", target: "/signout", headers: [FORM, ["Cookie", cookie], ["Origin", new URL(base).origin]], body: "" });
      assert.equal(out.status, 303);
      assert.equal(out.headers.location?.[0], "/");
      const cleared = out.headers["set-cookie"]?.[0] ?? "";
      assert.match(cleared, /^session=;/);
      assert.match(cleared, /; Max-Age=0(;|$)/);
      assert.match(cleared, /; Path=\/(;|$)/);
      assert.doesNotMatch(cleared, /Secure/, "served over http");
    });

    test("an unknown account name takes as long to refuse as a wrong password for a known one: the time does not tell which names exist", async (t) => {
      await setClock(base, 2_000_000_000);
      const timed = async (fields) => {
        const started = performance.now();
        const answer = await signIn(base, { ...fields, return_to: "/" });
        const took = performance.now() - started;
        assert.equal(answer.status, 403, JSON.stringify(fields));
        return took;
      };
      const median = (times) => times.sort((a, b) => a - b)[times.length >> 1];
      const known = [];
      const unknown = [];
      // Interleaved, so load on the machine hits both alike; a new unknown name each time and
      // few tries of the known one, so no limit is reached. scrypt takes 50-100 ms; a request
      // that skips it takes a few.
      for (let i = 0; i < 7; i++) {
        known.push(await timed({ username: "bob", password: `wrong-${i}` }));
        unknown.push(await timed({ username: `nobody-${i}-${Date.now()}`, password: `wrong-${i}` }));
      }
      const [k, u] = [median(known), median(unknown)];
      const shown = `median ${u.toFixed(1)} ms for an unknown name, ${k.toFixed(1)} ms for a wrong password`;
      t.diagnostic(shown);
      assert.ok(u > k / 2 && u < k * 2, shown);
    });

    test("a fault of the host is a 500 that says only \"Internal error\": the exception's text stays in the log", async () => {
      // An event test mode passes to the server as it is, which the server throws on.
      const answer = await send(base, {
        method: "POST",
        target: "/__test__/event",
        headers: [["Content-Type", "application/json"]],
        body: JSON.stringify({ kind: "unlink", app: "demo-pkce-app", account_id: "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", by: "nobody" }),
      });
      assert.equal(answer.status, 500);
      assert.match(answer.body, /Internal error/);
      assertNoErrorText(answer);
    });
  });
}

/** A 5xx answer carries no exception text, stack or source location: those are for the log. */
export function assertNoErrorText(answer, what = "") {
  if (answer.status < 500) return;
  assert.doesNotMatch(answer.body, /Error\b|Exception|\bat \S+ \(|\.m?js:\d+|must be|wasm/, `${what} ${answer.status}: ${answer.body.slice(0, 300)}`);
}
