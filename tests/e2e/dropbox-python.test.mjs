// The official Dropbox Python SDK (PyPI `dropbox`, pinned in python/requirements.txt, installed into
// tests/e2e/.venv by python/setup.sh), unchanged, against our hosts: authorization URL → browser
// sign-in and consent → code exchange → users_get_current_account → refresh →
// users_get_current_account → auth_token_revoke → 401 (AuthError) → refresh refused, for a public
// PKCE app and a confidential app, each in the SDK's two flows: DropboxOAuth2Flow (the code comes
// back to the redirect URI) and DropboxOAuth2FlowNoRedirect (the host shows the code on a page and
// the user copies it into the app).
//
//   tests/e2e/python/setup.sh && node --test tests/e2e/dropbox-python.test.mjs   (repository root)
//
// The app's side is python/dropbox_flow.py, one process per flow, which says what the SDK returned
// or raised at each step in JSON lines; the user's side (the browser) is played here over HTTP, as
// in dropbox-sdk.test.mjs. users_get_current_account passing at all means the host's account
// passed the SDK's own validators (stone's FullAccount: referral_link required, account_id exactly
// 40 characters, ...), which the Python SDK, unlike the JavaScript one, applies to every result.
//
// HOW THE SDK IS POINTED AT A LOCAL HOST — only through its own settings.
// The SDK writes every URL as https://<host>/… (oauth.py build_url, dropbox_client.py
// _get_route_url and refresh_access_token), with the hosts from dropbox/session.py: API_HOST and
// WEB_HOST, which it reads at import from the environment variables DROPBOX_API_HOST and
// DROPBOX_WEB_HOST. No constructor takes a host; the OAuth flow classes take no session either (they
// make their own), so a transport adapter given through Dropbox(session=…) would reach the API
// calls but not the code exchange, short of replacing the flow's session attribute. What the
// constructors of both do take is `ca_certs`: the CA file their pinned sessions verify against.
// So the process gets DROPBOX_API_HOST = DROPBOX_WEB_HOST = 127.0.0.1:<port of a TLS tap>, every
// constructor gets ca_certs = a CA made here with openssl for this run (the tap's certificate is
// issued by it for IP 127.0.0.1), and the SDK speaks real HTTPS, with verification, to the tap,
// which relays the decrypted bytes to the host's plain HTTP port and keeps a copy of them. Nothing
// of the SDK is replaced or patched; no proxy, no name resolution. (The JavaScript test rewrites
// origins in a custom fetch instead, since that SDK has a fetch option but no way to trust a CA.)
// The environment the Python process gets is otherwise empty of what requests would read
// (proxies, REQUESTS_CA_BUNDLE), so nothing else can intervene.
// The copy the tap keeps shows every request the SDK made, in order, at the host: the exchange
// (with or without redirect_uri), the API calls with their Bearer tokens, the refresh, the revoke.
//
// Hosts: the Node host, the native host and the Worker host (interop.mjs, shared with
// dropbox-sdk.test.mjs), each started once for its four flows.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ALICE, REDIRECT, apps, b64url, browse, hosts, root, startTap, step } from "./interop.mjs";

const PYTHON = join(root, "tests/e2e/.venv/bin/python");
const SCRIPT = join(root, "tests/e2e/python/dropbox_flow.py");
const flows = [
  { name: "redirect flow (DropboxOAuth2Flow)", redirect: REDIRECT },
  { name: "no-redirect flow (DropboxOAuth2FlowNoRedirect, code shown on a page)", redirect: null },
];

// ---- certificates: a CA for this run and the tap's certificate for 127.0.0.1 --------------------

