// Issue 27 part 4: how should the core verify a private_key_jwt client assertion's signature?
// (a) RustCrypto crates (p256, rsa) compiled into the wasm module, or (b) a step of the calling
// contract that the host answers with its WebCrypto (crypto.subtle.verify, in Node and workerd).
// This builds (a) as the server module was built when the choice was made (opt-level z, LTO,
// wasm-opt -Oz; pkg/scripts/build.mjs has moved on since, so its figures stay comparable with
// the recorded ones) and prints, side by side in one run: its gzipped size, each alone and both, and the time of one verification
// each way (the WebCrypto time includes importing the JWK, as a host that keeps no key objects
// between requests pays it).
//   node tests/bench/signatures/measure.mjs
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "../../..");
const out = mkdtempSync(join(tmpdir(), "edgegrant-signatures-"));
const { subtle } = globalThis.crypto;

function build(features) {
  execFileSync("cargo", ["build", "-q", "--release", "--target", "wasm32-unknown-unknown", "--no-default-features", "--features", features], { cwd: here, stdio: "inherit" });
  const dir = join(out, features.replace(",", "-"));
  execFileSync("wasm-bindgen", ["--target", "nodejs", "--out-dir", dir, join(here, "target/wasm32-unknown-unknown/release/signature_crates.wasm")]);
  const wasm = join(dir, "signature_crates_bg.wasm");
  execFileSync(join(root, "pkg/node_modules/.bin/wasm-opt"), ["-Oz", "--enable-bulk-memory", "--enable-nontrapping-float-to-int", "--enable-sign-ext", "--enable-mutable-globals", "--enable-reference-types", "--enable-multivalue", wasm, "-o", wasm]);
  return { dir, gzipped: gzipSync(readFileSync(wasm), { level: 9 }).length };
}

const sizes = Object.fromEntries(["es", "rs", "es,rs"].map((f) => [f, build(f)]));
const crate = createRequire(import.meta.url)(join(sizes["es,rs"].dir, "signature_crates.js"));
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
console.log(`crates in the module, gzipped: ES256 ${kib(sizes.es.gzipped)}, RS256 ${kib(sizes.rs.gzipped)}, both ${kib(sizes["es,rs"].gzipped)} (the server module: ~145 KiB, its goal 64)`);

const message = new TextEncoder().encode("eyJhbGciOiJFUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJodHRwczovL2FwcC5leGFtcGxlL2NsaWVudC5qc29uIiwic3ViIjoiaHR0cHM6Ly9hcHAuZXhhbXBsZS9jbGllbnQuanNvbiIsImF1ZCI6Imh0dHBzOi8vYXV0aC5leGFtcGxlIiwiZXhwIjoxNzAwMDAwMzAwLCJqdGkiOiJhYmMifQ");
const b64 = (s) => Buffer.from(s, "base64url");
const time = async (n, fn) => {
  for (let i = 0; i < n / 10; i++) await fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) if (!(await fn())) throw new Error("did not verify");
  return ((performance.now() - t0) / n) * 1000;
};
for (const [alg, generate, sign, imported, check] of [
  ["ES256", { name: "ECDSA", namedCurve: "P-256" }, { name: "ECDSA", hash: "SHA-256" }, { name: "ECDSA", namedCurve: "P-256" }, (jwk, sig) => crate.verify_es256(b64(jwk.x), b64(jwk.y), sig, message)],
  ["RS256", { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, { name: "RSASSA-PKCS1-v1_5" }, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, (jwk, sig) => crate.verify_rs256(b64(jwk.n), b64(jwk.e), sig, message)],
]) {
  const keys = await subtle.generateKey(generate, true, ["sign", "verify"]);
  const jwk = await subtle.exportKey("jwk", keys.publicKey);
  const signature = new Uint8Array(await subtle.sign(sign, keys.privateKey, message));
  const inModule = await time(200, () => check(jwk, signature));
  const webCrypto = await time(2000, async () => subtle.verify(sign, await subtle.importKey("jwk", jwk, imported, false, ["verify"]), signature, message));
  console.log(`${alg}: crate in wasm ${inModule.toFixed(0)} µs, WebCrypto (import + verify) ${webCrypto.toFixed(0)} µs: ${(inModule / webCrypto).toFixed(1)}× slower in the module`);
}
rmSync(out, { recursive: true, force: true });
