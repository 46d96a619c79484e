// Builds the npm package's WebAssembly from ../wasm: cargo (wasm32, size profile) → wasm-bindgen
// --target web → wasm-opt (npm's binaryen) → dist/. Prints the module size, raw and gzipped.
// Installs what is missing (the wasm32 target, the matching wasm-bindgen CLI); idempotent.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const pkg = dirname(dirname(fileURLToPath(import.meta.url)));
const root = dirname(pkg);
const dist = join(pkg, "dist");
const run = (cmd, args, opts = {}) =>
  execFileSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
const output = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return "";
  }
};

// The CLI must be exactly the version of the wasm-bindgen crate.
const lock = readFileSync(join(root, "Cargo.lock"), "utf8");
const bindgen = lock.match(/name = "wasm-bindgen"\nversion = "([^"]+)"/)?.[1];
if (!bindgen) throw new Error("wasm-bindgen is not in Cargo.lock");

if (!output("rustup", ["target", "list", "--installed"]).includes("wasm32-unknown-unknown")) {
  run("rustup", ["target", "add", "wasm32-unknown-unknown"]);
}
if (!output("wasm-bindgen", ["--version"]).includes(bindgen)) {
  // A --locked install fails on these machines; an unlocked one works (DESIGN.md).
  run("cargo", ["install", "wasm-bindgen-cli", "--version", bindgen]);
}

run("cargo", ["build", "-p", "edgegrant-wasm", "--target", "wasm32-unknown-unknown", "--profile", "wasm"]);
mkdirSync(dist, { recursive: true });
run("wasm-bindgen", [
  "--target", "web",
  "--out-dir", dist,
  "--out-name", "edgegrant_wasm",
  join(root, "target/wasm32-unknown-unknown/wasm/edgegrant_wasm.wasm"),
]);
const wasm = join(dist, "edgegrant_wasm_bg.wasm");
const wasmOpt = join(pkg, "node_modules/.bin/wasm-opt");
if (!existsSync(wasmOpt)) throw new Error("wasm-opt missing: run npm install in pkg/ first");
run(wasmOpt, ["-Oz", "--enable-bulk-memory", "--enable-nontrapping-float-to-int", "--enable-sign-ext", "--enable-mutable-globals", "--enable-reference-types", "--enable-multivalue", wasm, "-o", wasm]);

const raw = statSync(wasm).size;
const gzipped = gzipSync(readFileSync(wasm), { level: 9 }).length;
const kib = (n) => (n / 1024).toFixed(1);
console.log(`wasm size: ${raw} bytes raw (${kib(raw)} KiB), ${gzipped} bytes gzipped (${kib(gzipped)} KiB)`);
