/**
 * jest.config.js derives the cluster tier from test/e2e/: every suite runs there too, unless it is about
 * one process's own machinery and says so in a line of its own, `// Tier: one process only (why).`
 */
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "../..");
const jestConfig = require("../../jest.config.js") as {
  projects: Array<{ displayName: string; testMatch: string[]; setupFiles?: string[] }>;
};

const e2e = path.join(root, "test/e2e");
const suites = fs
  .readdirSync(e2e)
  .filter((f) => f.endsWith(".test.ts"))
  .sort();
const text = (suite: string) => fs.readFileSync(path.join(e2e, suite), "utf8");
const MARKER = /^\/\/ Tier: one process only \((.+)\)\.?$/m;
const cluster = jestConfig.projects.find((p) => p.displayName === "cluster")!;
const inCluster = new Set(cluster.testMatch.map((glob) => glob.replace("<rootDir>/test/e2e/", "")));

describe("the cluster tier's suites", () => {
  it("when jest.config.js is read, then the cluster tier runs e2e suites under the cluster topology", () => {
    expect(inCluster.size).toBeGreaterThan(10);
    expect(
      cluster.testMatch.every((g) => g.startsWith("<rootDir>/test/e2e/") && g.endsWith(".test.ts")),
    ).toBe(true);
    expect(cluster.setupFiles).toEqual(["<rootDir>/test/support/cluster-topology.js"]);
  });

  it("when an e2e suite is not in the cluster tier, then it says it is about one process, and why", () => {
    const neither = suites.filter((s) => !inCluster.has(s) && !MARKER.test(text(s)));
    expect(neither).toEqual([]);
  });

  it("when an e2e suite says it is about one process, then it is not in the cluster tier", () => {
    expect(suites.filter((s) => inCluster.has(s) && MARKER.test(text(s)))).toEqual([]);
  });

  it("when the cluster tier names a suite, then the suite exists", () => {
    expect([...inCluster].filter((s) => !suites.includes(s))).toEqual([]);
  });

  it("when a suite has a tier line, then it is the marker's exact form", () => {
    const malformed = suites.filter((s) =>
      text(s)
        .split("\n")
        .some((line) => /^\s*\/\/\s*tier\b/i.test(line) && !MARKER.test(line)),
    );
    expect(malformed).toEqual([]);
  });
});
