// The floor the Fetch API itself sets in Node: an empty Fetch handler that answers the bearer
// flow's request with the same small JSON, driven exactly as edgegrant's `server.fetch` is — the
// same Request built per call, the JSON read back and checked. Only a bearer flow.
import { GET_ACCOUNT, ORIGIN, expect } from "../../lib/shared.mjs";

const ACCOUNT = "dbid:bench-user-1";
// A token of the shape edgegrant issues, so the Request carries the same header.
const TOKEN = `sl.${"A".repeat(43)}`;

export function fetchFloorSubject({ name = "empty Fetch handler" } = {}) {
  const handler = async (request) => Response.json({ account_id: ACCOUNT });
  return {
    name,
    flows: {
      async bearer() {
        const response = await handler(new Request(`${ORIGIN}${GET_ACCOUNT}`, { headers: { authorization: `Bearer ${TOKEN}` } }));
        const body = response.status === 200 ? await response.json() : {};
        expect(body.account_id === ACCOUNT, "empty Fetch handler", response);
      },
    },
  };
}
