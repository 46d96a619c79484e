// node:http glue: a node:http request as a Fetch Request whose body is read with a bound, and a
// Fetch Response written back — with the staged close a request whose body was not all read
// needs. `nodeHandler(server)` serves an auth server on node:http with both; the example hosts
// use the parts.

/**
 * How long, and how much, the host still reads and drops after answering over an unread body:
 * nginx lingers up to 5 s between reads. A busy client (or a busy machine) may send tens of
 * MiB before it reads the answer; dropping them costs time, not memory. (At 32 MiB a test
 * client on a loaded CI machine once sent past the cap before reading its answer, and lost it
 * to the reset: loopback moves that much in a few tens of milliseconds. The time is the bound
 * that matters; the bytes only stop a client that sends flat out for all of it.)
 */
const LINGER_MS = 5000;
const LINGER_BYTES = 256 * 1024 * 1024;

/**
 * For the answer to a request whose body was not all read (past a limit): `Connection: close`
 * and a staged close (RFC 9112 §9.6; nginx's lingering close), as header pairs to append; none
 * for a request read to its end. Left to itself node:http would read the rest before the next
 * request, however long it goes on — or, told to close, close at once over the bytes the client
 * is still sending: the kernel then resets the connection, and the client, failing to write,
 * drops the answer it has not read (most of the time, on loopback). So: half-close after the
 * answer, read and drop what still comes until the client closes too, LINGER_BYTES or LINGER_MS,
 * then close.
 */
export function closing(req) {
  if (req.complete) return [];
  const { socket } = req;
  // node:http ends a Connection: close answer with socket.destroySoon(), a FIN and then at once
  // the socket's end; this one reads on between the two.
  socket.destroySoon = () => {
    socket.end();
    let dropped = 0;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once("close", () => clearTimeout(timer));
    req.on("data", (chunk) => {
      dropped += chunk.length;
      if (dropped > LINGER_BYTES) socket.destroy();
    });
    req.resume();
  };
  return ["Connection", "close"];
}

/**
 * The body of a node:http request, read up to `limit + 1` bytes (enough to refuse more). The rest
 * is left unread: the answer then closes the connection (`closing`). A GET's or HEAD's is none.
 */
export function readNodeBody(req, limit) {
  if (req.method === "GET" || req.method === "HEAD") return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve) => {
    const chunks = [];
    let kept = 0;
    const done = () => {
      req.off("data", take).off("end", done).off("error", done).off("close", done);
      req.pause();
      const body = Buffer.concat(chunks);
      resolve(body.subarray(0, Math.min(body.length, limit + 1)));
    };
    const take = (chunk) => {
      chunks.push(chunk);
      kept += chunk.length;
      if (kept > limit) done();
    };
    req.on("data", take).once("end", done).once("error", done).once("close", done);
  });
}

/**
 * The body of a node:http request as a web stream. It breaks off after `limit` bytes, more than
 * its reader takes, so no body is read on and on; the rest is left unread and the connection
 * closes after the answer (`closing`). Cancelling it stops reading the same way
 * (Readable.toWeb's cancel would destroy the socket before the answer).
 */
export function bodyStream(req, limit) {
  let open = true;
  const settle = (end) => {
    if (open) {
      open = false;
      end();
    }
  };
  let take;
  let read = 0;
  return new ReadableStream(
    {
      start(controller) {
        take = (chunk) => {
          read += chunk.length;
          if (read > limit) {
            req.off("data", take);
            req.pause();
            return settle(() => controller.error(new Error("the body is longer than the host reads")));
          }
          controller.enqueue(new Uint8Array(chunk));
          if (controller.desiredSize <= 0) req.pause();
        };
        req.on("data", take);
        req.once("end", () => settle(() => controller.close()));
        req.once("error", (error) => settle(() => controller.error(error)));
        req.once("close", () => settle(() => controller.error(new Error("the client went away"))));
      },
      pull() {
        req.resume();
      },
      cancel() {
        open = false;
        req.off("data", take);
        req.pause();
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

/**
 * A node:http request as a Fetch Request: its URL on the scheme its socket speaks and the host it
 * names, its headers, and its body as a stream that breaks off after `limit` bytes.
 */
export function requestOf(req, limit) {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  const scheme = req.socket.encrypted ? "https" : "http";
  const bodyless = req.method === "GET" || req.method === "HEAD";
  return new Request(new URL(req.url, `${scheme}://${req.headers.host ?? "localhost"}`), {
    method: req.method,
    headers,
    body: bodyless ? undefined : bodyStream(req, limit),
    duplex: "half",
  });
}

/** Writes a Fetch Response to a node:http response, closing the connection over an unread body. */
export async function writeResponse(res, response, req) {
  res.writeHead(response.status, [...[...response.headers].flat(), ...closing(req)]);
  res.end(Buffer.from(await response.arrayBuffer()));
}

/** The answer to a fault of the host: a generic 500 (the exception goes to the log only). */
const INTERNAL_ERROR = JSON.stringify({ error: "server_error", error_description: "Internal error" });

/**
 * An auth server (createAuthServer's) as a node:http request listener:
 * `http.createServer(nodeHandler(server)).listen(3000)`. Every request goes to `server.fetch`,
 * its body read with the core's bound for its path (a longer one is refused as too large:
 * `413` at an API endpoint, `400 invalid_request` elsewhere; the connection closed after the answer), the socket's peer address as
 * the source that failed client authentications are counted against (where no `sourceOf` hook
 * names one), the socket's scheme as the request's. A request node:http hands over that the Fetch API cannot represent
 * is answered 400; a fault of the host 500, logged.
 */
export function nodeHandler(server) {
  // Past the core's limit for the path, so that the driver reads one byte more and refuses it itself.
  const limitOf = (url) => server.bodyLimit(url.split("?", 1)[0]) + 64 * 1024;
  return async function listener(req, res) {
    const fail = (status, body) => {
      if (!res.headersSent) res.writeHead(status, ["Content-Type", "application/json", "Cache-Control", "no-store", ...closing(req)]);
      res.end(body);
    };
    let request;
    try {
      request = requestOf(req, limitOf(req.url ?? "/"));
    } catch {
      return fail(400, JSON.stringify({ error: "invalid_request", error_description: "the request could not be read" }));
    }
    try {
      await writeResponse(res, await server.fetch(request, { source: req.socket.remoteAddress }), req);
    } catch (error) {
      console.error("edgegrant: the host failed:", error);
      fail(500, INTERNAL_ERROR);
    }
  };
}
