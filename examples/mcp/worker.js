// The Worker host (../worker/src/worker.js: the authorization server on one Durable Object per
// partition, the sign-in pages) serving the MCP server of tools.mjs at /mcp behind its bearer
// check. Run it with `node start.mjs --worker`; wrangler.toml beside this file.
import worker, { AuthServer, serveApi } from "../worker/src/worker.js";
import { serveMcp } from "./tools.mjs";

serveApi({ "/mcp": serveMcp });

export { AuthServer };
export default worker;