function makeCertificates() {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-python-sdk-"));
  const file = (name) => join(dir, name);
  const openssl = (...args) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=edgegrant interop test CA",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  openssl("req", "-new", ...ec, "-keyout", "tap.key", "-out", "tap.csr", "-subj", "/CN=127.0.0.1");
  // Extensions a strict verifier (Python 3.13's VERIFY_X509_STRICT) asks of a server certificate.
  writeFileSync(file("tap.ext"), [
    "subjectAltName=IP:127.0.0.1",
    "basicConstraints=critical,CA:FALSE",
    "keyUsage=critical,digitalSignature",
    "extendedKeyUsage=serverAuth",
    "subjectKeyIdentifier=hash",
    "authorityKeyIdentifier=keyid",
  ].join("\n"));
  openssl("x509", "-req", "-in", "tap.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "1", "-days", "2", "-extfile", "tap.ext", "-out", "tap.pem");
  return { dir, ca: file("ca.pem"), key: readFileSync(file("tap.key")), cert: readFileSync(file("tap.pem")) };
}

// ---- the app: dropbox_flow.py ---------------------------------------------------------------------

/**
 * Starts dropbox_flow.py for one app and flow, with the SDK's hosts set to `sdkHost`. Returns
 * `{ next(), send(obj), stderr(), close() }`: `next()` resolves the script's next JSON line.
 */
function startApp({ app, redirect, sdkHost, ca }) {
  const args = { app_key: app.clientId, app_secret: app.clientSecret ?? null, pkce: app.pkce, scopes: app.scopes, redirect_uri: redirect, ca_certs: ca };
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, PYTHONUNBUFFERED: "1", PYTHONDONTWRITEBYTECODE: "1", DROPBOX_API_HOST: sdkHost, DROPBOX_WEB_HOST: sdkHost };
  const child = spawn(PYTHON, [SCRIPT, JSON.stringify(args)], { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((ok) => child.once("close", ok));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    async next() {
      const { value, done } = await lines.next();
      if (done) throw new Error(`dropbox_flow.py ended early (exit ${await exited}): ${stderr}`);
      return JSON.parse(value);
    },
    send: (obj) => child.stdin.write(JSON.stringify(obj) + "\n"),
    stderr: () => stderr,
    close: async () => (child.exitCode === null && child.kill(), await exited),
  };
}

/** The script's report of step `name`, asserted to be its next line; fails with what it raised. */
async function report(app, name) {
  const line = await app.next();
  assert.equal(line.step, name, `the script's next step: ${JSON.stringify(line)}`);
  assert.ok(line.ok, `${name}: ${line.error ? `${line.error.type}: ${line.error.repr}\n${line.error.traceback}` : `returned ${line.returned}`}`);
  return line;
}

const form = (request) => Object.fromEntries(new URLSearchParams(request.body.toString("utf8")));

// ---- the scenario --------------------------------------------------------------------------------

assert.ok(existsSync(PYTHON), "the Python SDK is not installed: run tests/e2e/python/setup.sh (tests/all.sh does)");
const certificates = makeCertificates();
after(() => rmSync(certificates.dir, { recursive: true, force: true }));

for (const host of hosts) {
  describe(`${host.name} host`, () => {
    let server;
    before(async () => (server = await host.start()), { timeout: host.startTimeout });
    after(() => server?.close());

    for (const app of apps) {
      for (const flow of flows) {
        test(`${host.name}: Dropbox Python SDK, ${app.name}, ${flow.name}: exchange, get_current_account, refresh, revoke, 401`, { timeout: 120_000 }, async (t) => {
          const tap = await startTap(server.url, { tls: { key: certificates.key, cert: certificates.cert } });
          t.after(() => tap.close());
          const sdkHost = new URL(tap.url).host;
          const py = startApp({ app, redirect: flow.redirect, sdkHost, ca: certificates.ca });
          t.after(() => py.close());

          const start = await py.next();
          assert.equal(start.event, "authorize_url", JSON.stringify(start));
          const authUrl = new URL(start.url);
          await t.test("the SDK's authorization URL", () => {
            assert.equal(authUrl.origin + authUrl.pathname, `https://${sdkHost}/oauth2/authorize`);
            const q = authUrl.searchParams;
            assert.equal(q.get("response_type"), "code");
            assert.equal(q.get("client_id"), app.clientId);
            assert.equal(q.get("redirect_uri"), flow.redirect);
            if (flow.redirect) assert.match(q.get("state"), /^[\w-]+=*\|python-sdk$/, "the SDK's CSRF token | url_state");
            else assert.equal(q.get("state"), null);
            assert.equal(q.get("token_access_type"), "offline");
            assert.equal(q.get("scope"), app.scopes?.join(" ") ?? null);
            if (app.pkce) {
              assert.equal(q.get("code_challenge_method"), "S256");
              assert.equal(q.get("code_challenge"), b64url(createHash("sha256").update(start.code_verifier).digest()));
            } else {
              assert.equal(q.get("code_challenge"), null);
            }
          });

          // The user's browser opens the URL (the authorization page is on the host, like www.dropbox.com is Dropbox's).
          const end = await browse(server.url + authUrl.pathname + authUrl.search, server.url, ALICE);
          if (flow.redirect) {
            assert.ok(end.redirect, `the flow ends at the redirect URI, not on a page: ${JSON.stringify(end)}`);
            const back = new URL(end.redirect);
            assert.equal(back.origin + back.pathname, REDIRECT);
            assert.equal(back.searchParams.get("state"), authUrl.searchParams.get("state"), "state comes back unchanged");
            py.send({ redirect: end.redirect });
          } else {
            assert.ok(end.code, `the flow ends on the code page, not at a redirect: ${JSON.stringify(end)}`);
            py.send({ code: end.code });
          }

          const exchanged = await step(t, "finish: the code exchange", async () => {
            const { result } = await report(py, "finish");
            assert.match(result.access_token, /^sl\./);
            assert.ok(result.refresh_token, "offline: a refresh token");
            assert.ok(result.expires_at, "an expiry from expires_in");
            assert.equal(result.account_id, ALICE.account_id);
            assert.equal(typeof result.user_id, "string");
            assert.equal(result.scope, app.scopes?.join(" ") ?? result.scope);
            if (flow.redirect) assert.equal(result.url_state, "python-sdk");
          });
          assert.ok(exchanged, "the rest of the scenario needs the SDK's code exchange");

          await t.test("users_get_current_account: the host's account passes the SDK's FullAccount type", async () => {
            const { account } = await report(py, "users_get_current_account");
            assert.equal(account.account_id, ALICE.account_id);
            assert.equal(account.name.display_name, ALICE.display_name);
            assert.equal(account.email, ALICE.email);
            assert.equal(account.account_type[".tag"], "basic");
            assert.equal(account.root_info[".tag"], "user");
          });

          await t.test("refresh on expiry (check_and_refresh_access_token), then users_get_current_account", async () => {
            const { account } = await report(py, "refresh on expiry, then users_get_current_account");
            assert.equal(account.account_id, ALICE.account_id);
          });

          await t.test("auth_token_revoke", () => report(py, "auth_token_revoke"));

          await t.test("users_get_current_account after revoke raises the SDK's AuthError (401, invalid_access_token)", async () => {
            const { error } = await report(py, "users_get_current_account after revoke");
            assert.equal(error.type, "AuthError", error.repr);
            assert.equal(error.tag, "invalid_access_token", error.repr);
          });

          await t.test("refresh_access_token after revoke raises: the refresh token ended with the grant", async () => {
            const { error } = await report(py, "refresh_access_token after revoke");
            // The SDK maps the token endpoint's 400 invalid_grant to AuthError(invalid_access_token).
            assert.equal(error.type, "AuthError", error.repr);
            assert.equal(error.tag, "invalid_access_token", error.repr);
          });
          assert.deepEqual(await py.next(), { event: "done" });

          await t.test("at the host: every request the SDK made, over TLS to the configured host", () => {
            const requests = tap.requests();
            const seen = requests.map((r) => `${r.method} ${r.target.split("?")[0]}`);
            assert.deepEqual(seen, [
              "POST /oauth2/token",
              "POST /2/users/get_current_account",
              "POST /oauth2/token",
              "POST /2/users/get_current_account",
              "POST /2/auth/token/revoke",
              "POST /2/users/get_current_account",
              "POST /oauth2/token",
            ]);
            for (const r of requests) assert.equal(r.header("host"), sdkHost);
            const [exchange, call, refresh, refreshedCall, revoke, refused, lateRefresh] = requests;
            const code = form(exchange);
            assert.equal(code.grant_type, "authorization_code");
            assert.equal(code.client_id, app.clientId);
            assert.equal(code.redirect_uri, flow.redirect ?? undefined, "redirect_uri at the exchange exactly when at authorization");
            if (app.pkce) assert.ok(code.code_verifier && !code.client_secret);
            else assert.ok(code.client_secret && !code.code_verifier);
            for (const r of [refresh, lateRefresh]) {
              assert.equal(form(r).grant_type, "refresh_token");
              assert.equal(form(r).client_id, app.clientId);
            }
            const bearer = (r) => r.header("authorization");
            assert.match(bearer(call), /^Bearer sl\./);
            assert.notEqual(bearer(refreshedCall), bearer(call), "the call after the refresh uses the new token");
            assert.equal(bearer(revoke), bearer(refreshedCall), "revoke presents the current token");
            assert.equal(bearer(refused), bearer(refreshedCall), "the refused call presents the revoked token");
          });
        });
      }
    }
  });
}
