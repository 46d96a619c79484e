// What edgegrant/node adds to "." (the Node fetch of client metadata documents, node:http
// adapters), without loading a module: ./node.js and ./node-configured-apps.js each instantiate
// theirs, then export this. createAuthServer and runRequest are the package root's on Node
// (./index-node.js): they fetch documents with fetchDocumentNode by default.
export * from "./index-node.js";
export { fetchDocumentNode } from "./documents-node.js";
export { nodeHandler, closing, readNodeBody, bodyStream, requestOf, writeResponse } from "./node-http.js";
