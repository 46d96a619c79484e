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
import { fileURLToPath, pathToFileURL } from "node:url";
import { startPostgres } from "../../tests/postgres/cluster.mjs";
import { runWrangler } from "../../examples/worker/dev.mjs";
import { testCertificates } from "../../tests/e2e/interop.mjs";
import { CALLBACK, Provider, StreamableHTTPClientTransport, UnauthorizedError, connect, documentServer, text } from "../../examples/mcp/test/client.mjs";

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
function start(t, dir, file, env, nodeArgs = []) {
  const child = spawn(process.execPath, [...nodeArgs, file], { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
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

/**
 * `wrangler dev` in `worker` (the README's files there), its `.dev.vars` as the README has the
 * reader write them — a fresh SERVER_KEY, the issuer where it listens, and `vars` — stopped after
 * the test. Resolves its origin once it answers.
 */
async function wranglerDev(t, worker, vars = {}) {
  const [port, inspector] = [await freePort(), await freePort()];
  const origin = `http://127.0.0.1:${port}`;
  const devVars = { SERVER_KEY: base64url(randomBytes(32)), ...vars, ISSUER: origin };
  writeFileSync(join(worker, ".dev.vars"), Object.entries(devVars).map(([name, value]) => `${name}=${value}\n`).join(""));
  const running = await runWrangler({
    args: [join(worker, "node_modules", "wrangler", "bin", "wrangler.js"), "dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector), "--show-interactive-dev-session=false"],
    cwd: worker,
    url: origin,
    timeoutMs: 120_000,
    // The Worker answers 404 at / (no route of the core's): it is up.
    ready: (response) => response.status === 404,
  });
  t.after(() => running.close());
  return origin;
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
    const origin = await wranglerDev(t, worker, { MY_APP_SECRET: secret });
    await lifeOfAnApp({ origin, secret });
  });

  // A CA of the test's own, for the metadata documents it serves over https on loopback.
  const tlsDir = mkdtempSync(join(tmpdir(), "edgegrant-readme-tls-"));
  t.after(() => rmSync(tlsDir, { recursive: true, force: true }));
  const tls = testCertificates(tlsDir);
  await t.test("MCP quick-start on Node: the MCP SDK's own client connects by a metadata document and by registering — sign-in, consent, tools, a refresh, the revocation", async (t) => {
    const { "mcp-server.mjs": program } = programs(readme);
    assert.ok(program, "the README has the MCP quick-start's mcp-server.mjs");
    const mcpDir = join(dir, "mcp");
    mkdirSync(mcpDir);
    writeFileSync(join(mcpDir, "mcp-server.mjs"), program);
    writeFileSync(join(mcpDir, "package.json"), JSON.stringify({ type: "module" }));
    // The README's `npm i @modelcontextprotocol/sdk zod`: the MCP example's, linked.
    mkdirSync(join(mcpDir, "node_modules", "@modelcontextprotocol"), { recursive: true });
    symlinkSync(join(pkg, "..", "examples", "mcp", "node_modules", "@modelcontextprotocol", "sdk"), join(mcpDir, "node_modules", "@modelcontextprotocol", "sdk"), "dir");
    for (const name of ["zod", "edgegrant", "better-sqlite3"]) symlinkSync(join(name === "zod" ? join(pkg, "..", "examples", "mcp", "node_modules") : join(dir, "node_modules"), name), join(mcpDir, "node_modules", name), "dir");
    // The program fetches metadata documents from public https addresses only. This test serves
    // one on 127.0.0.1 with a certificate of its own CA: a loader hook hands the program the
    // package's fetcher with that CA and loopback allowed — the one thing a machine without a
    // public address cannot provide otherwise. The program itself runs as written.
    const real = join(mcpDir, "node_modules", "edgegrant", "src", "documents-node.js");
    writeFileSync(join(mcpDir, "loopback-documents-shim.mjs"), [
      `import { readFileSync } from "node:fs";`,
      `import { fetchDocumentNode as guarded } from ${JSON.stringify(`${pathToFileURL(real).href}?real`)};`,
      `export * from ${JSON.stringify(`${pathToFileURL(real).href}?real`)};`,
      `const ca = readFileSync(${JSON.stringify(tls.caPath)}, "utf8");`,
      `export const fetchDocumentNode = (request, options = {}) => guarded(request, { ...options, allowLoopback: true, ca });`,
      "",
    ].join("\n"));
    writeFileSync(join(mcpDir, "loopback-documents-hooks.mjs"), [
      `const shim = ${JSON.stringify(pathToFileURL(join(mcpDir, "loopback-documents-shim.mjs")).href)};`,
      "export async function resolve(specifier, context, next) {",
      "  const resolved = await next(specifier, context);",
      `  return resolved.url.endsWith("/edgegrant/src/documents-node.js") && context.parentURL !== shim ? { ...resolved, url: shim } : resolved;`,
      "}",
      "",
    ].join("\n"));
    writeFileSync(join(mcpDir, "loopback-documents.mjs"), `import { register } from "node:module";\nregister("./loopback-documents-hooks.mjs", import.meta.url);\n`);
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    await start(t, mcpDir, "mcp-server.mjs", { EDGEGRANT_SERVER_KEY: base64url(randomBytes(32)), PORT: String(port) }, ["--import", "./loopback-documents.mjs"]);
    const document = await documentServer(tls);
    t.after(() => document.close());
    for (const identify of ["document", "registration"]) await mcpClientLife(origin, identify === "document" ? document : null);
    assert.equal(document.fetches, 1, "the document was fetched once: kept for its max-age");
  });

  await t.test("MCP quick-start on a Worker, under wrangler dev: the MCP SDK's own client registers — sign-in, consent, tools, a refresh, the revocation", async (t) => {
    const files = programs(readme);
    const worker = join(dir, "mcp-worker");
    mkdirSync(join(worker, "src"), { recursive: true });
    for (const file of ["wrangler.toml", "src/worker.js"]) {
      assert.ok(files[`mcp-worker/${file}`], `the README has the MCP Worker's mcp-worker/${file}`);
      writeFileSync(join(worker, file), files[`mcp-worker/${file}`]);
    }
    // The README's installs: the package and wrangler as the quick-starts have them, the MCP
    // SDK and zod the MCP example's.
    mkdirSync(join(worker, "node_modules", "@modelcontextprotocol"), { recursive: true });
    for (const name of ["edgegrant", "wrangler"]) symlinkSync(join(dir, "node_modules", name), join(worker, "node_modules", name), "dir");
    symlinkSync(join(pkg, "..", "examples", "mcp", "node_modules", "zod"), join(worker, "node_modules", "zod"), "dir");
    symlinkSync(join(pkg, "..", "examples", "mcp", "node_modules", "@modelcontextprotocol", "sdk"), join(worker, "node_modules", "@modelcontextprotocol", "sdk"), "dir");
    await mcpClientLife(await wranglerDev(t, worker), null);
  });

  await t.test("MCP quick-start on another host, with edgegrant/resource: the MCP SDK's own client, by a metadata document and registered at the authorization server the MCP server names — sign-in, consent, tools checked by introspection, a refresh, the revocation", async (t) => {
    const files = programs(readme);
    assert.ok(files["auth.mjs"] && files["mcp-resource.mjs"], "the README has auth.mjs and mcp-resource.mjs");
    const mcpDir = join(dir, "mcp");
    for (const file of ["auth.mjs", "mcp-resource.mjs"]) writeFileSync(join(mcpDir, file), files[file]);
    const [authPort, mcpPort] = [await freePort(), await freePort()];
    const env = { MCP_SERVER_SECRET: base64url(randomBytes(32)), ISSUER: `http://127.0.0.1:${authPort}`, MCP_URL: `http://127.0.0.1:${mcpPort}/mcp` };
    // The authorization server fetches documents as the MCP quick-start on Node does (the same
    // loader hook: the test's CA, loopback allowed).
    await start(t, mcpDir, "auth.mjs", { ...env, EDGEGRANT_SERVER_KEY: base64url(randomBytes(32)), PORT: String(authPort) }, ["--import", "./loopback-documents.mjs"]);
    await start(t, mcpDir, "mcp-resource.mjs", { ...env, PORT: String(mcpPort) });
    const document = await documentServer(tls);
    t.after(() => document.close());
    for (const identify of ["document", "registration"]) await mcpClientLife(env.ISSUER, identify === "document" ? document : null, env.MCP_URL);
    assert.equal(document.fetches, 1, "the document was fetched once");
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

/**
 * The MCP SDK's client against the MCP quick-start at `origin` (the authorization server; the
 * MCP endpoint `mcp`, its /mcp by default): named by `document` (its metadata document) or,
 * without one, registered. The test plays the user's browser: the demo
 * sign-in, the consent page, allow.
 */
async function mcpClientLife(origin, document, mcp = `${origin}/mcp`) {
  const provider = new Provider(document?.url);
  // A bare 401, and the SDK finds the rest itself: its first connect ends at the sign-in.
  await assert.rejects(connect(mcp, provider), UnauthorizedError);
  const clientId = provider.saved.client.client_id;
  if (document) assert.equal(clientId, document.url, "the document's URL is the client_id");
  else assert.match(clientId, /^dyn\./, "registered: a client_id the server minted");
  const authorization = new URL(provider.authorizationUrl);
  assert.equal(authorization.searchParams.get("resource"), mcp, "the SDK names the MCP endpoint as its resource, and the server takes it");

  const form = (fields, headers = {}) => ({ method: "POST", redirect: "manual", headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(fields).toString() });
  const signInPage = await (await fetch(authorization)).text();
  const returnTo = unescapeHtml(/name="return_to" value="([^"]*)"/.exec(signInPage)[1]);
  const signedIn = await fetch(`${origin}/signin`, form({ return_to: returnTo }));
  const cookie = signedIn.headers.get("set-cookie").split(";")[0];
  const consentPage = await (await fetch(origin + signedIn.headers.get("location"), { headers: { cookie } })).text();
  assert.match(consentPage, /data-page="consent"/);
  const query = unescapeHtml(/name="query" value="([^"]*)"/.exec(consentPage)[1]);
  const allowed = await fetch(`${origin}/oauth2/authorize`, form({ query, decision: "allow" }, { cookie, origin }));
  const redirect = new URL(allowed.headers.get("location"));
  assert.equal(`${redirect.origin}${redirect.pathname}`, CALLBACK);
  await new StreamableHTTPClientTransport(new URL(mcp), { authProvider: provider }).finishAuth(redirect.searchParams.get("code"));
  const first = provider.saved.tokens;
  assert.ok(first.refresh_token, "a refresh token: the client registered the refresh_token grant");

  const { client } = await connect(mcp, provider);
  assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), ["add", "whoami"]);
  assert.equal(text(await client.callTool({ name: "whoami", arguments: {} })), "demo-user");
  assert.equal(text(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })), "5");

  // An access token the server refuses (as an expired one is): the SDK refreshes and calls again.
  provider.saved.tokens = { ...first, access_token: "A".repeat(43) };
  assert.equal(text(await client.callTool({ name: "add", arguments: { a: 40, b: 2 } })), "42");
  const second = provider.saved.tokens;
  assert.notEqual(second.refresh_token, first.refresh_token, "the refresh token rotated (a public client)");

  // Revoked (RFC 7009, as the client would on sign-out): the next call sends the SDK back to the sign-in.
  const revoked = await fetch(`${origin}/oauth2/revoke`, form({ token: second.refresh_token, client_id: clientId }));
  assert.equal(revoked.status, 200);
  provider.authorizationUrl = null;
  await assert.rejects(client.callTool({ name: "whoami", arguments: {} }), UnauthorizedError);
  assert.ok(provider.authorizationUrl, "after revocation the SDK asks for a new sign-in");
  await client.close();
}
