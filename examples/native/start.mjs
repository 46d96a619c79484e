// Builds and starts the native host (examples/native) from JavaScript, for the tests that run it
// beside the JS hosts: the conformance runner (conformance/runners/http.test.mjs) and the SDK
// interop tests (tests/e2e/interop.mjs).
//
//   const host = await startNative(configPath, { testMode, port, allowSampleSecret });   // port 0: any free port
//   await fetch(`${host.url}/`); ...; await host.close();
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * Builds the native host (`cargo build`, a no-op when it is up to date) once per process, when a
 * host is first started. Resolves the path of its binary, as cargo reports it (so
 * CARGO_TARGET_DIR is honoured). Building from a clean target directory takes minutes on two cores.
 * `EDGEGRANT_NATIVE_BIN`, when set, names a binary built already (tests/all.sh: the one cargo
 * test built), which is used as it is.
 */
let nativeBuild;
export function nativeBinary() {
  if (process.env.EDGEGRANT_NATIVE_BIN) return Promise.resolve(process.env.EDGEGRANT_NATIVE_BIN);
  nativeBuild ??= new Promise((resolve, reject) => {
    const cargo = spawn("cargo", ["build", "-p", "edgegrant-native-host", "--bin", "edgegrant-native", "--message-format=json-render-diagnostics"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let executable;
    createInterface({ input: cargo.stdout }).on("line", (line) => {
      if (!line.startsWith("{")) return;
      const message = JSON.parse(line);
      if (message.reason === "compiler-artifact" && message.target?.name === "edgegrant-native" && message.executable) executable = message.executable;
    });
    cargo.on("error", reject);
    cargo.on("close", (code) => {
      if (code === 0 && executable) resolve(executable);
      else reject(new Error(`cargo build -p edgegrant-native-host failed (exit ${code})`));
    });
  });
  return nativeBuild;
}

/**
 * Starts the native host on the configuration file `configPath`: resolves `{ url, close }` once
 * it prints its listening line. Its stdout (one audit line per event) is read to the end, so the
 * pipe never fills; its stderr is the caller's.
 */
export async function startNative(configPath, { testMode = false, port = 0, allowSampleSecret = false } = {}) {
  const binary = await nativeBinary();
  // The sample configuration's placeholder session_secret is refused unless this is set (the demo's opt-in).
  const env = { ...process.env };
  if (allowSampleSecret) env.EDGEGRANT_ALLOW_SAMPLE_SECRET = "1";
  else delete env.EDGEGRANT_ALLOW_SAMPLE_SECRET;
  const child = spawn(binary, [configPath, "--port", String(port), ...(testMode ? ["--test-mode"] : [])], { stdio: ["ignore", "pipe", "inherit"], env });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => close().then(() => reject(new Error("the native host printed no listening line within 30 s"))), 30_000);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    exited.then((status) => {
      clearTimeout(timer);
      reject(new Error(`the native host exited (${status}) before it listened`));
    });
    createInterface({ input: child.stdout }).on("line", (line) => {
      const listening = /^edgegrant native host listening on (http:\/\/\S+)$/.exec(line);
      if (!listening) return;
      clearTimeout(timer);
      resolve({ url: listening[1], close });
    });
  });
}
