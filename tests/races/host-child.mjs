// One authorization host in a process of its own, for the race suite (races.mjs): the package's
// server (the core and its driver) on a real store that other such processes share. Started by
// fork() with the advanced serialization (byte arrays cross as they are) and the store as JSON:
//
//   { "kind": "sqlite", "path": "…" } | { "kind": "postgres", "url": "…", "table": "…" }
//   | { "kind": "durable-object" | "kv", "url": "<the workerd test Worker>", "db": "…" }
//
// Messages: {id, op: "handle", input, profile?: "reference" | "standards" | "identity"} → {id, result}; {id, op: "unlink", app, account} →
// {id, result}; {id, op: "stats"} → {id, result: {conflicts, unavailable, explained}}. It exits when the
// channel closes.
import { AsyncLocalStorage } from "node:async_hooks";
import { createAuthServer } from "../../pkg/src/node.js";
import { config, standardsConfig } from "../../pkg/test/fixtures.mjs";
import { remoteStorage } from "../../pkg/test/workerd-storage.js";
import { identityConfig } from "./identity.mjs";

const spec = JSON.parse(process.argv[2]);

async function openStore() {
  switch (spec.kind) {
    case "sqlite": {
      const { openSqliteStorage } = await import("../../pkg/src/adapters/sqlite.js");
      return openSqliteStorage(spec.path);
    }
    case "postgres": {
      const { openPostgresStorage } = await import("../../pkg/src/adapters/postgres.js");
      return openPostgresStorage(spec.url, { table: spec.table, max: 8 });
    }
    case "durable-object":
    case "kv": {
      const target = `${spec.url}?db=${spec.db}&store=${spec.kind === "kv" ? "kv" : ""}`;
      return remoteStorage((body) => fetch(target, { method: "POST", body }));
    }
    default:
      throw new Error(`unknown store ${spec.kind}`);
  }
}

const store = await openStore();
const stats = { conflicts: 0, unavailable: 0, explained: {} };
// EDGEGRANT_RACES_EXPLAIN=1: every lost conditional write is explained — the keys whose
// condition no longer held (read again just after, so a later writer may show too), by kind,
// with the kinds the transaction wrote — each request's trail of them tallied by its path and
// answer (status and refusal). Off by default: the extra read changes the timing.
const explain = process.env.EDGEGRANT_RACES_EXPLAIN === "1";
const inRequest = new AsyncLocalStorage();
const kindOf = (key) => key.slice(key.indexOf("/") + 1).split(":")[0];
async function explainConflict({ puts }) {
  const now = await store.read(puts.map((put) => put.key));
  const failed = puts.filter((put) => (now.get(put.key)?.version ?? null) !== (put.expect ?? null)).map((put) => kindOf(put.key));
  const wrote = [...new Set(puts.map((put) => kindOf(put.key)))].sort();
  return `${[...new Set(failed)].sort().join("+") || "(none by now)"} ← tx[${wrote.join(",")}]`;
}
// The store as the driver sees it, counting the conditional writes that lost a race.
const storage = {
  read: (keys) => store.read(keys),
  async apply(transaction) {
    const applied = await store.apply(transaction);
    if (!applied) {
      stats.conflicts++;
      if (explain) inRequest.getStore()?.push(await explainConflict(transaction));
    }
    return applied;
  },
};
// One server per profile on the same store: the rotation race runs in the standards profile, the
// assertion race in the identity profile (identity.mjs: standards, trusting an identity provider).
const servers = {
  reference: createAuthServer({ config: config(), storage, onAudit: () => {} }),
  standards: createAuthServer({ config: standardsConfig(), storage, onAudit: () => {} }),
  identity: createAuthServer({ config: identityConfig(), storage, onAudit: () => {} }),
};

/** The parts of a driver result the race suite judges (and nothing it cannot clone). */
const summary = (result) => {
  if (result.kind === "reply" && result.status === 503) stats.unavailable++;
  return { kind: result.kind, status: result.status, outcome: result.outcome, refusal: result.refusal, body: result.body, headers: result.headers };
};

process.on("message", async ({ id, op, input, profile = "reference", app, account }) => {
  try {
    let result;
    if (op === "handle") {
      const trail = [];
      result = summary(await inRequest.run(trail, () => servers[profile].handle(input)));
      if (trail.length) {
        const line = `${input.path} ${result.status} ${result.refusal ?? result.outcome}: ${trail.join(" | ")}`;
        stats.explained[line] = (stats.explained[line] ?? 0) + 1;
      }
    }
    else if (op === "unlink") result = summary(await servers.reference.unlink(app, account));
    else if (op === "stats") result = { ...stats };
    else throw new Error(`unknown op ${op}`);
    process.send({ id, result });
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) });
  }
});
process.on("disconnect", async () => {
  await store.close?.();
  process.exit(0);
});
process.send({ ready: true });
