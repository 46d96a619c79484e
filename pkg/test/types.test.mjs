// The TypeScript declarations: they type-check a host's usage through the exports map (with
// `@ts-expect-error` lines pinning the mistakes they must catch), and every subpath declares
// exactly the values its module exports at run time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = new URL("../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));

test("the declarations type-check a host's usage, and catch its mistakes", () => {
  const tsc = fileURLToPath(new URL("node_modules/typescript/bin/tsc", root));
  const run = spawnSync(process.execPath, [tsc, "-p", fileURLToPath(new URL("test/types", root))], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});

// ./workers (and ./workers/configured-apps) import the .wasm as a module (a Workers bundler's job) and ./browser fetches it
// over HTTP; both re-export "." once the module is loaded, and are exercised in workerd and
// Chromium by their own tests.
const subpaths = Object.entries(pkg.exports).filter(([path, target]) => typeof target === "object" && !path.startsWith("./workers") && path !== "./browser");

test("every subpath declares exactly what it exports", async () => {
  const files = subpaths.map(([, target]) => fileURLToPath(new URL(target.types, root)));
  const program = ts.createProgram(files, { strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext });
  const checker = program.getTypeChecker();
  for (const [path, target] of subpaths) {
    const source = program.getSourceFile(fileURLToPath(new URL(target.types, root)));
    const declared = checker
      .getExportsOfModule(checker.getSymbolAtLocation(source))
      .filter((symbol) => {
        const resolved = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        return resolved.flags & ts.SymbolFlags.Value;
      })
      .map((symbol) => symbol.name)
      .sort();
    const runtime = Object.keys(await import(new URL(target.default, root))).sort();
    assert.deepEqual(declared, runtime, `${path}: declared values vs run-time exports`);
  }
});
