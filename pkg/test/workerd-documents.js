// A Worker on edgegrant/workers asked to create an authorization server: `POST /create` with
// `{ config, anyDocumentHostWithoutAddressCheck?, ownFetcher? }` answers `{ created: true }` or the
// error createAuthServer threw, so that the test can see, inside workerd, which configurations
// the Workers entry takes with its default fetcher (the web fetch, which cannot check the
// addresses a name resolves to).
import { createAuthServer, fetchDocument } from "../src/workers.js";
import { memoryStorage } from "../src/adapters/memory.js";

export default {
  async fetch(request) {
    const { config, anyDocumentHostWithoutAddressCheck, ownFetcher } = await request.json();
    try {
      createAuthServer({
        config,
        storage: memoryStorage(),
        ...(anyDocumentHostWithoutAddressCheck !== undefined && { anyDocumentHostWithoutAddressCheck }),
        ...(ownFetcher && { fetchDocument: (fetch) => fetchDocument(fetch) }),
      });
      return Response.json({ created: true });
    } catch (error) {
      return Response.json({ error: String(error?.message ?? error) });
    }
  },
};
