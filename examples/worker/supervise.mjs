// node supervise.mjs <command> [args…]: runs the command, and stops it and everything it started
// when this process's stdin closes. dev.mjs starts wrangler through it, in a process group of its
// own, with stdin a pipe from dev.mjs: the pipe closes when dev.mjs calls close() — and also when
// dev.mjs dies in any way, even by SIGKILL, so no wrangler or workerd outlives it.
import { spawn } from "node:child_process";

const [command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit"] });

// This process leads the group; signalling the group (pid 0) reaches wrangler's workerd children
// too. It ignores SIGTERM itself so that it can report how the command ended.
process.on("SIGTERM", () => {});
const stopGroup = (signal) => {
  try {
    process.kill(0, signal);
  } catch {
    // nothing left to stop
  }
};

child.on("exit", (code, signal) => {
  stopGroup("SIGTERM"); // stragglers, if the command left any
  process.exit(code ?? (signal ? 1 : 0));
});

process.stdin.on("data", () => {}); // nothing is ever sent; reading lets "close" come
process.stdin.on("close", () => {
  child.kill("SIGTERM"); // wrangler stops its workerd processes on SIGTERM
  setTimeout(() => stopGroup("SIGKILL"), 5000).unref();
});
