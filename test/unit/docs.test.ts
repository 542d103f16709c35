/**
 * The documents stay a handbook a newcomer reads in an afternoon: size budgets, and lines that read as
 * text. Documents are the tracked Markdown files outside bench/results (those are runs, not prose).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "../..");
const KB = 1024;

function documents(): string[] {
  const tracked = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "*.md"], {
    cwd: root,
    encoding: "utf8",
  });
  return [...new Set(tracked.split("\n"))]
    .filter((f) => f && !f.startsWith("bench/results/") && fs.existsSync(path.join(root, f)))
    .sort();
}

const bytes = (file: string) => fs.statSync(path.join(root, file)).size;
const total = (files: string[]) => files.reduce((sum, f) => sum + bytes(f), 0);

describe("documents", () => {
  const docs = documents();

  it("when the repository's documents are listed, then the handbook's are among them", () => {
    expect(docs).toEqual(expect.arrayContaining(["README.md", "docs/architecture.md", "docs/operations.md"]));
  });

  it("when every document is added up, then they come to at most 250 KB", () => {
    expect(total(docs)).toBeLessThanOrEqual(250 * KB);
  });

  it("when the decisions are added up, index included, then they come to at most 160 KB", () => {
    expect(total(docs.filter((f) => f.startsWith("docs/decisions/")))).toBeLessThanOrEqual(160 * KB);
  });

  it.each([
    ["docs/operations.md", 40],
    ["docs/architecture.md", 30],
  ])("when %s is read, then it is at most %d KB", (file, limit) => {
    expect(bytes(file)).toBeLessThanOrEqual(limit * KB);
  });

  it("when any document is read, then no line is over 400 characters", () => {
    const long = docs.flatMap((f) =>
      fs
        .readFileSync(path.join(root, f), "utf8")
        .split("\n")
        .map((line, i) => ({ at: `${f}:${i + 1}`, length: [...line].length }))
        .filter((l) => l.length > 400),
    );
    expect(long).toEqual([]);
  });
});
