// The two example hosts as the load runner needs them: started normally (not in test mode: its
// audit buffer grows until /__test__/audit is read, which would pass for a leak), on a fresh
// configuration with a pool of users and apps, with a way to read the server's memory (RSS of
// its own process, from /proc) and the number of records in its store.
//
//   Node host:   examples/node/server.mjs's startServer in a child process (node-host-child.mjs),
//                SQLite file in a temp dir.
//   Worker host: examples/worker/dev.mjs's startWorker (wrangler dev); the memory is the workerd
//                process that runs the Worker and its Durable Object (the one holding the
//                object's SQLite file open), found in this process's descendants. The other
//                workerd wrangler starts (its proxy in front of the user port) is sampled too.
import { fork } from "node:child_process";
import { randomBytes, scryptSync } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { secretDigest } from "../../pkg/src/node.js";
import { startWorker } from "../../examples/worker/dev.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
// better-sqlite3 is the package's (peer) dependency, installed in pkg/node_modules.
const Database = createRequire(new URL("../../pkg/package.json", import.meta.url))("better-sqlite3");

export const REDIRECT = "http://127.0.0.1:8788/callback";

/**
 * A configuration with `users` users and `apps` apps (half public PKCE apps, half confidential
 * with a secret), written to `dir/config.json`. Returns `{ path, users, apps }`, the users with
 * their passwords and the apps with their secrets, for the client side.
 */
export function writeConfig(dir, { users = 8, apps = 4 } = {}) {
  const userList = [];
  for (let i = 0; i < users; i++) {
    const password = `load-password-${i}`;
    const salt = randomBytes(16);
    userList.push({
      username: `user${i}`,
      password,
      password_scrypt: `scrypt$${salt.toString("hex")}$${scryptSync(password, salt, 32).toString("hex")}`,
      account_id: `dbid:AALoadUser${String(i).padStart(25, "0")}`, // 40 characters, as the hosts require
      uid: String(100000 + i),
      name: `Load User${i}`,
      email: `user${i}@example.com`,
    });
  }
  const appList = [];
  for (let i = 0; i < apps; i++) {
    const confidential = i % 2 === 1;
    appList.push({
      key: `load-app-${i}`,
      name: `Load App ${i}`,
      secret: confidential ? `load-secret-${i}-${randomBytes(8).toString("hex")}` : undefined,
      confidential,
    });
  }
  const doc = {
    database: "edgegrant.sqlite",
    session_secret: randomBytes(32).toString("hex"),
    server_key: randomBytes(32).toString("base64url"),
    users: userList.map(({ password: _, ...u }) => u),
    apps: appList.map((a) => ({
      key: a.key,
      name: a.name,
      ...(a.secret && { secret_digest: secretDigest(a.secret) }),
      redirect_uris: [REDIRECT],
      permissions: { kind: "scoped", scopes: ["account_info.read", "files.metadata.read"] },
    })),
    api_endpoints: { "/2/users/get_current_account": "account_info.read", "/2/files/list_folder": "files.metadata.read" },
  };
  const path = join(dir, "config.json");
  writeFileSync(path, JSON.stringify(doc, null, 2));
  return { path, users: userList, apps: appList };
}

/** `{ rss, anon }` in kB of process `pid` (VmRSS and RssAnon of /proc/<pid>/status), or null when gone. */
export function readRss(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rss: field("VmRSS"), anon: field("RssAnon") };
  } catch {
    return null;
  }
}

/** CPU time (user + system) in seconds used so far by process `pid`, or NaN when gone. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

/** Busy CPU time of the whole machine so far, in seconds (all cores; /proc/stat, USER_HZ 100). */
export function machineBusySeconds() {
  const [, ...ticks] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks;
  return (user + nice + system + irq + softirq + steal) / 100;
}

/** Every live descendant of `root`: `[{ pid, ppid, comm, args }]`. */
export function descendants(root = process.pid) {
  const all = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // pid (comm) state ppid …; comm may hold spaces and parentheses: split at the last ")".
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      const args = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" ").trim();
      all.push({ pid: Number(name), ppid, comm, args });
    } catch {
      // gone meanwhile
    }
  }
  const found = [];
  let frontier = [root];
  while (frontier.length) {
    const children = all.filter((p) => frontier.includes(p.ppid));
    found.push(...children);
    frontier = children.map((p) => p.pid);
  }
  return found;
}

