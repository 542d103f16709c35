import { missingHeapArgs, resultsMarkdown } from "../../../bench/lib";

describe("the bench's own heap", () => {
  const larger = ["--max-old-space-size=16384"];

  it("when it runs the scaling report at its own sizes, then it asks for a larger heap", () => {
    expect(missingHeapArgs(["--scaling"], [])).toEqual(larger);
  });

  it("when a million users are asked for, in any form, then it asks for a larger heap", () => {
    expect(missingHeapArgs(["--only", "8", "--users", "1000000"], [])).toEqual(larger);
    expect(missingHeapArgs(["--scaling", "--users=10000,1000000"], [])).toEqual(larger);
  });

  it("when the data set is smaller, then Node's default heap is kept", () => {
    expect(missingHeapArgs([], [])).toEqual([]);
    expect(missingHeapArgs(["--scaling", "--quick"], [])).toEqual([]);
    expect(missingHeapArgs(["--only", "8", "--users", "100000"], [])).toEqual([]);
    expect(missingHeapArgs(["--scaling", "--users", "10000,100000"], [])).toEqual([]);
  });

  it("when the heap is already set, then nothing is added (so the bench never restarts itself twice)", () => {
    expect(missingHeapArgs(["--scaling"], ["--max-old-space-size=8192"])).toEqual([]);
  });
});

describe("a report's Markdown", () => {
  const long = `${"word ".repeat(30)}end`;
  const md = resultsMarkdown("bench", `header ${"text ".repeat(40)}end`, [
    { title: "All cases", rows: [{ case: "1. short", notes: long }] },
  ]);
  const lines = md.split("\n");

  it("when a cell holds more than a short phrase, then the table keeps its first words and a number, and its whole text follows the table", () => {
    expect(lines).toContain(
      "| 1. short | word word word word word word word word word word word word … [1] |",
    );
    const item = md.slice(md.indexOf("\n1. word"));
    expect(item.replace(/\s+/g, " ").trim()).toBe(`1. ${long}`);
  });

  it("when a report is written, then no line of its prose or its notes is longer than 100 characters", () => {
    expect(lines.filter((l) => !l.startsWith("|") && l.length > 100)).toEqual([]);
    expect(lines.filter((l) => l.startsWith("header") || l.startsWith("text")).length).toBeGreaterThan(1);
  });
});
