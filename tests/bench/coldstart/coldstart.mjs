// Cold start of the server's wasm module in Node: `samples` fresh processes, each timing
// compile, instantiate, configuration, Node's own Fetch API start-up and the first request
// (./probe.mjs); medians in ms. `module`: the module's name in pkg/dist.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const probe = fileURLToPath(new URL("./probe.mjs", import.meta.url));

export function coldStart({ samples = 15, module = "edgegrant_wasm" } = {}) {
  const runs = Array.from({ length: samples }, () => JSON.parse(execFileSync(process.execPath, [probe, module], { encoding: "utf8" })));
  const median = (key) => {
    const values = runs.map((run) => run[key]).sort((a, b) => a - b);
    return values[Math.floor(values.length / 2)];
  };
  return { samples, compile: median("compile"), instantiate: median("instantiate"), configure: median("configure"), fetchApi: median("fetchApi"), firstRequest: median("firstRequest") };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(coldStart());