/** Whether process `pid` holds a file under `dir` open. */
function holdsFileUnder(pid, dir) {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(dir);
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/**
 * Record counts by kind (in `<partition>/<kind>:…`: access, refresh, grant, code, link, attempts)
 * and in all; a store's own entries (the Durable Object's purge index, `~purge:…`) are not records.
 */
function countRecords(db, table, keyColumn) {
  const k = keyColumn;
  const rows = db
    .prepare(`SELECT substr(${k}, instr(${k}, '/') + 1, instr(${k}, ':') - instr(${k}, '/') - 1) AS kind, count(*) AS n FROM ${table} WHERE ${k} NOT LIKE '~%' GROUP BY kind`)
    .all();
  const byKind = Object.fromEntries(rows.map((r) => [r.kind, r.n]));
  return { total: rows.reduce((s, r) => s + r.n, 0), byKind };
}

/** Total size in bytes of the files `base`, `base-wal`, `base-shm` that exist. */
function fileBytes(base) {
  return ["", "-wal", "-shm"].reduce((sum, suffix) => sum + (existsSync(base + suffix) ? statSync(base + suffix).size : 0), 0);
}

/**
 * The Node host in a child process over `configPath`. Resolves `{ kind, url, pid, processes(),
 * stats(gc), records(), close(), stderr() }`.
 */
export async function startNodeHost(configPath) {
  const child = fork(join(here, "node-host-child.mjs"), [configPath], {
    execArgv: ["--expose-gc"],
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (t) => (stderr = (stderr + t).slice(-20_000)));
  child.stdout.resume();
  const exited = new Promise((ok) => child.once("exit", (code, signal) => ok(code ?? signal)));
  const url = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`the Node host did not start within 30 s:\n${stderr}`)), 30_000);
    child.once("message", (m) => (clearTimeout(timer), ok(m.url)));
    exited.then((code) => (clearTimeout(timer), fail(new Error(`the Node host exited (${code}) before listening:\n${stderr}`))));
  });
  const database = join(configPath, "..", "edgegrant.sqlite");
  let pending = Promise.resolve();
  return {
    kind: "node",
    url,
    pid: child.pid,
    /** The processes whose memory is sampled: the server's own. */
    processes: () => [{ role: "node host", pid: child.pid }],
    /** process.memoryUsage() of the server (after a full GC when `gc`), and its audit count. */
    stats(gc = false) {
      // One question at a time on the channel: answers come back in order.
      const answer = pending.then(
        () =>
          new Promise((ok, fail) => {
            const timer = setTimeout(() => fail(new Error("the Node host did not answer a stats request")), 10_000);
            child.once("message", (m) => (clearTimeout(timer), ok(m)));
            child.send({ type: "stats", gc });
          }),
      );
      pending = answer.catch(() => {});
      return answer;
    },
    /** The store's records now (a read-only connection; WAL lets it read beside the server). */
    records() {
      const db = new Database(database, { readonly: true, fileMustExist: true });
      try {
        return { ...countRecords(db, "edgegrant_store", "key"), bytes: fileBytes(database) };
      } finally {
        db.close();
      }
    },
    stderr: () => stderr,
    async close() {
      if (child.connected) child.disconnect();
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Diagnostic: the Worker host's code (examples/worker/src/worker.js, its Durable Object on
 * SQLite storage) on Miniflare directly, i.e. workerd without wrangler dev's proxy workerd,
 * inspector and request log: which memory growth is the Worker's and which the dev tooling's.
 * Miniflare is tests/bench's (npm ci --prefix tests/bench). Not part of `--host both`.
 */
export async function startMiniflareHost(configPath, dir) {
  let Miniflare;
  try {
    ({ Miniflare } = createRequire(new URL("../bench/package.json", import.meta.url))("miniflare"));
  } catch {
    throw new Error("miniflare is not installed: run npm ci --prefix tests/bench");
  }
  const { database: _, listen: __, ...doc } = JSON.parse(readFileSync(configPath, "utf8"));
  const before = new Set(descendants().map((p) => p.pid));
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const persistTo = join(dir, "miniflare-state");
  let output = "";
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(root, "examples/worker/src/worker.js"),
    modulesRoot: root,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    // As examples/worker/wrangler.toml.
    compatibilityDate: "2026-04-01",
    compatibilityFlags: ["nodejs_compat"],
    bindings: { CONFIG: JSON.stringify(doc) },
    durableObjects: { AUTH: { className: "AuthServer", useSQLite: true } },
    durableObjectsPersist: persistTo,
    host: "127.0.0.1",
    port: 0,
    // workerd's own output (the audit log: a JSON line per event), kept as a tail, not printed.
    handleRuntimeStdio(stdout, stderr) {
      for (const stream of [stdout, stderr]) stream.setEncoding("utf8").on("data", (text) => (output = (output + text).slice(-20_000)));
    },
  });
  const url = (await mf.ready).origin;
  const runtime = descendants().find((p) => p.comm === "workerd" && !before.has(p.pid));
  if (!runtime) {
    await mf.dispose();
    throw new Error("no workerd process found under Miniflare");
  }
  const files = () => {
    const found = [];
    const walk = (d) => {
      for (const name of readdirSync(d)) {
        const path = join(d, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith(".sqlite") && name !== "metadata.sqlite") found.push(path);
      }
    };
    walk(persistTo);
    return found;
  };
  return {
    kind: "miniflare",
    url,
    pid: runtime.pid,
    processes: () => [{ role: "workerd (miniflare)", pid: runtime.pid }],
    stats: async () => null,
    records: () => objectRecords(files()),
    stderr: () => output,
    close: () => mf.dispose(),
  };
}

