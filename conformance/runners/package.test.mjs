// Runner 2: every vector against the npm package through wasm (./package-layer.mjs), the whole
// server module as edgegrant/node loads it.
import * as edgegrant from "../../pkg/src/node.js";
import { runCorpus } from "./package-layer.mjs";

runCorpus("package", edgegrant);
