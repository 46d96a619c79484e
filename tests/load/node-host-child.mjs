// The Node host in a process of its own, for tests/load/load.mjs: its memory is then the
// server's alone. Started with `--expose-gc` and an IPC channel:
//
//   node --expose-gc node-host-child.mjs <config.json>
//
// It sends {type: "listening", url} once examples/node/server.mjs's startServer answers; on
// {type: "stats", gc} it replies {type: "stats", memory, wasm, audit} (process.memoryUsage(),
// after a full collection when `gc`; the size in bytes of the core's WebAssembly memory, which
// only ever grows, so a leak in the core shows there; the number of audit events so far). It
// closes the server and exits when the channel closes (the runner is done, or died).
import { startServer } from "../../examples/node/server.mjs";
// The instance the server runs on: initSync hands back the exports of the one already made.
import { initSync } from "../../pkg/dist/edgegrant_wasm.js";

const configPath = process.argv[2];
let audit = 0;
// Counted, not printed: a JSON line per event on a pipe would measure the pipe, not the host.
const server = await startServer(configPath, { port: 0, onAudit: () => void audit++ });
process.send({ type: "listening", url: server.url });

process.on("message", (message) => {
  if (message?.type !== "stats") return;
  if (message.gc && typeof globalThis.gc === "function") globalThis.gc();
  process.send({ type: "stats", memory: process.memoryUsage(), wasm: initSync().memory.buffer.byteLength, audit });
});
process.on("disconnect", async () => {
  await server.close();
  process.exit(0);
});
