// The package README's quick-starts, as a newcomer meets them: the package packed into a tarball
// (`npm pack`, which also copies in the licences and the changelog), installed into an empty
// directory, each program of the README written out exactly as it stands there (a ```js block
// whose first line names its file: `// server.mjs`) and run; then an app's whole life against
// it — authorization with sign-in and consent, the code exchanged, the API called, a refresh, a
// revocation. A README that stops working fails here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startPostgres } from "../../tests/postgres/cluster.mjs";
import { runWrangler } from "../../examples/worker/dev.mjs";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const readme = readFileSync(join(pkg, "README.md"), "utf8");

/** The README's files: `{ path: text }` for every fenced block whose first line names its file alone (`// src/worker.js`, `# wrangler.toml`). */
function programs(text) {
  const found = {};
  for (const [, body] of text.matchAll(/```\w+\n([\s\S]*?)```/g)) {
    const name = /^(?:\/\/|#) ([\w./-]+\.(?:m?js|ts|toml|json))\n/.exec(body)?.[1];
    if (name) found[name] = body;
  }
  return found;
}

/** The package as npm would install it: packed, then installed into `dir`, an empty project. */
function installPacked(dir) {
  const tarballs = mkdtempSync(join(tmpdir(), "edgegrant-pack-"));
  try {
    execFileSync("npm", ["pack", "--silent", "--pack-destination", tarballs], { cwd: pkg, stdio: ["ignore", "ignore", "inherit"] });
    const [tarball] = readdirSync(tarballs).filter((f) => f.endsWith(".tgz"));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "readme-app", private: true, type: "module" }));
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(tarballs, tarball)], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
  } finally {
    rmSync(tarballs, { recursive: true, force: true });
  }
  // The README's `npm i better-sqlite3` or `pg`: the package's own install has both (and compiled
  // better-sqlite3, whose prebuilt binaries come from GitHub, which this machine cannot reach);
  // linked, not installed again.
  mkdirSync(join(dir, "node_modules"), { recursive: true });
  for (const driver of ["better-sqlite3", "pg"]) symlinkSync(join(pkg, "node_modules", driver), join(dir, "node_modules", driver), "dir");
  // And `npm i -D wrangler` (with workerd): the Worker example's, linked likewise.
  symlinkSync(join(pkg, "..", "examples", "worker", "node_modules", "wrangler"), join(dir, "node_modules", "wrangler"), "dir");
}

const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

/** Starts `node <file>` in `dir` and resolves once it printed its first line (listening). */
function start(t, dir, file, env) {
  const child = spawn(process.execPath, [file], { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  t.after(() => child.kill());
  let output = "";
  return new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      output += chunk;
      if (output.includes("\n")) resolve(output);
    });
    child.stderr.on("data", (chunk) => (output += chunk));
    child.once("exit", (code) => reject(new Error(`${file} exited (${code}): ${output}`)));
  });
}

const base64url = (bytes) => Buffer.from(bytes).toString("base64url");
const unescapeHtml = (text) => text.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

