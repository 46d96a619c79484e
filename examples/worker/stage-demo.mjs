// Stages the static assets wrangler serves next to the Worker: the browser demo at /demo/ and
// the parts of the edgegrant package it loads (the browser entry, the client, the wasm). Run by
// dev.mjs before wrangler starts; the output directory (.assets) is generated, never committed.
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const demo = join(here, "../browser-demo");
const pkg = join(here, "../../pkg");
export const ASSETS = join(here, ".assets");

// `into`: dev.mjs stages a fresh directory for each wrangler it starts, so that one run never
// rewrites the assets another running wrangler is watching (it would reload mid-request).
export function stageDemo(into = ASSETS) {
  rmSync(into, { recursive: true, force: true });
  const target = join(into, "demo");
  mkdirSync(join(target, "edgegrant/src"), { recursive: true });
  mkdirSync(join(target, "edgegrant/dist"), { recursive: true });
  for (const file of ["index.html", "demo.js", "demo.css"]) cpSync(join(demo, file), join(target, file));
  cpSync(join(demo, "_headers"), join(into, "_headers")); // wrangler reads it at the assets root
  // The package's browser-side modules (its top-level src files; no adapters, no declarations).
  for (const file of readdirSync(join(pkg, "src")).filter((f) => f.endsWith(".js"))) {
    cpSync(join(pkg, "src", file), join(target, "edgegrant/src", file));
  }
  // Both bindings (core.js imports both), but only the client's module: the browser is the client.
  for (const file of ["edgegrant_wasm.js", "edgegrant_client.js", "edgegrant_client_bg.wasm"]) {
    cpSync(join(pkg, "dist", file), join(target, "edgegrant/dist", file));
  }
}
