// The benchmark Worker: edgegrant and @cloudflare/workers-oauth-provider side by side inside
// workerd, over one shared in-memory KV. `GET /bench?rounds=&batch=&warmup=` runs the shared
// measurement loop (../lib/measure.mjs) in the isolate, batch-timed because workerd's clock
// moves in whole milliseconds, and answers the counts and times per flow and subject.
// `GET /op?subject=&flow=` performs one operation, for latencies timed from Node; `GET /ping`
// does nothing, to time the Node↔workerd hop itself; `GET /ready` sets the subjects up. A failed
// flow answers 500 with its error.
import { compare } from "../lib/measure.mjs";
import { memoryKv } from "./memory-kv.js";
import { edgegrantSubject } from "./edgegrant.js";
import { peerSubject } from "./peer.js";

const FLOWS = ["exchange", "refresh", "bearer"];

let subjects; // set up once per isolate, by the first request
const ready = () => (subjects ??= (async () => {
  const kv = memoryKv();
  return [await edgegrantSubject(kv), await peerSubject(kv)];
})());

async function route(url) {
  if (url.pathname === "/ping") return new Response(null, { status: 204 });
  const [edgegrant, peer] = await ready();
  if (url.pathname === "/ready") return new Response(null, { status: 204 });
  const number = (name) => Number(url.searchParams.get(name));
  if (url.pathname === "/bench") {
    const clock = () => performance.now();
    const start = clock();
    const results = await compare({
      subjects: [edgegrant, peer],
      flows: FLOWS,
      rounds: number("rounds"),
      batch: number("batch"),
      warmup: number("warmup"),
      clock,
      perOp: false,
    });
    const flows = {};
    for (const flow of FLOWS) {
      flows[flow] = {};
      for (const [name, { ops, ms }] of Object.entries(results[flow])) flows[flow][name] = { ops, ms };
    }
    return Response.json({ flows, ms: clock() - start });
  }
  if (url.pathname === "/op") {
    const subject = { edgegrant, peer }[url.searchParams.get("subject")];
    const run = subject?.flows[url.searchParams.get("flow")];
    if (!run) return new Response("no such subject or flow", { status: 404 });
    await run();
    return new Response(null, { status: 204 });
  }
  return new Response("not found", { status: 404 });
}

export default {
  async fetch(request) {
    try {
      return await route(new URL(request.url));
    } catch (error) {
      return new Response(String(error?.stack ?? error), { status: 500 });
    }
  },
};
