/**
 * test/unit mirrors the source tree, as Moleculer's own tests mirror its src/: test/unit/<path>.test.ts
 * tests <path> (a .ts or .js file, another file of that name such as CHANGELOG.md, or a folder), and
 * test/unit/<path>.<aspect>.test.ts one more part of the same source when one file would be too long
 * (services/gateway/request-body.list.test.ts). The test tooling is mirrored too:
 * test/unit/test/support/mongo.test.ts tests test/support/mongo.ts, and this file tests test/unit/.
 * Helpers shared by unit tests live in test/unit/support/.
 */
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "../../..");
const unit = path.join(root, "test/unit");

/** Unit tests with no source at a mirrored path, each with its reason. Keep this list short. */
const EXCEPTIONS: Record<string, string> = {
  // Checks .github/workflows/ci.yml against the code; a mirror in a dot folder would read as hidden.
  "ci-workflow.test.ts": ".github/workflows/ci.yml",
};

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : [path.relative(unit, full).split(path.sep).join("/")];
  });
}

/** The source a unit test's path names, or null: `a/b.test.ts` → `a/b.<ext>` or `a/b/`; an aspect is dropped. */
function mirroredSource(testPath: string, exists: (p: string) => boolean): string | null {
  const dir = path.posix.dirname(testPath);
  let name = path.posix.basename(testPath, ".test.ts");
  for (;;) {
    const base = dir === "." ? name : `${dir}/${name}`;
    if (exists(base)) return base;
    const file = [".ts", ".js", ".md", ".json", ".yml"].map((ext) => base + ext).find(exists);
    if (file) return file;
    const dot = name.lastIndexOf(".");
    if (dot <= 0) return null;
    name = name.slice(0, dot);
  }
}

const onDisk = (p: string): boolean => fs.existsSync(path.join(root, p));

describe("the unit tests' layout", () => {
  const files = filesUnder(unit);
  const tests = files.filter((f) => f.endsWith(".test.ts"));

  it("when the unit tests are listed, then there are many, in folders", () => {
    expect(tests.length).toBeGreaterThan(90);
    expect(tests.filter((t) => t.includes("/")).length).toBeGreaterThan(90);
  });

  it("when a unit test is not an exception, then a source exists at its mirrored path", () => {
    const orphans = tests.filter((t) => !(t in EXCEPTIONS) && mirroredSource(t, onDisk) === null);
    expect(orphans).toEqual([]);
  });

  it("when a file in test/unit is not a test, then it is a helper in test/unit/support/", () => {
    expect(files.filter((f) => !f.endsWith(".test.ts") && !f.startsWith("support/"))).toEqual([]);
  });

  it("when an exception is listed, then its test exists and what it checks exists", () => {
    for (const [test, subject] of Object.entries(EXCEPTIONS)) {
      expect(tests).toContain(test);
      expect(onDisk(subject)).toBe(true);
    }
  });
});

describe("the mirrored source of a unit test's path", () => {
  const present = new Set([
    "services/gateway/request-body.ts",
    "shared/config",
    "bench/results",
    "jest.config.js",
  ]);
  const exists = (p: string) => present.has(p);

  it("when the test names a source, then that source is found", () => {
    expect(mirroredSource("services/gateway/request-body.test.ts", exists)).toBe(
      "services/gateway/request-body.ts",
    );
    expect(mirroredSource("jest.config.test.ts", exists)).toBe("jest.config.js");
    expect(mirroredSource("bench/results.test.ts", exists)).toBe("bench/results");
  });

  it("when the test names an aspect of a source, then the source is found", () => {
    expect(mirroredSource("services/gateway/request-body.list.test.ts", exists)).toBe(
      "services/gateway/request-body.ts",
    );
  });

  it("when no source is at the mirrored path, then none is found", () => {
    expect(mirroredSource("request-body.test.ts", exists)).toBeNull();
    expect(mirroredSource("services/gateway/list-body.test.ts", exists)).toBeNull();
    expect(mirroredSource("shared/config-table.test.ts", exists)).toBeNull();
  });
});
