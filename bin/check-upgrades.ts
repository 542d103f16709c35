/**
 * `npm run check:upgrades`: rehearses an upgrade of every dependency within its current major. It
 * copies the repository into a scratch folder, installs there the newest release of each direct
 * dependency that keeps its major (`npm install name@^<locked version>`: for 0.x, its minor), then
 * `npm update` for everything they depend on, and runs the type check, the unit tier and the e2e tier
 * there. The hooks into libraries' internals
 * (shared/runtime/internals) each have a unit test that fails when an upgrade takes away what they
 * need, so this is where such an upgrade shows first. The repository itself is never changed.
 *
 * It needs the npm registry, and takes minutes: it is not part of `.ci/run`. `--keep` leaves the scratch
 * folder in place. Exit code 1 when a step failed.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(__dirname, "..");
const keep = process.argv.includes("--keep");

/** Not copied: installed or built things, local data, history, run results. */
const SKIPPED = new Set(["node_modules", "dist", ".git", "data", "coverage", path.join("bench", "results")]);

type Lock = { packages: Record<string, { version?: string }> };

const readJson = <T>(file: string): T => JSON.parse(fs.readFileSync(file, "utf8")) as T;

/** The version the lock file installs at each place of the tree ("node_modules/a/node_modules/b"). */
function lockedTree(dir: string): Map<string, string> {
  const lock = readJson<Lock>(path.join(dir, "package-lock.json"));
  return new Map(
    Object.entries(lock.packages)
      .filter(([place]) => place !== "")
      .map(([place, p]) => [place, p.version ?? "?"]),
  );
}

function step(title: string, dir: string, command: string, args: string[]): boolean {
  process.stdout.write(`\n== ${title}: ${command} ${args.join(" ")}\n`);
  const res = spawnSync(command, args, { cwd: dir, stdio: "inherit", env: { ...process.env, CI: "true" } });
  const ok = res.status === 0;
  process.stdout.write(`== ${title}: ${ok ? "passed" : `FAILED (exit ${res.status ?? res.signal})`}\n`);
  return ok;
}

function main(): number {
  const pkg = readJson<{ dependencies?: Record<string, string>; devDependencies?: Record<string, string> }>(
    path.join(root, "package.json"),
  );
  const names = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {})].sort();
  const before = lockedTree(root);
  const direct = (n: string) => `node_modules/${n}`;

  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rounds-upgrade-"));
  process.stdout.write(`Scratch copy: ${scratch}\n`);
  fs.cpSync(root, scratch, {
    recursive: true,
    filter: (src) => !SKIPPED.has(path.relative(root, src)),
  });

  const specs = names.map((n) => `${n}@^${before.get(direct(n))}`);
  const results: Array<[string, boolean]> = [];
  const installed = step("install the newest within each major", scratch, "npm", [
    "install",
    "--no-audit",
    "--no-fund",
    ...specs,
  ]);
  results.push(["install", installed]);
  const updated =
    installed && step("update what they depend on", scratch, "npm", ["update", "--no-audit", "--no-fund"]);
  if (installed) results.push(["update", updated]);
  if (updated) {
    const after = lockedTree(scratch);
    const moved = names.filter((n) => after.get(direct(n)) !== before.get(direct(n)));
    process.stdout.write(`\n== direct dependencies upgraded: ${moved.length} of ${names.length}\n`);
    for (const n of moved)
      process.stdout.write(`${n}: ${before.get(direct(n))} -> ${after.get(direct(n))}\n`);
    // By name: npm may move a package to another place of the tree without changing its version.
    const versions = (tree: Map<string, string>) => {
      const byName = new Map<string, Set<string>>();
      for (const [place, version] of tree) {
        const name = place.slice(place.lastIndexOf("node_modules/") + "node_modules/".length);
        if (!names.includes(name)) byName.set(name, (byName.get(name) ?? new Set()).add(version));
      }
      return byName;
    };
    const was = versions(before);
    const now = versions(after);
    const show = (v?: Set<string>) => (v ? [...v].sort().join(", ") : "(none)");
    const changed = [...new Set([...was.keys(), ...now.keys()])]
      .sort()
      .filter((n) => show(was.get(n)) !== show(now.get(n)));
    process.stdout.write(`== packages they depend on whose versions changed: ${changed.length}\n`);
    for (const n of changed) process.stdout.write(`${n}: ${show(was.get(n))} -> ${show(now.get(n))}\n`);
    results.push(["typecheck", step("typecheck", scratch, "npm", ["run", "-s", "typecheck"])]);
    results.push(["unit", step("unit tier", scratch, "npx", ["jest", "--selectProjects", "unit"])]);
    results.push(["e2e", step("e2e tier", scratch, "npx", ["jest", "--selectProjects", "e2e"])]);
  }

  process.stdout.write(
    `\n== summary\n${results.map(([s, ok]) => `${s}: ${ok ? "passed" : "FAILED"}`).join("\n")}\n`,
  );
  const failed = results.some(([, ok]) => !ok);
  if (keep || failed) process.stdout.write(`Scratch copy kept: ${scratch}\n`);
  else fs.rmSync(scratch, { recursive: true, force: true });
  return failed ? 1 : 0;
}

process.exitCode = main();
