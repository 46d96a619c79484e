// edgegrant/node: everything of "." (loaded and initialized), and the Node fetch of client
// metadata documents, which createAuthServer uses by default here.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthServer, DocumentAnswer, DocumentFetch } from "./index.js";

export * from "./index.js";

/** `dns.lookup`'s shape, as `fetchDocumentNode` calls it (always with `all: true`). */
export type DnsLookup = (hostname: string, options: { all: true; family?: number }, callback: (error: Error | null, addresses: { address: string; family: number }[]) => void) => void;

/** The Node fetch of a client's metadata document: as `fetchDocument`, and every address the name resolves to checked, the connection made to the checked one (no DNS rebinding). `ca`: an extra trusted certificate (PEM); `lookup`: the resolver (default `dns.lookup`). */
export function fetchDocumentNode(fetch: DocumentFetch, options?: { allowLoopback?: boolean; ca?: string | Uint8Array; lookup?: DnsLookup }): Promise<DocumentAnswer>;

/** An auth server as a node:http request listener: `http.createServer(nodeHandler(server))`. Every request goes to `server.fetch` with its body read under the core's bound (longer: refused as too large, `400 invalid_request`, the connection closed after the answer), the socket's peer as the source failed client authentications are counted against (where no `sourceOf` hook names one) and the socket's scheme. */
export function nodeHandler(server: AuthServer): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
/** A node:http request as a Fetch Request, its body a stream that breaks off after `limit` bytes. */
export function requestOf(req: IncomingMessage, limit: number): Request;
/** Writes a Fetch Response to node:http, closing the connection over a body that was not all read. */
export function writeResponse(res: ServerResponse, response: Response, req: IncomingMessage): Promise<void>;
/** `["Connection", "close"]` and a staged close for a request whose body was not all read; `[]` otherwise. */
export function closing(req: IncomingMessage): string[];
/** A node:http request's body, up to `limit + 1` bytes (the rest left unread; GET and HEAD: none). */
export function readNodeBody(req: IncomingMessage, limit: number): Promise<Uint8Array>;
/** A node:http request's body as a web stream that breaks off after `limit` bytes. */
export function bodyStream(req: IncomingMessage, limit: number): ReadableStream<Uint8Array>;