/**
 * The records of every Durable Object (one per partition), from copies of their SQLite files
 * (database and WAL), so that no lock of ours ever meets workerd's; call it while no traffic runs.
 */
function objectRecords(files) {
  const sum = { total: 0, byKind: {}, bytes: 0, objects: files.length };
  for (const file of files) {
    const copy = mkdtempSync(join(tmpdir(), "edgegrant-load-do-"));
    try {
      for (const suffix of ["", "-wal"]) if (existsSync(file + suffix)) copyFileSync(file + suffix, join(copy, "do.sqlite" + suffix));
      const db = new Database(join(copy, "do.sqlite"));
      try {
        const hasKv = db.prepare("SELECT count(*) FROM sqlite_master WHERE name = '_cf_KV'").pluck().get() > 0;
        const counts = hasKv ? countRecords(db, "_cf_KV", "key") : { total: 0, byKind: {} };
        sum.total += counts.total;
        for (const [kind, n] of Object.entries(counts.byKind)) sum.byKind[kind] = (sum.byKind[kind] ?? 0) + n;
        sum.bytes += fileBytes(file);
      } finally {
        db.close();
      }
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  }
  return sum;
}

/** The SQLite files of every Durable Object persisted under `doDir`. */
function objectFiles(doDir) {
  const found = [];
  for (const sub of readdirSync(doDir)) {
    for (const name of readdirSync(join(doDir, sub))) if (name.endsWith(".sqlite") && name !== "metadata.sqlite") found.push(join(doDir, sub, name));
  }
  return found;
}

/**
 * The Worker host (wrangler dev) over `configPath`, its Durable Object storage persisted under
 * `dir`. Resolves the same shape as startNodeHost (stats: none; the isolate's heap is not
 * reachable from here).
 */
export async function startWorkerHost(configPath, dir) {
  const persistTo = join(dir, "worker-state");
  mkdirSync(persistTo, { recursive: true });
  const before = new Set(descendants().map((p) => p.pid));
  const worker = await startWorker({ configPath, port: 0, persistTo });
  const workerds = () => descendants().filter((p) => p.comm === "workerd" && !before.has(p.pid));
  const doDir = join(persistTo, "v3", "do");
  // The runtime: the workerd that holds the object's storage open. The object (and its SQLite
  // file) exists once a request reached it: ask it something that reads records.
  await fetch(`${worker.url}/2/users/get_current_account`, { method: "POST", headers: { authorization: "Bearer none" } }).then((r) => r.arrayBuffer());
  let runtime;
  for (let waited = 0; !runtime && waited < 10_000; waited += 100) {
    runtime = workerds().find((p) => holdsFileUnder(p.pid, doDir));
    if (!runtime) await new Promise((ok) => setTimeout(ok, 100));
  }
  if (!runtime) {
    await worker.close();
    throw new Error(`no workerd process holds the Durable Object's storage under ${doDir} open: ${JSON.stringify(workerds())}`);
  }
  // wrangler's proxy: the workerd listening on the user port.
  const { hostname, port } = new URL(worker.url);
  const proxy = workerds().find((p) => p.pid !== runtime.pid && p.args.includes(`entry=${hostname}:${port}`));
  // wrangler's own Node process (it started both workerds): console output of the Worker, the
  // audit log among it, reaches it through the inspector.
  const wrangler = descendants().find((p) => p.pid === runtime.ppid && p.comm === "node");
  return {
    kind: "worker",
    url: worker.url,
    pid: runtime.pid,
    processes: () => [
      { role: "workerd (runtime)", pid: runtime.pid },
      ...(proxy ? [{ role: "workerd (proxy)", pid: proxy.pid }] : []),
      ...(wrangler ? [{ role: "wrangler (node)", pid: wrangler.pid }] : []),
    ],
    stats: async () => null,
    /** The objects' records now (objectRecords: call it while no traffic runs). */
    records: () => objectRecords(objectFiles(doDir)),
    stderr: () => worker.output(),
    close: () => worker.close(),
  };
}
