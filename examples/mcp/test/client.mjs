// What a test needs to drive the MCP SDK's own client: its OAuth provider as an application
// implements it, a Client ID Metadata Document served over https, and a connected client. Shared
// by this example's test and the package README's MCP quick-start test.
import https from "node:https";
import net from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export { StreamableHTTPClientTransport };
export { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

/** Where the client's browser is sent back to: nothing listens, the browser stops there. */
export const CALLBACK = "http://127.0.0.1:33418/callback";

/** A port free on 127.0.0.1 now. */
export const freePort = () =>
  new Promise((ok, fail) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
    server.on("error", fail);
  });

/** The client's metadata document, over https with `key` and `cert`; `fetches` counts how often it was read. */
export async function documentServer({ key, cert }) {
  const port = await freePort();
  const url = `https://127.0.0.1:${port}/mcp-client.json`;
  const served = { url, fetches: 0 };
  const document = JSON.stringify({
    client_id: url,
    client_name: "edgegrant e2e MCP client",
    application_type: "native",
    redirect_uris: [CALLBACK],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  });
  const server = https.createServer({ key, cert }, (req, res) => {
    if (req.url !== "/mcp-client.json") return res.writeHead(404).end();
    served.fetches++;
    res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "max-age=3600" }).end(document);
  });
  await new Promise((ok) => server.listen(port, "127.0.0.1", ok));
  served.close = () => new Promise((ok) => server.close(ok));
  return served;
}

/**
 * The SDK's OAuthClientProvider, as an application implements it: it keeps what the SDK hands
 * it, and its "browser" is the test. With `clientMetadataUrl` the client names itself by that
 * document; without, it registers.
 */
export class Provider {
  constructor(clientMetadataUrl) {
    this.clientMetadataUrl = clientMetadataUrl;
    this.saved = { client: undefined, tokens: undefined, verifier: undefined };
    this.authorizationUrl = null;
  }
  get redirectUrl() {
    return CALLBACK;
  }
  // What a client of MCP 2026-07-28 registers: its application_type too (native: a program on
  // the user's machine with a loopback redirect URI), which 2025-11-25's clients left out.
  get clientMetadata() {
    return { client_name: "edgegrant e2e MCP client", application_type: "native", redirect_uris: [CALLBACK], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(client) {
    this.saved.client = client;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") this.saved.tokens = undefined;
    if (scope === "all" || scope === "client") this.saved.client = undefined;
    if (scope === "all" || scope === "verifier") this.saved.verifier = undefined;
  }
}

/** A client of the MCP server at `url`, connected (or refused: the error); `fetch` its transport's. */
export async function connect(url, provider, fetch = globalThis.fetch) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch });
  const client = new Client({ name: "edgegrant-e2e", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

/** The text of a tool's result. */
export const text = (result) => result.content.map((part) => part.text).join("");
