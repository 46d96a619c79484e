// The MCP server of this example: two tools on the official SDK, served over Streamable HTTP
// with the SDK's web-standard transport (a Fetch Request in, a Response out), so the same code
// runs on the Node host and in the Worker. The host's authorization server checked the bearer
// token before this runs — its Required Scope (mcp:tools), its audience, its expiry, that it is
// not revoked — and hands over the principal it stands for.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";

/** The server and its tools, for the user the token was issued for. */
function serverFor(principal) {
  const server = new McpServer({ name: "edgegrant-example", version: "1.0.0" });
  server.registerTool(
    "whoami",
    { description: "Who the access token is for — a person's account, or the client itself (a machine) — and the app that holds it." },
    async () => ({ content: [{ type: "text", text: JSON.stringify({ subject: principal.subject, account_id: principal.account_id, app: principal.app, scopes: principal.scopes }) }] }),
  );
  server.registerTool(
    "add",
    { description: "Adds two numbers.", inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  return server;
}

/**
 * The `/mcp` endpoint, as the host's API handler (`hooks.api["/mcp"]`): stateless (no session:
 * any instance may answer any request), JSON answers rather than event streams, a server of
 * its own per request — what an edge runtime that keeps nothing between requests can serve.
 */
export async function serveMcp(principal, request) {
  // No event stream to open (GET) and no session to end (DELETE): POST is the whole protocol
  // here, and MCP lets a server answer the others 405.
  if (request.method !== "POST") return new Response(null, { status: 405, headers: { Allow: "POST" } });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  const server = serverFor(principal);
  await server.connect(transport);
  try {
    return await transport.handleRequest(request);
  } finally {
    // The answer is complete (JSON, not a stream): nothing of this server outlives it.
    await server.close();
  }
}
