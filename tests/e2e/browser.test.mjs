// The browser demo in real Chromium (Debian's, driven by playwright-core) against the Worker host
// in workerd: sign in, Allow, the account, a refresh, revoke and the 401 after it; then a Deny
// and its access_denied. Screenshots of each stage land in tests/e2e/artifacts/.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

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

let worker, browser, dir, base;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), "edgegrant-browser-"));
  // The sample configuration, with the demo's redirect URI on this run's port.
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const config = JSON.parse(readFileSync(join(root, "examples/worker/config.sample.json"), "utf8"));
  config.apps.find((app) => app.key === "demo-browser").redirect_uris = [`${base}/demo/`];
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  const { startWorker } = await import(pathToFileURL(join(root, "examples/worker/dev.mjs")).href);
  worker = await startWorker({ configPath: join(dir, "config.json"), port, persistTo: join(dir, "state"), allowSampleSecret: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});

after(async () => {
  await browser?.close();
  await worker?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The titles of the timeline's cards, in order. */
const cards = (page) => page.locator(".card h2").allTextContents();

async function lastCard(page) {
  const card = page.locator(".card").last();
  return { title: await card.locator("h2").textContent(), text: await card.textContent() };
}

async function openDemo(context) {
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(error.message));
  await page.goto(`${base}/demo/`);
  await page.waitForSelector("body[data-ready=true]");
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

  await page.waitForSelector("body[data-ready=true]");
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

  // Four hours later by the client's clock: the next call refreshes first.
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
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForFunction(() => document.querySelector(".card:last-child h2")?.textContent === "Refused");
  assert.match((await lastCard(page)).text, /access_denied/);
  assert.equal(await page.isDisabled("#call"), true);
  await page.screenshot({ path: join(ARTIFACTS, "06-denied.png"), fullPage: true });
  assert.deepEqual(problems, []);
  await context.close();
});
