// A Node host for edgegrant: node:http on 127.0.0.1, tokens in SQLite, a sign-in form for the
// configured users, the consent and code-display pages, and /2/users/get_current_account.
//
//   node examples/node/server.mjs examples/node/config.sample.json
//
// The configuration file is documented in README.md next to this file.
import http from "node:http";
import { dirname, resolve } from "node:path";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { openSqliteStorage } from "../../pkg/src/adapters/sqlite.js";
import { createApp } from "../host/app.mjs";
import { loadConfigFile } from "../host/config-file.mjs";

/** Reads and checks the configuration file; throws an Error that says what is wrong. */
export function loadConfig(path) {
  const config = loadConfigFile(path);
  return { ...config, database: resolve(dirname(resolve(path)), config.database ?? "edgegrant.sqlite") };
}

export async function startServer(configPath, { port, host } = {}) {
  const config = loadConfig(configPath);
  const storage = await openSqliteStorage(config.database);
  const app = createApp(config, {
    storage,
    title: "Node host",
    onAudit: (event) => console.log(JSON.stringify({ audit: event })),
  });

  const server = http.createServer(async (req, res) => {
    try {
      const headers = new Headers();
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const request = new Request(new URL(req.url, `http://${req.headers.host ?? "127.0.0.1"}`), {
        method: req.method,
        headers,
        body: hasBody ? Readable.toWeb(req) : undefined,
        duplex: "half",
      });
      const response = await app.fetch(request);
      res.writeHead(response.status, [...response.headers].flat());
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (error) {
      console.error(error);
      if (!res.headersSent) res.writeHead(400, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: "invalid_request", error_description: "the request could not be read" }));
    }
  });
  const listen = config.listen ?? {};
  await new Promise((ok) => server.listen(port ?? listen.port ?? 8787, host ?? listen.host ?? "127.0.0.1", ok));
  const address = server.address();
  return {
    url: `http://${address.address}:${address.port}`,
    async close() {
      // Keep-alive connections would hold close() open: end them too.
      const closed = new Promise((ok) => server.close(ok));
      server.closeAllConnections();
      await closed;
      storage.close();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const path = process.argv[2];
  if (!path) {
    console.error("usage: node examples/node/server.mjs <config.json>");
    process.exit(2);
  }
  try {
    const { url } = await startServer(path);
    console.log(`edgegrant Node host listening on ${url}`);
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
