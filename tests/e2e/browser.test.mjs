// The browser demo in real Chromium (Debian's, driven by playwright-core) against the Worker host
// in workerd: sign in, Allow, the account, a refresh, revoke and the 401 after it; then a Deny
// and its access_denied; the same from another origin through CORS; and against a Worker in the
// standards profile with DPoP, the tokens bound to a key WebCrypto will not export, kept in
// IndexedDB, with every proof shown. Screenshots of each stage land in tests/e2e/artifacts/.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

/**
 * How long a page may take to be ready after a navigation (it compiles the PKCE client's wasm):
 * the test command runs many suites at once on two cores, where playwright's 30 s default was
 * once not enough after the consent page's Deny.
 */
const LOADED = { timeout: 90_000 };
const root = fileURLToPath(new URL("../../", import.meta.url));
const ARTIFACTS = join(root, "tests/e2e/artifacts");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

const freePort = () =>
  new Promise((ok, fail) => {
    const server = createServer().on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });

let worker, browser, dir, base, spa;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), "edgegrant-browser-"));
  // The sample configuration, with the demo's redirect URI on this run's port.
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // A second origin for the demo as a single-page app of its own: another host name (a loopback
  // redirect URI matches any port, so another port on 127.0.0.1 would not be another app origin).
  spa = await serveDemoElsewhere(base);
  const config = JSON.parse(readFileSync(join(root, "examples/worker/config.sample.json"), "utf8"));
  config.apps.find((app) => app.key === "demo-browser").redirect_uris = [`${base}/demo/`, `${spa.origin}/demo/`];
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
  worker = await startWorker({ configPath: join(dir, "config.json"), port, persistTo: join(dir, "state"), allowSampleSecret: true });
  // "localhost" is the second origin's host name; it resolves to the same loopback address.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--host-resolver-rules=MAP localhost 127.0.0.1"] });
});

