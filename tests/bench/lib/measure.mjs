// Side-by-side measurement of benchmark subjects, shared by the Node and the workerd benchmarks.
// Plain JavaScript with the clock passed in, so the same loop runs in Node and inside workerd.
//
// A subject is `{ name, flows: { [flow]: async () => void } }`; each flow function performs one
// whole operation and throws unless it saw its success response, so a broken flow can never pass
// for a fast one. A subject may have only some of the flows (a floor that has only a bearer
// call); it is measured on those. Subjects run in alternating order, round by round, so drift of the
// machine (frequency, GC, a noisy neighbour) falls on every subject alike.

/**
 * Runs `rounds` rounds; in each round, for each flow, each subject runs `batch` operations.
 * The subject order alternates every round (A B, B A, …). `clock()` returns milliseconds.
 * With `perOp`, every operation is timed on its own (for latency percentiles); without it, only
 * each batch is (for clocks too coarse for one operation, as in workerd).
 * Returns `{ [flow]: { [subject]: { ops, ms, latencies } } }`, a subject only under its flows.
 */
export async function compare({ subjects, flows, rounds = 10, batch = 200, warmup = 50, clock, perOp = true }) {
  const results = {};
  for (const flow of flows) {
    results[flow] = {};
    for (const subject of subjects) {
      if (!subject.flows[flow]) continue;
      for (let i = 0; i < warmup; i++) await subject.flows[flow]();
      results[flow][subject.name] = { ops: 0, ms: 0, latencies: [] };
    }
  }
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? subjects : [...subjects].reverse();
    for (const flow of flows) {
      for (const subject of order) {
        const run = subject.flows[flow];
        if (!run) continue;
        const sample = results[flow][subject.name];
        const start = clock();
        if (perOp) {
          let before = start;
          for (let i = 0; i < batch; i++) {
            await run();
            const after = clock();
            sample.latencies.push(after - before);
            before = after;
          }
        } else {
          for (let i = 0; i < batch; i++) await run();
        }
        sample.ops += batch;
        sample.ms += clock() - start;
      }
    }
  }
  return results;
}

/** The q-quantile (0..1) of `values`, nearest rank. */
export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** ops/s and latency percentiles (µs) of one sample from `compare`. */
export function summarize({ ops, ms, latencies }) {
  const us = (q) => quantile(latencies, q) * 1000;
  return {
    ops,
    opsPerSecond: ops / (ms / 1000),
    p50: us(0.5),
    p90: us(0.9),
    p99: us(0.99),
  };
}