test("the README's quick-starts run as written from the packed package — Node on SQLite and on PostgreSQL, a Worker under wrangler dev — through sign-in, consent, token, API call, refresh and revocation, and type-check (a Node project without the DOM library too)", { timeout: 300_000 }, async (t) => {
  assert.ok(existsSync(join(pkg, "dist", "edgegrant_wasm_bg.wasm")), "build the package first (pkg/scripts/setup.sh)");
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-readme-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  installPacked(dir);
  const installed = join(dir, "node_modules", "edgegrant");
  for (const file of ["README.md", "CHANGELOG.md", "LICENSE-MIT", "LICENSE-APACHE", "src/index.d.ts", "dist/edgegrant_wasm_bg.wasm"]) {
    assert.ok(existsSync(join(installed, file)), `the tarball ships ${file}`);
  }
  for (const file of ["LICENSE-MIT", "LICENSE-APACHE", "CHANGELOG.md"]) {
    assert.equal(readFileSync(join(installed, file), "utf8"), readFileSync(join(pkg, "..", file), "utf8"), `${file} is the repository's`);
  }
  // Every link of the README leads somewhere its reader has: the web, or a file of the tarball.
  for (const [, target] of readme.matchAll(/\]\((?!https?:|#|mailto:)([^)\s]+)\)/g)) {
    assert.ok(existsSync(join(installed, target.split("#")[0])), `the README links to ${target}, which the tarball does not carry`);
  }
  const { "server.mjs": server } = programs(readme);
  assert.ok(server, "the README has the Node quick-start's server.mjs");
  writeFileSync(join(dir, "server.mjs"), server);

  const node = async (t, env) => {
    const port = await freePort();
    const secret = base64url(randomBytes(32));
    await start(t, dir, "server.mjs", { ...env, EDGEGRANT_SERVER_KEY: base64url(randomBytes(32)), MY_APP_SECRET: secret, PORT: String(port) });
    // The program's issuer is http://127.0.0.1:<PORT> unless ISSUER says otherwise.
    return { origin: `http://127.0.0.1:${port}`, secret };
  };
  await t.test("Node, SQLite", async (t) => lifeOfAnApp(await node(t, {})));
  await t.test("Node, PostgreSQL", async (t) => {
    const postgres = await startPostgres();
    t.after(() => postgres.stop());
    await lifeOfAnApp(await node(t, { DATABASE_URL: postgres.url }));
  });

  await t.test("TypeScript: the program type-checks, strict, with skipLibCheck false and no DOM library, under node16, nodenext, bundler and node10 resolution", () => {
    // The README's `npm i -D typescript @types/node`, linked from the package's own.
    mkdirSync(join(dir, "node_modules", "@types"), { recursive: true });
    symlinkSync(join(pkg, "node_modules", "typescript"), join(dir, "node_modules", "typescript"), "dir");
    symlinkSync(join(pkg, "node_modules", "@types", "node"), join(dir, "node_modules", "@types", "node"), "dir");
    // A module of a project without Node's types (a Worker's, a browser's) using ".".
    writeFileSync(join(dir, "web.ts"), [
      'import { createAuthServer, type AuthServer, type Storage } from "edgegrant";',
      'export const make = (storage: Storage): AuthServer => createAuthServer({ serverKey: "k", apps: [], storage });',
      "",
    ].join("\n"));
    const tsc = join(dir, "node_modules", "typescript", "bin", "tsc");
    // node10 (`"moduleResolution": "node"`) reads no exports map: the package's types and
    // typesVersions name each subpath's declarations for it.
    for (const resolution of ["node16", "nodenext", "bundler", "node10"]) {
      const module = ["bundler", "node10"].includes(resolution) ? "esnext" : resolution;
      const check = (name, files, options) => {
        // A node10 project imports node:http's CommonJS default through esModuleInterop, as such projects do.
        const interop = resolution === "node10" ? { esModuleInterop: true } : {};
        writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { noEmit: true, strict: true, skipLibCheck: false, target: "es2022", module, moduleResolution: resolution, ...interop, ...options }, files }));
        const run = spawnSync(process.execPath, [tsc, "-p", dir], { encoding: "utf8" });
        assert.equal(run.status, 0, `${name} under ${resolution}:\n${run.stdout}${run.stderr}`);
      };
      // A Node project: Node's types, and no DOM library (lib es2022): the declarations name
      // none of the DOM's types.
      check("server.mjs (Node, no DOM)", ["server.mjs"], { allowJs: true, checkJs: true, lib: ["es2022"], types: ["node"] });
      check("web.ts (no @types/node)", ["web.ts"], { lib: ["es2022", "dom"], types: [] });
    }
  });

  await t.test("Worker, wrangler dev", async (t) => {
    const files = programs(readme);
    assert.ok(files["wrangler.toml"] && files["src/worker.js"], "the README has the Worker quick-start's wrangler.toml and src/worker.js");
    const worker = join(dir, "worker");
    mkdirSync(join(worker, "src"), { recursive: true });
    for (const file of ["wrangler.toml", "src/worker.js"]) writeFileSync(join(worker, file), files[file]);
    symlinkSync(join(dir, "node_modules"), join(worker, "node_modules"), "dir");
    const secret = base64url(randomBytes(32));
    const [port, inspector] = [await freePort(), await freePort()];
    const origin = `http://127.0.0.1:${port}`;
    // The README's .dev.vars, with this run's values (the issuer: where wrangler dev listens).
    writeFileSync(join(worker, ".dev.vars"), `SERVER_KEY=${base64url(randomBytes(32))}\nMY_APP_SECRET=${secret}\nISSUER=${origin}\n`);
    const running = await runWrangler({
      args: [join(worker, "node_modules", "wrangler", "bin", "wrangler.js"), "dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector), "--show-interactive-dev-session=false"],
      cwd: worker,
      url: origin,
      timeoutMs: 120_000,
      // The Worker answers 404 at / (no route of the core's): it is up.
      ready: (response) => response.status === 404,
    });
    t.after(() => running.close());
    await lifeOfAnApp({ origin, secret });
  });
});