after(async () => {
  await browser?.close();
  spa?.server.close();
  if (spa) rmSync(spa.dir, { recursive: true, force: true });
  await worker?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The titles of the timeline's cards, in order. */
const cards = (page) => page.locator(".card h2").allTextContents();

async function lastCard(page) {
  const card = page.locator(".card").last();
  return { title: await card.locator("h2").textContent(), text: await card.textContent() };
}

/**
 * The demo's files (as stage-demo.mjs stages them) served by node:http at http://localhost:<port>,
 * its page naming the Worker at `server` as its authorization server, under a CSP that lets it
 * connect there: the browser demo as a single-page app on an origin of its own.
 */
async function serveDemoElsewhere(server) {
  const { stageDemo } = await import(pathToFileURL(join(root, "examples/worker/stage-demo.mjs")).href);
  const staged = mkdtempSync(join(tmpdir(), "edgegrant-spa-"));
  stageDemo(staged);
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  const types = { html: "text/html; charset=utf-8", js: "text/javascript", css: "text/css", wasm: "application/wasm" };
  const csp = `default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self' ${server}; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`;
  const httpServer = createHttpServer((request, response) => {
    const path = new URL(request.url, origin).pathname;
    const file = join(staged, path.endsWith("/") ? `${path}index.html` : path);
    if (!file.startsWith(join(staged, "demo"))) return response.writeHead(404).end();
    let body;
    try {
      body = readFileSync(file);
    } catch {
      return response.writeHead(404).end();
    }
    if (file.endsWith("index.html")) body = String(body).replace("<html lang=\"en\">", `<html lang="en" data-server="${server}">`);
    response.writeHead(200, { "Content-Type": types[file.split(".").pop()] ?? "application/octet-stream", "Content-Security-Policy": csp, "Cache-Control": "no-store" });
    response.end(body);
  });
  await new Promise((ok) => httpServer.listen(port, "127.0.0.1", ok));
  return { origin, server: httpServer, dir: staged };
}

async function openDemo(context, from = base) {
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(error.message));
  await page.goto(`${from}/demo/`);
  await page.waitForSelector("body[data-ready=true]", LOADED);
  return { page, problems };
}

test("the demo walks through sign-in, Allow, the API, a refresh, revoke and the 401", async () => {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const { page, problems } = await openDemo(context);
  await page.screenshot({ path: join(ARTIFACTS, "01-start.png"), fullPage: true });

  await page.click("#begin");
  await page.waitForSelector("input[name=username]");
  await page.fill("input[name=username]", "alice");
  await page.fill("input[name=password]", "alice-password");
  await page.click("button:has-text('Sign in')");
  await page.waitForSelector("button[value=allow]");
  assert.match(await page.textContent("body"), /Browser PKCE Demo/);
  await page.screenshot({ path: join(ARTIFACTS, "02-consent.png"), fullPage: true });
  await page.click("button[value=allow]");

  await page.waitForSelector("body[data-ready=true]", LOADED);
  await page.waitForFunction(() => [...document.querySelectorAll(".card h2")].some((h) => h.textContent === "Authorized"));
  assert.deepEqual(await cards(page), ["Authorization URL", "Redirect back", "Code exchange", "Authorized"]);
  assert.ok(!page.url().includes("code="), "the code is gone from the address bar");
  const exchange = await page.locator(".card", { hasText: "Code exchange" }).textContent();
  assert.match(exchange, /POST \/oauth2\/token HTTP\/1\.1/);
  assert.match(exchange, /code_verifier=/);
  assert.match(exchange, /HTTP\/1\.1 200/);
  assert.match(exchange, /"refresh_token"/);

  await page.click("#call");
  await page.waitForFunction(() => document.querySelectorAll(".card").length === 5);
  let card = await lastCard(page);
  assert.equal(card.title, "API call");
  assert.match(card.text, /Authorization: Bearer sl\./);
  assert.match(card.text, /"account_id": "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"/);
  await page.screenshot({ path: join(ARTIFACTS, "03-account.png"), fullPage: true });

  // Four hours later (the tokens aged by four hours): the next call refreshes first.
  await page.click("#jump");
  await page.click("#call");
  await page.waitForFunction(() => document.querySelectorAll(".card").length === 8);
  assert.deepEqual((await cards(page)).slice(5), ["Four hours later", "Refresh", "API call"]);
  const refresh = await page.locator(".card", { hasText: "grant_type=refresh_token" }).textContent();
  assert.match(refresh, /HTTP\/1\.1 200/);
  await page.screenshot({ path: join(ARTIFACTS, "04-refreshed.png"), fullPage: true });

  await page.click("#revoke");
  await page.waitForFunction(() => [...document.querySelectorAll(".card h2")].some((h) => h.textContent === "Signed out"));
  assert.match(await page.locator(".card", { hasText: "POST /2/auth/token/revoke" }).textContent(), /HTTP\/1\.1 200/);
  await page.click("#replay");
  await page.waitForFunction(() => document.querySelector(".card:last-child h2")?.textContent === "API call refused");
  card = await lastCard(page);
  assert.match(card.text, /HTTP\/1\.1 401/);
  assert.match(card.text, /www-authenticate: Bearer[^\n]*invalid_token/i);
  await page.screenshot({ path: join(ARTIFACTS, "05-revoked-401.png"), fullPage: true });
  assert.deepEqual(problems, []);
  await context.close();
});

test("denying at the consent page comes back as access_denied", async () => {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const { page, problems } = await openDemo(context);
  await page.check("input[value=online]");
  await page.click("#begin");
  await page.fill("input[name=username]", "bob");
  await page.fill("input[name=password]", "bob-password");
  await page.click("button:has-text('Sign in')");
  await page.click("button[value=deny]");
  await page.waitForSelector("body[data-ready=true]", LOADED);
  await page.waitForFunction(() => document.querySelector(".card:last-child h2")?.textContent === "Refused");
  assert.match((await lastCard(page)).text, /access_denied/);
  assert.equal(await page.isDisabled("#call"), true);
  await page.screenshot({ path: join(ARTIFACTS, "06-denied.png"), fullPage: true });
  assert.deepEqual(problems, []);
  await context.close();
});

test("the demo served from another origin completes the whole flow through CORS: exchange, API, refresh, revoke, 401", async () => {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const { page, problems } = await openDemo(context, spa.origin);
  const crossOrigin = [];
  page.on("response", (response) => {
    if (response.url().startsWith(base) && response.request().resourceType() === "fetch") crossOrigin.push(response.request().method());
  });

  await page.click("#begin");
  await page.waitForSelector("input[name=username]");
  assert.ok(page.url().startsWith(base), "signing in happens on the authorization server");
  // Bob: alice granted this app in the first test, so her re-authorization would skip consent.
  await page.fill("input[name=username]", "bob");
  await page.fill("input[name=password]", "bob-password");
  await page.click("button:has-text('Sign in')");
  await page.click("button[value=allow]");
  await page.waitForSelector("body[data-ready=true]", LOADED);
  assert.ok(page.url().startsWith(`${spa.origin}/demo/`), "back on the app's own origin");
  await page.waitForFunction(() => [...document.querySelectorAll(".card h2")].some((h) => h.textContent === "Authorized"));
  assert.match(await page.locator(".card", { hasText: "Code exchange" }).textContent(), /HTTP\/1\.1 200/);

  await page.click("#call");
  await page.waitForFunction(() => document.querySelectorAll(".card").length === 5);
  assert.match((await lastCard(page)).text, /"account_id": "dbid:AACbobbobbobbobbobbobbobbobbobbobbo"/);
  await page.click("#jump");
  await page.click("#call");
  await page.waitForFunction(() => document.querySelectorAll(".card").length === 8);
  assert.match(await page.locator(".card", { hasText: "grant_type=refresh_token" }).textContent(), /HTTP\/1\.1 200/);
  await page.screenshot({ path: join(ARTIFACTS, "07-cross-origin-refreshed.png"), fullPage: true });

  await page.click("#revoke");
  await page.waitForFunction(() => [...document.querySelectorAll(".card h2")].some((h) => h.textContent === "Signed out"));
  await page.click("#replay");
  await page.waitForFunction(() => document.querySelector(".card:last-child h2")?.textContent === "API call refused");
  const refused = await lastCard(page);
  assert.match(refused.text, /HTTP\/1\.1 401/);
  assert.match(refused.text, /www-authenticate: Bearer[^\n]*invalid_token/i, "the page reads the exposed challenge");
  await page.screenshot({ path: join(ARTIFACTS, "08-cross-origin-401.png"), fullPage: true });
  // Every call the page made went to the other origin: the exchange, two API calls, the refresh,
  // revoke and the refused call (those with Authorization after a CORS preflight).
  assert.ok(crossOrigin.length >= 6, JSON.stringify(crossOrigin));
  assert.deepEqual(problems, []);
  await context.close();
});

test("with DPoP, the tokens are bound to a key of the page that cannot be exported, kept in IndexedDB, and every proof is shown", async () => {
  // A Worker in the standards profile with DPoP on (nonces at the token endpoint, the default),
  // issuer its own origin, on the sample's users and apps.
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const config = JSON.parse(readFileSync(join(root, "examples/worker/config.sample.json"), "utf8"));
  config.apps.find((app) => app.key === "demo-browser").redirect_uris = [`${origin}/demo/`];
  config.profile = { kind: "standards", issuer: `${origin}/`, dpop: {} };
  writeFileSync(join(dir, "dpop.json"), JSON.stringify(config));
  const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
  const dpopWorker = await startWorker({ configPath: join(dir, "dpop.json"), port, persistTo: join(dir, "dpop-state"), allowSampleSecret: true });
  try {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const { page, problems } = await openDemo(context, origin);
    assert.equal(await page.isChecked("#dpop"), true, "the server offers DPoP: the page binds its tokens");
    await page.click("#begin");
    await page.fill("input[name=username]", "alice");
    await page.fill("input[name=password]", "alice-password");
    await page.click("button:has-text('Sign in')");
    await page.click("button[value=allow]");
    await page.waitForSelector("body[data-ready=true]", LOADED);
    await page.waitForFunction(() => [...document.querySelectorAll(".card h2")].some((h) => h.textContent === "Authorized"));
    // The exchange meets the server's nonce, then is taken with a new proof carrying it.
    assert.deepEqual(await cards(page), ["Authorization URL", "Redirect back", "Code exchange: the server's nonce", "Code exchange", "Authorized"]);
    assert.match(await page.locator(".card").first().textContent(), /dpop_jkt = [\w-]{43}/);
    const exchange = await page.locator(".card").nth(3).textContent();
    assert.match(exchange, /HTTP\/1\.1 200/);
    assert.match(exchange, /"token_type": "DPoP"/);
    assert.match(exchange, /"typ": "dpop\+jwt"/);
    assert.match(exchange, new RegExp(`"htu": "${origin}/oauth2/token"`));
    assert.match(exchange, /"nonce": "[\w-]+"/);
    assert.match(await lastCard(page).then((card) => card.text), /bound to this page's key/);

    // The key: in IndexedDB, its private half not exportable, its public half the proofs' key.
    const key = await page.evaluate(async () => {
      const db = await new Promise((ok, fail) => Object.assign(indexedDB.open("edgegrant-demo"), { onsuccess: (e) => ok(e.target.result), onerror: fail }));
      const kept = await new Promise((ok) => (db.transaction("keys").objectStore("keys").get("dpop").onsuccess = (e) => ok(e.target.result)));
      const exported = await crypto.subtle.exportKey("jwk", kept.privateKey).then(() => "exported", (e) => e.name);
      return { extractable: kept.privateKey.extractable, exported, x: kept.publicJwk.x };
    });
    assert.deepEqual({ extractable: key.extractable, exported: key.exported }, { extractable: false, exported: "InvalidAccessError" });
    assert.match(exchange, new RegExp(`"x": "${key.x}"`));
    await page.screenshot({ path: join(ARTIFACTS, "09-dpop-bound.png"), fullPage: true });

    // The API: the DPoP scheme with a proof of the call, carrying the token's hash.
    await page.click("#call");
    await page.waitForFunction(() => document.querySelectorAll(".card").length === 6);
    let card = await lastCard(page);
    assert.equal(card.title, "API call");
    assert.match(card.text, /Authorization: DPoP /);
    assert.match(card.text, /"ath": "[\w-]{43}"/);
    assert.match(card.text, /"account_id": "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"/);
    // Four hours later: the refresh goes with a proof too (the bound refresh token needs one).
    await page.click("#jump");
    await page.click("#call");
    await page.waitForFunction(() => document.querySelectorAll(".card").length === 9);
    assert.deepEqual((await cards(page)).slice(6), ["Four hours later", "Refresh", "API call"]);
    const refresh = await page.locator(".card", { hasText: "grant_type=refresh_token" }).textContent();
    assert.match(refresh, /HTTP\/1\.1 200/);
    assert.match(refresh, /"typ": "dpop\+jwt"/);

    // Revoked with a proof; the last call replayed as it went (token and proof) is refused.
    await page.click("#revoke");
    await page.waitForFunction(() => [...document.querySelectorAll(".card h2")].some((h) => h.textContent === "Signed out"));
    assert.match(await page.locator(".card", { hasText: "POST /2/auth/token/revoke" }).textContent(), /Authorization: DPoP [^]*HTTP\/1\.1 200/);
    await page.click("#replay");
    await page.waitForFunction(() => document.querySelector(".card:last-child h2")?.textContent === "API call refused");
    card = await lastCard(page);
    assert.match(card.text, /HTTP\/1\.1 401/);
    assert.match(card.text, /www-authenticate: DPoP realm="api", error="invalid_token"[^\n]*algs="ES256 RS256"/i);
    await page.screenshot({ path: join(ARTIFACTS, "10-dpop-replayed-401.png"), fullPage: true });
    assert.deepEqual(problems, []);
    await context.close();
  } finally {
    await dpopWorker.close();
  }
});
