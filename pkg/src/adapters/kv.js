// Workers KV beside a strongly consistent store. KV is eventually consistent and has no
// conditional writes, so it may hold only records whose correctness never depends on a read
// being fresh or a write being conditional: the access- and refresh-token records. Those are
// written once under a fresh 256-bit digest and never changed again — revocation and unlinking
// change the grant and link records, which stay in the strong store with codes. (A revocation
// also writes the grant's refresh token back unchanged with a purge time, at version 1, and a
// rotation the token it supersedes: here that sets its KV expiration, after the strong
// transaction applied.) A bearer check
// reads the token from KV and its account's ledger (and, where the ledger moved on since the
// token was minted, its grant and link) from the strong store, so a stale KV read can
// only miss a token written moments ago elsewhere (a spurious 401), never accept a revoked or
// expired one.
//
// Order of writes: the token records go to KV first, then the strong transaction. If that
// transaction fails, the KV records are deleted again; a crash in between leaves records that
// nothing points at and nobody holds the secret of: access-token records expire from KV with
// their purge time, refresh-token records (which never expire) stay, harmless and unreachable.

/** Keys whose records may live in KV (`<partition>/access:…`, `<partition>/refresh:…`). */
const KV_HELD = /^[^/]*\/(access|refresh):/;

/** KV refuses expirations less than 60 s ahead. */
const KV_MIN_TTL = 60;

export function kvTokenStorage(kv, strong, { prefix = "" } = {}) {
  const held = (key) => KV_HELD.test(key);
  const kvKey = (key) => prefix + key;
  const expiration = (purgeAfter) =>
    purgeAfter === null || purgeAfter === undefined
      ? {}
      : { expiration: Math.max(purgeAfter, Math.ceil(Date.now() / 1000) + KV_MIN_TTL) };

  return {
    async read(keys) {
      const strongKeys = keys.filter((key) => !held(key));
      const tokenKeys = keys.filter(held);
      const [found, tokens] = await Promise.all([
        strongKeys.length ? strong.read(strongKeys) : new Map(),
        Promise.all(tokenKeys.map((key) => kv.get(kvKey(key), "arrayBuffer"))),
      ]);
      tokenKeys.forEach((key, i) => {
        // Written once, never changed: always version 1.
        if (tokens[i] !== null) found.set(key, { version: 1, bytes: new Uint8Array(tokens[i]) });
      });
      return found;
    },

    async apply({ puts, audit }) {
      // A token record written back at version 1 keeps its bytes and gains a purge time.
      const expiring = puts.filter((put) => held(put.key) && put.expect === 1);
      const tokenPuts = puts.filter((put) => held(put.key) && put.expect !== 1);
      const strongPuts = puts.filter((put) => !held(put.key));
      for (const { key, expect } of tokenPuts) {
        // A contract breach, not a conflict: KV cannot honour a version condition.
        if (expect !== null) throw new Error(`edgegrant: ${key} is write-once, but a put expects version ${expect}`);
      }
      // The collision guard for broken entropy, best effort: KV has no conditional put.
      const existing = await Promise.all(tokenPuts.map(({ key }) => kv.get(kvKey(key))));
      if (existing.some((value) => value !== null)) return false;
      const written = [];
      const unwrite = () => Promise.all(written.map((key) => kv.delete(key)));
      let applied;
      try {
        await Promise.all(
          tokenPuts.map(({ key, bytes, purgeAfter }) => {
            // Noted before the put: a put still in flight when another fails is taken back too.
            written.push(kvKey(key));
            return kv.put(kvKey(key), bytes, expiration(purgeAfter));
          }),
        );
        applied = strongPuts.length === 0 || (await strong.apply({ puts: strongPuts, audit }));
      } catch (error) {
        await unwrite().catch(() => {});
        throw error;
      }
      if (!applied) {
        await unwrite();
        return false;
      }
      // The strong transaction (a revocation, a rotation) decided; the expirations follow it,
      // best effort: a record that outlives its purge time is dead weight, never live. Nothing
      // written is taken back from here on.
      await Promise.allSettled(expiring.map(({ key, bytes, purgeAfter }) => kv.put(kvKey(key), bytes, expiration(purgeAfter))));
      return true;
    },

    /** Purges the strong store; KV expires token records by itself at their purge time. */
    purge: (now) => strong.purge(now),
  };
}