/** An app's whole life against the quick-start's server at `origin`, whose app secret is `secret`. */
async function lifeOfAnApp({ origin, secret }) {
  const basic = `Basic ${Buffer.from(`my-app:${secret}`).toString("base64")}`;
  const form = (fields, headers = {}) => ({ method: "POST", redirect: "manual", headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(fields).toString() });

  // 1. The authorization request: sign-in first, then the consent page, then allow.
  const verifier = base64url(randomBytes(32));
  const authorize = `/oauth2/authorize?${new URLSearchParams({
    client_id: "my-app",
    response_type: "code",
    redirect_uri: "https://my-app.example/callback",
    scope: "profile offline_access",
    code_challenge: base64url(createHash("sha256").update(verifier).digest()),
    code_challenge_method: "S256",
    state: "s1",
  })}`;
  const signInPage = await (await fetch(origin + authorize)).text();
  assert.match(signInPage, /data-page="sign_in"/);
  const returnTo = unescapeHtml(/name="return_to" value="([^"]*)"/.exec(signInPage)[1]);
  assert.equal(returnTo, authorize);
  const signedIn = await fetch(`${origin}/signin`, form({ return_to: returnTo }));
  assert.equal(signedIn.status, 303);
  const cookie = signedIn.headers.get("set-cookie").split(";")[0];
  const consent = await fetch(origin + signedIn.headers.get("location"), { headers: { cookie } });
  const consentPage = await consent.text();
  assert.equal(consent.status, 200);
  assert.match(consentPage, /My App wants access/);
  assert.match(consentPage, /Signed in as Demo User/);
  const query = unescapeHtml(/name="query" value="([^"]*)"/.exec(consentPage)[1]);
  const allowed = await fetch(`${origin}/oauth2/authorize`, form({ query, decision: "allow" }, { cookie, origin }));
  assert.equal(allowed.status, 302);
  const callback = new URL(allowed.headers.get("location"));
  assert.equal(`${callback.origin}${callback.pathname}`, "https://my-app.example/callback");
  assert.equal(callback.searchParams.get("state"), "s1");
  assert.equal(callback.searchParams.get("iss"), origin, "the standards profile names the issuer (RFC 9207)");
  const metadata = await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json();
  assert.equal(metadata.revocation_endpoint, `${origin}/oauth2/revoke`);

  // 2. The code exchanged, with the app's secret and the PKCE verifier.
  const exchanged = await fetch(`${origin}/oauth2/token`, form({ grant_type: "authorization_code", code: callback.searchParams.get("code"), redirect_uri: "https://my-app.example/callback", code_verifier: verifier }, { authorization: basic }));
  const tokens = await exchanged.json();
  assert.equal(exchanged.status, 200, JSON.stringify(tokens));
  assert.equal(tokens.token_type, "bearer");
  assert.equal(tokens.expires_in, 14_400);
  assert.ok(tokens.refresh_token, "offline access: a refresh token");

  // 3. The API, with the access token.
  const call = (token) => fetch(`${origin}/api/me`, { headers: { authorization: `Bearer ${token}` } });
  const account = await call(tokens.access_token);
  assert.equal(account.status, 200);
  assert.deepEqual(await account.json(), { account_id: "demo-user", name: "Demo User" });

  // 4. A refresh: a new access token, the refresh token unchanged.
  const refreshed = await fetch(`${origin}/oauth2/token`, form({ grant_type: "refresh_token", refresh_token: tokens.refresh_token }, { authorization: basic }));
  const fresh = await refreshed.json();
  assert.equal(refreshed.status, 200, JSON.stringify(fresh));
  assert.notEqual(fresh.access_token, tokens.access_token);
  assert.equal((await call(fresh.access_token)).status, 200);

  // 5. Revocation (RFC 7009) ends the grant: every token of it.
  const revoked = await fetch(`${origin}/oauth2/revoke`, form({ token: tokens.refresh_token }, { authorization: basic }));
  assert.equal(revoked.status, 200);
  assert.equal((await call(fresh.access_token)).status, 401);
  assert.equal((await call(tokens.access_token)).status, 401);
  const afterRevocation = await fetch(`${origin}/oauth2/token`, form({ grant_type: "refresh_token", refresh_token: tokens.refresh_token }, { authorization: basic }));
  assert.equal(afterRevocation.status, 400);
  assert.equal((await afterRevocation.json()).error, "invalid_grant");

  // The program's own guard: a sign-in form too long is refused.
  assert.equal((await fetch(`${origin}/signin`, form({ return_to: "x".repeat(5000) }))).status, 413);
}
