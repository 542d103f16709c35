/**
 * bench/results/ keeps only the runs the documents cite (docs/performance.md, "Keeping a run"): a kept
 * run is committed with `git add -f`, everything else there is ignored. A tracked file there that nothing
 * cites by name any more is listed, to be removed with `git rm` (it stays in git history); a
 * bench/results/ path a document cites must be a kept file.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "../../..");
const RESULTS = "bench/results/";

const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
  .split("\0")
  .filter((f) => f && fs.existsSync(path.join(root, f)));
const kept = tracked.filter((f) => f.startsWith(RESULTS));
/** What can cite a run: tracked documents and code, outside bench/results/ and node_modules/. */
const citing = tracked.filter(
  (f) => /\.(md|ts|js)$/.test(f) && !f.startsWith(RESULTS) && !f.split("/").includes("node_modules"),
);
const read = (f: string) => fs.readFileSync(path.join(root, f), "utf8");

/** The kept runs whose file name a text names. */
const namedIn = (text: string) => kept.filter((f) => text.includes(path.posix.basename(f)));

/** Kept files cited by a document or code, and by a cited run in turn (a report naming another run). */
function citedRuns(): Set<string> {
  const cited = new Set(citing.flatMap((f) => namedIn(read(f))));
  const queue = [...cited];
  while (queue.length > 0) {
    for (const f of namedIn(read(queue.pop()!))) {
      if (!cited.has(f)) {
        cited.add(f);
        queue.push(f);
      }
    }
  }
  return cited;
}

/** bench/results/ paths a text names, leaving out patterns such as `bench/results/bench-<time>.md`. */
function resultPathsIn(text: string): string[] {
  return [...text.matchAll(/bench\/results\/[^\s`'"()[\]|,;:]*/g)]
    .map((m) => m[0].replace(/\.+$/, ""))
    .filter((p) => p.length > RESULTS.length && !/[<>*{}]/.test(p));
}

describe("the kept bench runs", () => {
  it("when bench/results is read, then some runs are kept", () => {
    expect(kept.length).toBeGreaterThan(0);
  });

  it("when a run is kept in bench/results, then a document or code cites it by name (else `git rm` it)", () => {
    const cited = citedRuns();
    const uncited = kept.filter((f) => !cited.has(f));
    if (uncited.length > 0) {
      throw new Error(
        `${uncited.length} kept bench runs are cited nowhere; remove them with\n` +
          `git rm ${uncited.join(" \\\n  ")}`,
      );
    }
  });

  it("when a tracked document names a bench/results path, then that run is kept", () => {
    const missing = tracked
      .filter((f) => /\.(md|ts|js)$/.test(f) && !f.split("/").includes("node_modules"))
      .flatMap((f) => resultPathsIn(read(f)).map((p) => `${f}: ${p}`))
      .filter((cite) => !kept.includes(cite.slice(cite.indexOf(": ") + 2)));
    expect(missing).toEqual([]);
  });
});

describe("the bench/results paths of a text", () => {
  it("when a text names runs and patterns, then only the runs are paths", () => {
    const text =
      "see `bench/results/bench-2026-11-28T03-14-12-630Z.md`. Runs land in bench/results/bench-<time>.md, " +
      "bench/results/soak-*.md and (bench/results/ab-2026-11-24.md); `bench/results/` is ignored.";
    expect(resultPathsIn(text)).toEqual([
      "bench/results/bench-2026-11-28T03-14-12-630Z.md",
      "bench/results/ab-2026-11-24.md",
    ]);
  });
});
