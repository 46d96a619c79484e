// The coverage table of conformance/README.md, generated from statements.json and the vectors'
// `statements`. `node conformance/runners/table.mjs` rewrites it; coverage.test.mjs checks it.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CONFORMANCE, loadCorpus } from "./lib.mjs";

export const README = join(CONFORMANCE, "README.md");
const BEGIN = "<!-- coverage:begin -->";
const END = "<!-- coverage:end -->";

export const statements = () => JSON.parse(readFileSync(join(CONFORMANCE, "statements.json"), "utf8")).statements;

/** The table's markdown: one row per statement, with the vectors that pin it. */
export function coverageTable(corpus = loadCorpus()) {
  const cell = (text) => text.replace(/\|/g, "\\|");
  const rows = statements().map(({ id, kind, source, text }) => {
    const vectors = corpus.filter(({ vector }) => vector.statements.includes(id)).map(({ vector }) => `\`${vector.id}\``);
    return `| \`${id}\` | ${kind} | ${cell(text)} <br>*${cell(source)}* | ${vectors.join(", ") || "**none**"} |`;
  });
  const count = corpus.length;
  return [
    `${statements().length} statements, ${count} vectors, ${corpus.reduce((n, { vector }) => n + vector.steps.length, 0)} steps.`,
    "",
    "| id | kind | statement | vectors |",
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}

/** The README with the table between its markers replaced. */
export function withTable(readme, table) {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) throw new Error("README.md lacks the coverage markers");
  return `${readme.slice(0, begin + BEGIN.length)}\n${table}\n${readme.slice(end)}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  writeFileSync(README, withTable(readFileSync(README, "utf8"), coverageTable()));
  console.log(`coverage table written to ${README}`);
}
