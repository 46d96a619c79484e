// The race explorer's invariants, checked against real stores: several hosts (processes, or the
// isolates of workerd behind a Durable Object) run the package's server on ONE store and race on
// the same credentials, thousands of times:
//
//   code      one authorization code presented to every host at once;
//   revoke    one host revokes a grant while the others refresh its refresh token;
//   unlink    one host unlinks the app while another redeems a code of it and the rest refresh;
//   rotate    (standards profile) every host refreshes one rotating refresh token at once;
//   assertion (identity profile, identity.mjs) one identity assertion (ID-JAG, the JWT-bearer
//             grant, conf-app authenticated) presented to every host at once.
//
// Invariants, judged after every race: no code yields tokens twice (0 double redemptions); after
// an acknowledged revocation or unlink no access token of the grant or link is served and its
// refresh token is refused (0 tokens alive); a code replay ends what the code produced; the
// refreshes of one rotating token all get one and the same answer (0 split answers), whose token
// then rotates in turn, after which the superseded one ends the grant; one identity assertion
// yields tokens exactly once (0 assertion replays; none lost, unless an attempt was answered 5xx
// — it may have kept the assertion's use — counted apart), every other presentation refused
// invalid_grant as assertion_reused, its token served at the API and a later replay on another
// host refused as reused. The hosts' own counts of lost conditional writes show that the races
// were real (they met in the store, not one after another).
//
//   node tests/races/races.mjs [sqlite|postgres|durable-object|kv|memory ...] [--rounds N] [--hosts K] [--rotate-each R]
//
// --rotate-each R: each host sends R refreshes of the rotating token at once (K × R race).
// Every run prints the 5xx answers per race (each retried by the race's client, as a 503's
// Retry-After asks); EDGEGRANT_RACES_EXPLAIN=1 also prints which records each lost write found
// changed (host-child.mjs), grouped by the request's answer.
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createAuthServer } from "../../pkg/src/node.js";
import { memoryStorage } from "../../pkg/src/adapters/memory.js";
import { GET_ACCOUNT, PKCE_APP, PKCE_REDIRECT, VERIFIER, config, form, pkceQuery, standardsConfig } from "../../pkg/test/fixtures.mjs";
import { assertionRequest, identityAssertion, identityConfig } from "./identity.mjs";

const CHILD = fileURLToPath(new URL("./host-child.mjs", import.meta.url));

/** K host processes on the store `spec` (see host-child.mjs); resolves their handles. */
export async function processHosts(spec, count) {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const child = fork(CHILD, [JSON.stringify(spec)], { serialization: "advanced", stdio: ["ignore", "inherit", "inherit", "ipc"] });
      const pending = new Map();
      let next = 0;
      await new Promise((ok, fail) => {
        child.once("message", ok);
        child.once("exit", (code) => fail(new Error(`a host process exited (${code}) before it was ready`)));
      });
      child.on("message", ({ id, result, error }) => {
        const waiter = pending.get(id);
        pending.delete(id);
        if (error) waiter.fail(new Error(error));
        else waiter.ok(result);
      });
      const call = (message) =>
        new Promise((ok, fail) => {
          const id = next++;
          pending.set(id, { ok, fail });
          child.send({ id, ...message });
        });
      return {
        handle: (input, profile) => call({ op: "handle", input, profile }),
        unlink: (app, account) => call({ op: "unlink", app, account }),
        stats: () => call({ op: "stats" }),
        close: () =>
          new Promise((ok) => {
            child.once("exit", ok);
            child.disconnect();
          }),
      };
    }),
  );
}

/**
 * K hosts in this process on one memory store: their steps interleave because every store call
 * waits a turn of the event loop (as a store across a network would), so they race as processes do.
 */
export function memoryHosts(count) {
  const store = memoryStorage();
  return Array.from({ length: count }, () => {
    const stats = { conflicts: 0, unavailable: 0 };
    const turn = () => new Promise((ok) => setImmediate(ok));
    const storage = {
      read: async (keys) => (await turn(), store.read(keys)),
      apply: async (tx) => {
        await turn();
        const applied = store.apply(tx);
        if (!applied) stats.conflicts++;
        return applied;
      },
    };
    const servers = {
      reference: createAuthServer({ config: config(), storage, onAudit: () => {} }),
      standards: createAuthServer({ config: standardsConfig(), storage, onAudit: () => {} }),
      identity: createAuthServer({ config: identityConfig(), storage, onAudit: () => {} }),
    };
    const summary = (r) => ({ kind: r.kind, status: r.status, outcome: r.outcome, refusal: r.refusal, body: r.body, headers: r.headers });
    return {
      handle: async (input, profile = "reference") => summary(await servers[profile].handle(input)),
      unlink: async (app, account) => summary(await servers.reference.unlink(app, account)),
      stats: async () => ({ ...stats }),
      close: async () => {},
    };
  });
}

