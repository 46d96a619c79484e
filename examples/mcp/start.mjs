// Runs the example MCP server: the Node host (default) or the Worker host (--worker, through
// wrangler dev) on config.sample.json, with the MCP server of tools.mjs at /mcp behind the
// authorization server's bearer check. Point an MCP client at http://127.0.0.1:8790/mcp; it
// finds the rest from the 401 (RFC 9728, RFC 8414), registers itself (RFC 7591) or names itself
// by a metadata document, and signs alice in (password alice-password).
//   node examples/mcp/start.mjs [--worker] [config.json]
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../node/server.mjs";
import { startWorker } from "../worker/dev.mjs";
import { serveMcp } from "./tools.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/** The Node host with the MCP server at /mcp (`options` as startServer's). */
export function startMcpNode(configPath, options = {}) {
  return startServer(configPath, { ...options, api: { "/mcp": serveMcp } });
}

/** The Worker host with the MCP server at /mcp (./worker.js; `options` as startWorker's). */
export function startMcpWorker(configPath, options = {}) {
  return startWorker({ ...options, configPath, wranglerConfig: join(here, "wrangler.toml") });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const worker = args.includes("--worker");
  const configPath = resolve(args.find((a) => !a.startsWith("--")) ?? join(here, "config.sample.json"));
  // The sample's placeholder secrets are public: a demo only.
  const allowSampleSecret = process.env.EDGEGRANT_ALLOW_SAMPLE_SECRET === "1";
  const host = worker ? await startMcpWorker(configPath, { allowSampleSecret, echo: true }) : await startMcpNode(configPath, { allowSampleSecret });
  console.log(`MCP server at ${host.url}/mcp (authorization server: ${host.url})`);
}
