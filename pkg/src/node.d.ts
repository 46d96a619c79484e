// edgegrant/node: everything of "." (loaded and initialized), and the Node fetch of client
// metadata documents, which createAuthServer uses by default here.
import type { DocumentAnswer, DocumentFetch } from "./index.js";

export * from "./index.js";

/** `dns.lookup`'s shape, as `fetchDocumentNode` calls it (always with `all: true`). */
export type DnsLookup = (hostname: string, options: { all: true; family?: number }, callback: (error: Error | null, addresses: { address: string; family: number }[]) => void) => void;

/** The Node fetch of a client's metadata document: as `fetchDocument`, and every address the name resolves to checked, the connection made to the checked one (no DNS rebinding). `ca`: an extra trusted certificate (PEM); `lookup`: the resolver (default `dns.lookup`). */
export function fetchDocumentNode(fetch: DocumentFetch, options?: { allowLoopback?: boolean; ca?: string | Uint8Array; lookup?: DnsLookup }): Promise<DocumentAnswer>;
