// Records spread over many stores by partition (the text of a record key up to its first "/"):
// `storageOf(partition)` names the store of each, for example the Durable Object of that
// partition (one object per partition) reached over RPC, or this object's own storage for its
// own partition. The core never writes across partitions in one transaction, so a transaction
// goes whole to one store and stays all-or-nothing there; a read may span partitions (a failure
// count beside a credential) and is split, the parts read side by side.

/** The partition of a record key (`<partition>/<kind>:…`). */
export const partitionOfKey = (key) => {
  const slash = key.indexOf("/");
  return slash < 0 ? "" : key.slice(0, slash);
};

/** One storage over `storageOf(partition)`'s stores. */
export function partitionedStorage(storageOf) {
  return {
    read(keys) {
      const byPartition = new Map();
      for (const key of keys) {
        const partition = partitionOfKey(key);
        const group = byPartition.get(partition);
        if (group) group.push(key);
        else byPartition.set(partition, [key]);
      }
      // The common case, one partition: its store's answer as it is (no extra turn when it is synchronous).
      if (byPartition.size === 1) return storageOf(partitionOfKey(keys[0])).read(keys);
      return Promise.all([...byPartition].map(([partition, group]) => storageOf(partition).read(group))).then((parts) => {
        const found = new Map();
        for (const part of parts) for (const [key, entry] of part) found.set(key, entry);
        return found;
      });
    },
    apply(transaction) {
      const partition = partitionOfKey(transaction.puts[0]?.key ?? "");
      if (transaction.puts.some((put) => partitionOfKey(put.key) !== partition)) {
        // A breach of the core's contract, not a conflict: no store could apply it atomically.
        throw new Error(`edgegrant: a transaction crosses partitions (${transaction.puts.map((put) => partitionOfKey(put.key)).join(", ")})`);
      }
      return storageOf(partition).apply(transaction);
    },
  };
}
