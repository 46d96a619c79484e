// The corpus is well formed and covers the spec: every file follows schema.json, every
// statement of statements.json is pinned by a vector, every error statement shows a refused
// input next to its nearest succeeding neighbour, and README.md's coverage table is current.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadCorpus } from "./lib.mjs";
import { README, coverageTable, statements, withTable } from "./table.mjs";

const corpus = loadCorpus(); // throws, naming the file and the fault, when a file breaks the schema
const known = new Map(statements().map((s) => [s.id, s]));

/** Whether a step's expectation is a success: a 2xx/3xx that is no error redirect or error page. */
const expectsSuccess = ({ expect }) =>
  (expect.status === undefined || expect.status < 400) &&
  expect.page?.kind !== "error" &&
  expect.redirect?.query?.error === undefined &&
  expect.redirect?.fragment?.error === undefined &&
  (expect.status !== undefined || expect.outcome !== undefined || expect.redirect !== undefined || expect.page !== undefined);

test("every vector names only known statements, and its fails/succeeds among them", () => {
  for (const { vector } of corpus) {
    for (const id of vector.statements) assert.ok(known.has(id), `${vector.id} names unknown statement ${id}`);
    for (const [i, step] of vector.steps.entries()) {
      for (const id of [...(step.fails ?? []), ...(step.succeeds ?? [])]) {
        assert.ok(vector.statements.includes(id), `${vector.id} step ${i + 1} marks ${id}, which the vector does not list`);
        assert.equal(known.get(id)?.kind, "error", `${vector.id} step ${i + 1}: ${id} is not an error statement`);
      }
      if (step.succeeds) assert.ok(expectsSuccess(step), `${vector.id} step ${i + 1} is a neighbour (succeeds) but expects a failure`);
      if (step.fails) assert.ok(!expectsSuccess(step), `${vector.id} step ${i + 1} is marked fails but expects a success`);
    }
  }
});

test("every statement is pinned by a vector", () => {
  const missing = [...known.keys()].filter((id) => !corpus.some(({ vector }) => vector.statements.includes(id)));
  assert.deepEqual(missing, [], "statements without a vector");
});

test("every error statement has a failing input and its succeeding neighbour in one vector", () => {
  const lacking = [...known.values()]
    .filter((s) => s.kind === "error")
    .filter(({ id }) => !corpus.some(({ vector }) => vector.steps.some((s) => s.fails?.includes(id)) && vector.steps.some((s) => s.succeeds?.includes(id))))
    .map(({ id }) => id);
  assert.deepEqual(lacking, [], "error statements without a fails/succeeds pair");
});

test("README.md's coverage table is current (node conformance/runners/table.mjs)", () => {
  const readme = readFileSync(README, "utf8");
  assert.equal(readme, withTable(readme, coverageTable(corpus)));
});
