// Runs before `npm pack` and `npm publish`: the licences and the changelog live at the
// repository's root, one copy each; the package takes them from there, so the tarball always
// ships the files the repository holds.
import { copyFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
for (const file of ["LICENSE-MIT", "LICENSE-APACHE", "CHANGELOG.md"]) copyFileSync(join(pkg, "..", file), join(pkg, file));
