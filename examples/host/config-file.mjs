// Reads and checks a host configuration file, in Node: for the Node host, and for
// examples/worker/dev.mjs before it starts the Worker (so a bad file fails at once, clearly).
import { readFileSync } from "node:fs";
import "../../pkg/src/node.js"; // loads the WebAssembly core, which checks the apps
import { parseConfig } from "./app.mjs";

/**
 * The checked configuration (see app.mjs parseConfig; `options.allowSampleSecret` lets the demo
 * run on the sample's placeholder secret); throws an Error naming the file and the fault.
 */
export function loadConfigFile(path, options) {
  let doc;
  try {
    doc = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new Error(`cannot read configuration ${path}: ${e.message}`);
  }
  try {
    return parseConfig(doc, options);
  } catch (e) {
    throw new Error(`invalid configuration ${path}: ${e.message}`);
  }
}

/** Whether the environment opts in to the sample's placeholder secret (the demo command sets it). */
export const sampleSecretAllowed = () => process.env.EDGEGRANT_ALLOW_SAMPLE_SECRET === "1";
