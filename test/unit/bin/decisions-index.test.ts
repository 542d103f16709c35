import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { DECISIONS_DIR, parseDecision, readDecisions, renderIndex } from "../../../bin/decisions-index";

const ROOT = path.resolve(DECISIONS_DIR, "..", "..");

/**
 * The decisions a text cites, each as the number and, when the citation names it, the file name: a link or
 * path (`decisions/0045`, `[0045](0045-gateway-microcache.md)`), a file name, or the words "decision 0045"
 * / "decisions 0063, 0143" (also across a comment's line break). A revision's "consolidated from 0066"
 * names a deleted decision's number on purpose and is none of these forms.
 */
function citations(text: string): { number: string; file?: string }[] {
  const found: { number: string; file?: string }[] = [];
  for (const m of text.matchAll(/(?<![\w-])(\d{4})(-[a-z0-9][a-z0-9-]*\.md)?\b/g)) {
    const before = text.slice(Math.max(0, m.index - 40), m.index);
    const cited =
      m[2] !== undefined ||
      /decisions\/$/.test(before) ||
      (/\[$/.test(before) && text.startsWith("](", m.index + 4)) ||
      /\bdecisions?[\s*]+(?:\d{4}(?:,[\s*]*|[\s*]+(?:and|to)[\s*]+))*$/i.test(before);
    if (cited) found.push(m[2] === undefined ? { number: m[1] } : { number: m[1], file: `${m[1]}${m[2]}` });
  }
  return found;
}

describe("the decisions and their generated index", () => {
  const decisions = readDecisions();
  const text = (file: string) => fs.readFileSync(path.join(DECISIONS_DIR, file), "utf8");

  it("when the index is rendered from the files, then it is the committed README byte for byte", () => {
    // On a mismatch: npm run docs:decisions
    expect(text("README.md")).toBe(renderIndex(decisions));
  });

  it.each(decisions.map((d) => [d.file, d]))("when %s is read, then it is at most 8 KB", (_file, d) => {
    expect(d.bytes).toBeLessThanOrEqual(8 * 1024);
  });

  it("when a decision is read, then it has Context, Decision and Consequences, and revisions only at its end", () => {
    for (const d of decisions) {
      const headings = text(d.file)
        .split("\n")
        .filter((l) => l.startsWith("## "));
      const expected = ["## Context", "## Decision", "## Consequences"];
      if (headings.includes("## Revisions")) expected.push("## Revisions");
      expect([d.file, headings]).toEqual([d.file, expected]);
      const revisions = text(d.file).split("## Revisions")[1];
      if (revisions === undefined) continue;
      for (const line of revisions.split("\n").filter((l) => l.startsWith("- "))) {
        expect([d.file, line]).toEqual([d.file, expect.stringMatching(/^- \d{4}-\d{2}-\d{2}: /)]);
      }
    }
  });

  it("when code, tests, deploy files or documents cite a decision, then it is a decision in force", () => {
    const inForce = new Map(decisions.map((d) => [d.number, d.file]));
    const tracked = execFileSync("git", ["ls-files", "-co", "--exclude-standard"], {
      cwd: ROOT,
      encoding: "utf8",
    })
      .split("\n")
      .filter(
        (f) => f && f !== "package-lock.json" && !f.endsWith(".svg") && fs.existsSync(path.join(ROOT, f)),
      )
      // This test's and the generator's own examples are not citations.
      .filter((f) => !["test/unit/bin/decisions-index.test.ts", "bin/decisions-index.ts"].includes(f));
    const unknown = tracked.flatMap((f) =>
      citations(fs.readFileSync(path.join(ROOT, f), "utf8"))
        .filter((c) => !inForce.has(c.number) || (c.file !== undefined && inForce.get(c.number) !== c.file))
        .map((c) => `${f}: ${c.file ?? c.number}`),
    );
    expect(unknown).toEqual([]);
  });

  it("when a text cites decisions in its several forms, then each citation is found and a bare number is not", () => {
    const cites = citations(
      "see docs/decisions/0045, [0063](0063-tracing.md), 0073-slow-clients.md, decisions 0060, 0132 and\n" +
        " * 0143, Decision 0037; consolidated from 0066, 0067; the phone +7******0002; 2026-12-07",
    );
    expect(cites).toEqual([
      { number: "0045" },
      { number: "0063" },
      { number: "0063", file: "0063-tracing.md" },
      { number: "0073", file: "0073-slow-clients.md" },
      { number: "0060" },
      { number: "0132" },
      { number: "0143" },
      { number: "0037" },
    ]);
  });

  it("when a file's heading, date, status or kind is malformed, then parsing names the file and the field", () => {
    const good = "# 0001. T\n\n- Date: 2026-01-01\n- Status: accepted\n- Kind: engineering\n";
    expect(parseDecision("0001-t.md", good)).toMatchObject({ number: "0001", kind: "engineering" });
    expect(() => parseDecision("0002-t.md", good)).toThrow("0002-t.md: heading number 0001");
    expect(() => parseDecision("0001-t.md", good.replace("2026-01-01", "Jan 1"))).toThrow("date 'Jan 1'");
    expect(() => parseDecision("0001-t.md", good.replace("accepted", "maybe"))).toThrow("status 'maybe'");
    expect(() => parseDecision("0001-t.md", good.replace("engineering", "idea"))).toThrow("kind 'idea'");
  });

  it("when a file says it was merged or superseded, then parsing refuses it: such a decision is deleted", () => {
    const stub =
      "# 0001. T\n\n- Date: 2026-01-01\n- Status: merged into [0003](0003-x.md)\n- Kind: engineering\n";
    expect(() => parseDecision("0001-t.md", stub)).toThrow(
      "0001-t.md: status 'merged into [0003](0003-x.md)'",
    );
  });
});
