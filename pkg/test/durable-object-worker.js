// A test Worker: one Durable Object whose storage is wrapped by the adapter under test, reached
// over fetch with `{ op, args }` so the shared suite can drive it from Node.
import { durableObjectStorage } from "../src/adapters/durable-object.js";

export class Records {
  constructor(state) {
    this.storage = durableObjectStorage(state.storage);
  }
  async fetch(request) {
    const { op, args } = await request.json();
    const result = await this.storage[op](...args);
    return Response.json(result instanceof Map ? { map: [...result] } : { value: result });
  }
}

export default {
  fetch(request, env) {
    const name = new URL(request.url).searchParams.get("db");
    return env.RECORDS.get(env.RECORDS.idFromName(name)).fetch(request);
  },
};
