import fs from "node:fs";
import path from "node:path";
import { DECISIONS_DIR, parseDecision, readDecisions, renderIndex } from "../../../bin/decisions-index";

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

  it("when a decision is merged or superseded, then its successor exists and is itself in force", () => {
    const byFile = new Map(decisions.map((d) => [d.file, d]));
    for (const d of decisions.filter((x) => x.successor)) {
      expect([d.file, byFile.get(d.successor as string)?.status]).toEqual([d.file, "accepted"]);
    }
  });

  it("when a decision is merged or superseded, then its file is a stub: the heading and the fields only", () => {
    for (const d of decisions.filter((x) => x.successor)) {
      const lines = text(d.file).trim().split("\n");
      expect([d.file, lines.length]).toEqual([d.file, 5]);
    }
  });

  it("when a decision is in force, then it has Context, Decision and Consequences, and revisions only at its end", () => {
    for (const d of decisions.filter((x) => x.status === "accepted")) {
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

  it("when a file's heading, date, status or kind is malformed, then parsing names the file and the field", () => {
    const good = "# 0001. T\n\n- Date: 2026-01-01\n- Status: accepted\n- Kind: engineering\n";
    expect(parseDecision("0001-t.md", good).status).toBe("accepted");
    expect(() => parseDecision("0002-t.md", good)).toThrow("0002-t.md: heading number 0001");
    expect(() => parseDecision("0001-t.md", good.replace("2026-01-01", "Jan 1"))).toThrow("date 'Jan 1'");
    expect(() => parseDecision("0001-t.md", good.replace("accepted", "maybe"))).toThrow("status 'maybe'");
    expect(() => parseDecision("0001-t.md", good.replace("engineering", "idea"))).toThrow("kind 'idea'");
    const merged = good.replace("accepted", "merged into [0003](0003-x.md)");
    expect(parseDecision("0001-t.md", merged)).toMatchObject({
      status: "merged into 0003",
      successor: "0003-x.md",
    });
  });
});
