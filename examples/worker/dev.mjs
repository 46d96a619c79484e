// Runs the Worker host locally: `wrangler dev` (workerd from npm) on 127.0.0.1, offline, with the
// Durable Object's storage persisted to a directory, so tokens survive a restart.
//
//   node examples/worker/dev.mjs [config.json]     serves http://127.0.0.1:8787 (or config listen)
//
// From code (the tests):
//   const worker = await startWorker({ configPath, port, persistTo }); // port 0: any free port
//   await fetch(`${worker.url}/`); ...; await worker.close();
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadConfigFile, sampleSecretAllowed } from "../host/config-file.mjs";
import { stageDemo } from "./stage-demo.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const WRANGLER = join(here, "node_modules/wrangler/bin/wrangler.js");
const SUPERVISE = join(here, "supervise.mjs");
export const SAMPLE_CONFIG = join(here, "config.sample.json");

// No metrics, no request for the `cf` object, no banner (its update check asks the registry).
const OFFLINE = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_HIDE_BANNER: "true" };

/** A port nobody listens on now, on `host`. */
export function freePort(host) {
  return new Promise((ok, fail) => {
    const server = createServer().on("error", fail);
    server.listen(0, host, () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** Whether any process of the group `pgid` is still alive. */
function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/**
 * Starts `wrangler dev` with the configuration at `configPath` (checked here first) and resolves
 * once the Worker answers: `{ url, close(), exited, output() }`. `close()` stops wrangler and
 * every workerd it started; `exited` settles when wrangler ends; `output()` is the tail of its
 * output. `echo` copies wrangler's output to this process's. `testMode` sets TEST_MODE="1"
 * (the /__test__/ endpoints of ../host/test-mode.mjs); nothing else ever does. `wranglerConfig`:
 * another Worker built on this one (examples/mcp/wrangler.toml); `loopbackDocuments`: client
 * metadata documents may be on loopback; `extraCaCerts`: a PEM file of certificates workerd's
 * fetch trusts besides the public ones.
 */
export async function startWorker(options = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startWorkerOnce(options);
    } catch (error) {
      // Ports are found free, then bound by wrangler a moment later: another Worker starting in
      // parallel (the test files do) can take one in between. Then try again on fresh ports.
      if (attempt >= 3 || !/Address already in use/.test(error.message)) throw error;
    }
  }
}

async function startWorkerOnce({ configPath = SAMPLE_CONFIG, port, persistTo = join(here, ".wrangler/state"), echo = false, timeoutMs = 60_000, testMode = false, allowSampleSecret = false, wranglerConfig = join(here, "wrangler.toml"), loopbackDocuments = false, extraCaCerts } = {}) {
  if (!existsSync(WRANGLER)) throw new Error("wrangler is not installed: run npm ci --prefix examples/worker");
  const config = loadConfigFile(configPath, { allowSampleSecret });
  // This run's own copy of the static assets (see stage-demo.mjs), removed by close().
  const assets = mkdtempSync(join(tmpdir(), "edgegrant-assets-"));
  stageDemo(assets);
  const host = config.listen?.host ?? "127.0.0.1";
  port ??= config.listen?.port ?? 8787;
  if (port === 0) port = await freePort(host);
  // wrangler probes from 9229 for the devtools inspector; here a port it found free once failed
  // to bind in workerd when runs followed each other. Pick a free one here instead.
  const inspectorPort = await freePort("127.0.0.1");
  const url = `http://${host}:${port}`;

  // The configuration reaches the Worker as the CONFIG variable (JSON text). wrangler keeps
  // --var values out of its printed bindings.
  const { core, ...doc } = config;
  const args = [
    WRANGLER, "dev",
    "--config", wranglerConfig,
    "--ip", host,
    "--port", String(port),
    "--inspector-port", String(inspectorPort),
    "--persist-to", resolve(persistTo),
    "--assets", assets,
    "--var", `CONFIG:${JSON.stringify(doc)}`,
    // The /__test__/ control endpoints (../host/test-mode.mjs), for the conformance runner only.
    ...(testMode ? ["--var", "TEST_MODE:1"] : []),
    // The sample's placeholder session_secret, allowed for the demo only (the Worker checks too).
    ...(allowSampleSecret ? ["--var", "ALLOW_SAMPLE_SECRET:1"] : []),
    // Client metadata documents on loopback, for a Worker that runs on loopback itself (CIMD §6.5).
    ...(loopbackDocuments ? ["--var", "LOOPBACK_DOCUMENTS:1"] : []),
    "--show-interactive-dev-session=false",
  ];
  // NODE_EXTRA_CA_CERTS: wrangler hands the certificates to workerd, whose fetch then trusts a
  // local HTTPS server's (a test's client metadata documents).
  const env = extraCaCerts ? { NODE_EXTRA_CA_CERTS: extraCaCerts } : {};
  return runWrangler({ args, cwd: here, url, env, echo, timeoutMs, onClose: () => rmSync(assets, { recursive: true, force: true }) });
}

/**
 * Runs `node <args>` (wrangler's bin and its arguments) in `cwd`, through supervise.mjs in a
 * process group of its own, and resolves once `url` answers `ready(response)` (default: a 200
 * for GET /): `{ url, close(), exited, output() }`. `onClose` runs once everything stopped.
 */
export async function runWrangler({ args, cwd, url, env = {}, echo = false, timeoutMs = 60_000, ready = (response) => response.status === 200, onClose = () => {} }) {
  // Through supervise.mjs, in a process group of its own: wrangler and its workerd processes
  // stop when the stdin pipe closes — on close(), or when this process dies, however it dies.
  const child = spawn(process.execPath, [SUPERVISE, process.execPath, ...args], {
    cwd,
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...OFFLINE, ...env },
  });
  const pgid = child.pid;
  let output = "";
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding("utf8");
    stream.on("data", (text) => {
      output = (output + text).slice(-20_000); // the tail, for error messages
      if (echo) (stream === child.stdout ? process.stdout : process.stderr).write(text);
    });
  }
  const exited = new Promise((ok) => child.once("exit", ok));

  let closing;
  function close() {
    closing ??= (async () => {
      child.stdin.end();
      // The supervisor stops the group; whatever is still alive after 8 s is killed from here.
      for (let waited = 0; groupAlive(pgid) && waited < 8000; waited += 50) await sleep(50);
      signalGroup(pgid, "SIGKILL");
      await exited;
      // Killed processes vanish once reaped; a bounded wait, as a zombie would count as alive.
      for (let waited = 0; groupAlive(pgid) && waited < 2000; waited += 20) await sleep(20);
      onClose();
    })();
    return closing;
  }

  // Ready when the Worker itself answers GET / as it should (wrangler's proxy may listen a
  // little earlier).
  let exitCode = null;
  exited.then((code) => (exitCode = code ?? "signal"));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exitCode !== null) {
      await close();
      throw new Error(`wrangler dev exited (${exitCode}) before answering:\n${output}`);
    }
    if (Date.now() > deadline) {
      await close();
      throw new Error(`wrangler dev did not answer on ${url} within ${timeoutMs} ms:\n${output}`);
    }
    try {
      const response = await fetch(`${url}/`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (ready(response)) break;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  return { url, close, exited, output: () => output };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const configPath = process.argv[2] ?? SAMPLE_CONFIG;
  let worker;
  try {
    worker = await startWorker({ configPath, echo: true, allowSampleSecret: sampleSecretAllowed() });
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
  console.log(`edgegrant Worker host listening on ${worker.url} (config ${configPath})`);
  console.log(`\n  Browser PKCE demo:  ${worker.url}/demo/   (sign in as alice / alice-password)\n`);
  console.log(`Or try the flow by hand: ${worker.url}/oauth2/authorize?client_id=demo-server-app&response_type=code`);
  let stopping = false;
  worker.exited.then((code) => {
    if (stopping) return;
    console.error(`wrangler dev exited (${code})`);
    process.exit(1);
  });
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.once(signal, async () => {
      stopping = true;
      await worker.close();
      process.exit(0);
    });
  }
}