const tokenRequest = (pairs) => ({ path: "/oauth2/token", ...form(pairs) });
const apiCall = (token) => ({ method: "POST", path: GET_ACCOUNT, headers: [["authorization", `Bearer ${token}`]] });
const revokeCall = (token) => ({ method: "POST", path: "/2/auth/token/revoke", headers: [["authorization", `Bearer ${token}`]] });
const refreshRequest = (refresh_token) => tokenRequest({ grant_type: "refresh_token", refresh_token, client_id: PKCE_APP });
const codeRequest = (code) => tokenRequest({ grant_type: "authorization_code", code, client_id: PKCE_APP, code_verifier: VERIFIER, redirect_uri: PKCE_REDIRECT });

/** A fresh account per round: rounds never share records, and they spread over partitions. */
const accountOf = (round) => ({ account_id: `dbid:race${String(round).padStart(31, "0")}`, uid: String(1000 + round) });

/**
 * Runs `rounds` rounds of the five races on `hosts`, `lanes` rounds at a time. Resolves the
 * counts; `violations` lists every broken invariant (empty when all held).
 */
export async function runRaces(hosts, { rounds = 100, lanes = 4, rotateEach = 1 } = {}) {
  const counts = { races: 0, codeRaces: 0, revokeRaces: 0, unlinkRaces: 0, rotateRaces: 0, assertionRaces: 0, tokensChecked: 0, doubleRedemptions: 0, assertionReplays: 0, assertionsLost: 0, assertionsLostAfter5xx: 0, splitAnswers: 0, aliveAfterEnd: 0, unavailable: 0 };
  // Per race: the racing requests sent, and those answered 5xx (each retried, so each is one
  // more request), by refusal; `setup` is everything else (consents, exchanges, the checks).
  counts.byRace = Object.fromEntries(["code", "revoke", "unlink", "rotate", "assertion", "setup"].map((race) => [race, { requests: 0, unavailable: 0, refusals: {} }]));
  const violations = [];
  const violate = (what) => {
    violations.push(what);
  };
  const K = hosts.length;
  const started = performance.now();

  async function must(host, input, profile, race = "setup", tries = 1) {
    const result = await host.handle(input, profile);
    const tally = counts.byRace[race];
    tally.requests++;
    if (result.status >= 500) {
      counts.unavailable++;
      tally.unavailable++;
      const why = `${result.status} ${result.refusal ?? result.outcome}`;
      tally.refusals[why] = (tally.refusals[why] ?? 0) + 1;
      // A store that stays busy is broken, not busy: fail rather than retry for ever.
      if (tries >= 50) throw new Error(`a request was refused ${tries} times in a row: ${result.status} ${result.body}`);
      return must(host, input, profile, race, tries + 1); // the store was busy (503): the client retries, as it is told to
    }
    result.retried = tries - 1; // how many 5xx answers came before this one
    return result;
  }
  async function consent(host, account) {
    const body = new TextEncoder().encode(new URLSearchParams({ query: pkceQuery(), decision: "allow" }).toString());
    const headers = [["content-type", "application/x-www-form-urlencoded"], ["sec-fetch-site", "same-origin"]];
    const reply = await must(host, { method: "POST", path: "/oauth2/authorize", headers, body, user: account });
    const location = reply.headers?.find(([name]) => name.toLowerCase() === "location")?.[1];
    const code = location && new URL(location).searchParams.get("code");
    if (!code) throw new Error(`consent did not redirect with a code: ${reply.status} ${reply.body}`);
    return code;
  }
  async function exchange(host, account) {
    const reply = await must(host, codeRequest(await consent(host, account)));
    if (reply.outcome !== "tokens") throw new Error(`exchange failed: ${reply.status} ${reply.body}`);
    const { access_token, refresh_token } = JSON.parse(reply.body);
    return { access: access_token, refresh: refresh_token };
  }
  /** Every token in `tokens` refused by a host, and `refresh` refused as invalid_grant. */
  async function allDead(tokens, refresh, what, round) {
    for (const [i, token] of tokens.entries()) {
      const reply = await must(hosts[(round + i) % K], apiCall(token));
      counts.tokensChecked++;
      if (reply.kind === "serve" || reply.status !== 401) {
        counts.aliveAfterEnd++;
        violate(`round ${round}: ${what}: an access token is still served (${reply.kind} ${reply.status})`);
      }
    }
    if (refresh) {
      const reply = await must(hosts[round % K], refreshRequest(refresh));
      counts.tokensChecked++;
      if (reply.outcome === "tokens" || JSON.parse(reply.body).error !== "invalid_grant") {
        counts.aliveAfterEnd++;
        violate(`round ${round}: ${what}: the refresh token still works (${reply.status} ${reply.body})`);
      }
    }
  }
  /** The same request on every host at once (retrying a 503 on its host). */
  const everywhere = (input, profile, race) => Promise.all(hosts.map((host) => must(host, input, profile, race)));
  const errorOf = (r) => {
    try {
      return JSON.parse(r.body).error;
    } catch {
      return undefined;
    }
  };
  const minted = (results) => results.filter((r) => r.outcome === "tokens").map((r) => JSON.parse(r.body).access_token);

  async function round(n) {
    const account = accountOf(n);
    const host = (i) => hosts[(n + i) % K];

    // One code, every host at once.
    const code = await consent(host(0), account);
    const exchanges = await everywhere(codeRequest(code), "reference", "code");
    const winners = minted(exchanges);
    counts.codeRaces++;
    if (winners.length > 1) {
      counts.doubleRedemptions++;
      violate(`round ${n}: one code gave tokens ${winners.length} times`);
    }
    const replayed = exchanges.some((r) => r.refusal === "code_reused");
    if (winners.length === 1 && replayed) await allDead(winners, JSON.parse(exchanges.find((r) => r.outcome === "tokens").body).refresh_token, "a replayed code", n);

    // Revocation against refreshes.
    const grant = await exchange(host(1), account);
    const [revoked, ...refreshes] = await Promise.all([must(host(0), revokeCall(grant.access), "reference", "revoke"), ...hosts.slice(1).map((_, i) => must(host(i + 1), refreshRequest(grant.refresh), "reference", "revoke"))]);
    counts.revokeRaces++;
    if (revoked.status !== 200) violate(`round ${n}: the revocation was not acknowledged: ${revoked.status} ${revoked.body}`);
    else await allDead([grant.access, ...minted(refreshes)], grant.refresh, "after an acknowledged revocation", n);

    // Unlink against a redemption and refreshes.
    const linked = await exchange(host(2), account);
    const pending = await consent(host(3), account);
    const [unlinked, redeemed, ...more] = await Promise.all([
      host(0).unlink(PKCE_APP, account.account_id),
      must(host(1), codeRequest(pending), "reference", "unlink"),
      ...Array.from({ length: Math.max(1, K - 2) }, (_, i) => must(host(i + 2), refreshRequest(linked.refresh), "reference", "unlink")),
    ]);
    counts.unlinkRaces++;
    counts.byRace.unlink.requests++;
    if (unlinked.status >= 500) {
      const why = `${unlinked.status} ${unlinked.refusal ?? unlinked.outcome}`;
      counts.byRace.unlink.unavailable++;
      counts.byRace.unlink.refusals[why] = (counts.byRace.unlink.refusals[why] ?? 0) + 1;
    }
    if (unlinked.outcome !== "unlinked") violate(`round ${n}: the unlink was not acknowledged: ${unlinked.status} ${unlinked.body}`);
    else {
      const late = minted([redeemed]);
      const refreshOf = late.length ? JSON.parse(redeemed.body).refresh_token : null;
      await allDead([linked.access, ...late, ...minted(more)], linked.refresh, "after an acknowledged unlink", n);
      if (refreshOf) await allDead([], refreshOf, "a code redeemed as the app was unlinked", n);
    }
    // One rotating refresh token, every host at once (standards profile; the account of its own).
    const rotating = accountOf(rounds + n);
    const standards = await exchange(host(0), rotating);
    // Each host sends `rotateEach` refreshes at once (a client retrying on a slow link, several
    // tabs of one app): K × rotateEach refreshes of one token race.
    const answers = (await Promise.all(Array.from({ length: rotateEach }, () => everywhere(refreshRequest(standards.refresh), "standards", "rotate")))).flat();
    counts.rotateRaces++;
    const bodies = answers.map((r) => (r.outcome === "tokens" ? JSON.parse(r.body) : null));
    const pairs = new Set(bodies.map((b) => (b ? `${b.access_token} ${b.refresh_token}` : "refused")));
    if (pairs.size !== 1 || pairs.has("refused") || !bodies[0].refresh_token || bodies[0].refresh_token === standards.refresh) {
      counts.splitAnswers++;
      violate(`round ${n}: ${answers.length} refreshes of one rotating token answered ${[...pairs].join(" | ")}`);
    } else {
      // The answer's token is current: it rotates in turn; then the superseded one, presented
      // after its successor was used, ends the grant with everything the race handed out.
      const next = await must(host(1), refreshRequest(bodies[0].refresh_token), "standards");
      if (next.outcome !== "tokens") violate(`round ${n}: the rotated token does not refresh: ${next.status} ${next.body}`);
      else {
        const reused = await must(host(2), refreshRequest(standards.refresh), "standards");
        if (reused.refusal !== "refresh_token_reused") violate(`round ${n}: a superseded token was not caught: ${reused.status} ${reused.body}`);
        else await allDead([bodies[0].access_token, JSON.parse(next.body).access_token], JSON.parse(next.body).refresh_token, "after a superseded token was reused", n);
      }
    }

    // One identity assertion, every host at once (identity profile: conf-app, authenticated,
    // presents a provider's ID-JAG for one of its subjects; a fresh jti each round).
    const assertion = assertionRequest(identityAssertion(n));
    const presented = await everywhere(assertion, "identity", "assertion");
    counts.assertionRaces++;
    const issued = minted(presented);
    const answer = (r) => `${r.status} ${r.refusal ?? r.outcome}${r.outcome === "tokens" ? "" : ` ${errorOf(r)}`}`;
    if (issued.length > 1) {
      counts.assertionReplays++;
      violate(`round ${n}: one identity assertion gave tokens ${issued.length} times`);
    }
    const others = presented.filter((r) => r.outcome !== "tokens" && !(r.refusal === "assertion_reused" && errorOf(r) === "invalid_grant"));
    if (others.length) violate(`round ${n}: an identity assertion raced was answered ${others.map(answer).join(", ")}`);
    if (issued.length === 0) {
      // Lost: no host issued its token. Only a 5xx answer (retried) may have cost it — that
      // attempt may have kept the assertion's use and failed to write its grant.
      counts.assertionsLost++;
      if (presented.some((r) => r.retried > 0)) counts.assertionsLostAfter5xx++;
      else violate(`round ${n}: one identity assertion gave no tokens at all (${presented.map(answer).join(", ")})`);
    } else {
      const won = presented.findIndex((r) => r.outcome === "tokens");
      const served = await must(hosts[(won + 1) % K], apiCall(issued[0]), "identity");
      if (served.kind !== "serve") violate(`round ${n}: the identity assertion's token is not served: ${served.kind} ${served.status} ${served.body}`);
      const replay = await must(hosts[(won + 2) % K], assertion, "identity");
      if (replay.outcome === "tokens") {
        counts.assertionReplays++;
        violate(`round ${n}: a replayed identity assertion gave tokens`);
      } else if (replay.refusal !== "assertion_reused") violate(`round ${n}: a replayed identity assertion was not caught as reused: ${answer(replay)}`);
    }
    counts.races += 5;
  }

  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < rounds) await round(next++);
    }),
  );
  const stats = await Promise.all(hosts.map((host) => host.stats()));
  counts.conflicts = stats.reduce((sum, s) => sum + s.conflicts, 0);
  // EDGEGRANT_RACES_EXPLAIN=1 (see host-child.mjs): each request's lost writes, summed over hosts.
  counts.explained = {};
  for (const { explained = {} } of stats) for (const [line, n] of Object.entries(explained)) counts.explained[line] = (counts.explained[line] ?? 0) + n;
  counts.unavailable += 0;
  counts.seconds = (performance.now() - started) / 1000;
  return { counts, violations };
}

