// A throwaway PostgreSQL server for the tests: a new cluster in a temporary directory, on a free
// loopback port, from the machine's own PostgreSQL binaries (Debian's `postgresql` package, which
// tests/all.sh installs when missing). Durability is off (fsync): the tests are about concurrency
// and conditional writes, which fsync does not change, and a power cut cannot happen to a test.
//
//   const pg = await startPostgres(); … pg.url … ; await pg.stop();
import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The directory of initdb and pg_ctl: PATH's, else the newest under /usr/lib/postgresql. */
export function postgresBin() {
  const onPath = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).stdout.trim();
  if (onPath) return join(onPath, "..");
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions.length === 0) throw new Error("PostgreSQL is not installed (apt-get install postgresql; tests/all.sh does it)");
  return join(root, versions[0], "bin");
}

/** A port nobody listens on now. */
async function freePort() {
  const server = createServer();
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  await new Promise((ok) => server.close(ok));
  return port;
}

/**
 * Starts a new cluster; resolves `{ url, stop }`. PostgreSQL refuses to run as root, so as root
 * the cluster belongs to the `postgres` user the package created.
 */
export async function startPostgres() {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-pg-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const user = execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim();
    const group = execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim();
    chownSync(dir, Number(user), Number(group));
  }
  const run = (tool, args) => {
    const [command, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, tool), ...args]] : [join(bin, tool), args];
    return execFileSync(command, argv, { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  };
  const data = join(dir, "data");
  run("initdb", ["-D", data, "-A", "trust", "-U", "edgegrant", "-E", "UTF8", "--no-sync"]);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c max_connections=200`;
  run("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-t", "60", "start"]);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // A test run that ends early still takes its server down.
  process.once("exit", stop);
  return { url: `postgres://edgegrant@127.0.0.1:${port}/postgres`, stop: async () => stop() };
}
