/**
 * CHANGELOG.md has one section per release, newest first, in Keep a Changelog's form (docs/releasing.md):
 * `## [Unreleased]` on top, then `## [x.y.z] - YYYY-MM-DD`; the newest release is package.json's version.
 */
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "../..");
const read = (f: string) => fs.readFileSync(path.join(root, f), "utf8");
const headings = read("CHANGELOG.md")
  .split("\n")
  .filter((line) => line.startsWith("## "));
const RELEASE = /^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})$/;
const releases = headings.slice(1).map((h) => RELEASE.exec(h));
const versionOf = (m: RegExpExecArray) => `${m[1]}.${m[2]}.${m[3]}`;

describe("CHANGELOG.md's releases", () => {
  it("when read, then `## [Unreleased]` comes first and at least one release follows", () => {
    expect(headings[0]).toBe("## [Unreleased]");
    expect(releases.length).toBeGreaterThan(0);
  });

  it("when a release heading is read, then it has a version and a real date", () => {
    expect(headings.slice(1).filter((_h, i) => releases[i] === null)).toEqual([]);
    for (const m of releases as RegExpExecArray[]) {
      expect({ heading: m[0], date: new Date(`${m[4]}T00:00:00Z`).toISOString().slice(0, 10) }).toEqual({
        heading: m[0],
        date: m[4],
      });
    }
  });

  it("when the releases are read, then they are newest first: versions fall and dates do not rise", () => {
    const list = releases as RegExpExecArray[];
    for (let i = 1; i < list.length; i++) {
      const [newer, older] = [list[i - 1], list[i]].map((m) => [Number(m[1]), Number(m[2]), Number(m[3])]);
      const falls = newer[0] - older[0] || newer[1] - older[1] || newer[2] - older[2];
      expect({ newer: list[i - 1][0], older: list[i][0], falls: falls > 0 }).toMatchObject({ falls: true });
      expect(list[i - 1][4] >= list[i][4]).toBe(true);
    }
  });

  it("when a release is made, then the newest is package.json's and package-lock.json's version", () => {
    const newest = versionOf(releases[0] as RegExpExecArray);
    const lock = JSON.parse(read("package-lock.json")) as { version: string; packages: Record<string, any> };
    expect({
      package: (JSON.parse(read("package.json")) as { version: string }).version,
      lock: lock.version,
      lockRoot: lock.packages[""].version,
    }).toEqual({ package: newest, lock: newest, lockRoot: newest });
  });
});