/** One line of a run's figures. */
export const lineOf = (name, { counts }) =>
  `races ${name}: ${counts.races} races (${counts.codeRaces} code, ${counts.revokeRaces} revoke, ${counts.unlinkRaces} unlink, ${counts.rotateRaces} rotate, ${counts.assertionRaces} assertion) in ${counts.seconds.toFixed(1)} s; ` +
  `${counts.conflicts} lost conditional writes, ${counts.unavailable} busy retries; ${counts.doubleRedemptions} double redemptions, ${counts.splitAnswers} split rotation answers, ` +
  `${counts.assertionReplays} assertion replays, ${counts.assertionsLost} assertions lost (${counts.assertionsLostAfter5xx} after a 5xx), ` +
  `${counts.aliveAfterEnd} tokens alive after revoke/unlink/reuse (${counts.tokensChecked} checked)\n` +
  `  5xx answers per race (of the racing requests): ${Object.entries(counts.byRace)
    .map(([race, t]) => `${race} ${t.unavailable}/${t.requests}${t.unavailable ? ` (${Object.entries(t.refusals).map(([why, n]) => `${n} ${why}`).join(", ")})` : ""}`)
    .join("; ")}`;

/** The stores the suite runs on, each opened for `hosts` hosts; resolves `{ hosts, close }`. */
export async function openStores(names, hostsPer) {
  const dir = mkdtempSync(join(tmpdir(), "edgegrant-races-"));
  const closers = [() => rmSync(dir, { recursive: true, force: true })];
  let postgres;
  let workerd;
  const open = {
    memory: async () => memoryHosts(hostsPer),
    sqlite: async () => processHosts({ kind: "sqlite", path: join(dir, "races.sqlite") }, hostsPer),
    postgres: async () => {
      if (!postgres) {
        const { startPostgres } = await import("../postgres/cluster.mjs");
        postgres = await startPostgres();
        closers.unshift(() => postgres.stop());
      }
      return processHosts({ kind: "postgres", url: postgres.url, table: "races" }, hostsPer);
    },
    "durable-object": async () => processHosts({ kind: "durable-object", url: await workerdUrl(), db: "races" }, hostsPer),
    kv: async () => processHosts({ kind: "kv", url: await workerdUrl(), db: "races-kv" }, hostsPer),
  };
  async function workerdUrl() {
    if (!workerd) {
      const { Miniflare } = await import("../../pkg/node_modules/miniflare/dist/src/index.js");
      workerd = new Miniflare({
        modules: true,
        scriptPath: fileURLToPath(new URL("../../pkg/test/workerd-storage.js", import.meta.url)),
        modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
        durableObjects: { RECORDS: "Records" },
        kvNamespaces: ["TOKENS"],
        host: "127.0.0.1",
        port: 0,
      });
      closers.unshift(() => workerd.dispose());
      workerd.url = String(await workerd.ready);
    }
    return workerd.url;
  }
  const stores = {};
  for (const name of names) {
    if (!open[name]) throw new Error(`unknown store ${name}; known: ${Object.keys(open).join(", ")}`);
    stores[name] = await open[name]();
    closers.unshift(() => Promise.all(stores[name].map((host) => host.close())));
  }
  return {
    stores,
    async close() {
      for (const close of closers) await close();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const option = (name, fallback) => {
    const at = args.indexOf(name);
    if (at < 0) return fallback;
    const [, value] = args.splice(at, 2);
    return Number(value);
  };
  const rounds = option("--rounds", 400);
  const hostsPer = option("--hosts", 4);
  const rotateEach = option("--rotate-each", 1);
  const names = args.length ? args : ["memory", "sqlite", "postgres", "durable-object", "kv"];
  const { stores, close } = await openStores(names, hostsPer);
  let failed = false;
  try {
    for (const name of names) {
      const result = await runRaces(stores[name], { rounds, rotateEach });
      console.log(lineOf(name, result));
      for (const violation of result.violations.slice(0, 20)) console.log(`  ${violation}`);
      const explained = Object.entries(result.counts.explained).sort(([, a], [, b]) => b - a);
      for (const [line, n] of explained.slice(0, 40)) console.log(`  ${String(n).padStart(5)} × ${line}`);
      failed ||= result.violations.length > 0;
    }
  } finally {
    await close();
  }
  process.exit(failed ? 1 : 0);
}
