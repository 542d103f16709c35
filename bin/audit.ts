/**
 * The supply-chain check of .ci/run: `npm audit --omit=dev --audit-level=high` over what production
 * installs, failing on any high or critical advisory that .ci/audit-allowlist.json does not accept.
 * Each accepted advisory there names its id (GHSA), the package, why it is accepted and when that was
 * decided; an entry no advisory matches any more is reported, to be removed.
 *
 * When npm audit cannot give an answer (the registry unreachable, or refusing its audit endpoint, as
 * the registry these CI machines reach does with 405) it says so on one line and goes on: no advisory
 * was checked, which is not a finding (docs/decisions/0134-broker-and-store-credentials.md).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { auditFindings, checkAllowlist, type Allowed } from "../shared/ops/audit";

const root = path.resolve(__dirname, "..");
const allowlistFile = path.join(root, ".ci", "audit-allowlist.json");

const run = spawnSync("npm", ["audit", "--omit=dev", "--audit-level=high", "--json"], {
  cwd: root,
  encoding: "utf8",
  maxBuffer: 64 * 2 ** 20,
});
let report: unknown = null;
try {
  report = JSON.parse(run.stdout);
} catch {
  report = null;
}
const findings = report ? auditFindings(report) : null;
if (!findings) {
  const why = ((report as { message?: string } | null)?.message ?? run.stderr ?? "").trim().split("\n")[0];
  const line = `npm audit gave no report (${why || `exit code ${run.status}`}): the dependencies are not audited`;
  console.warn(`audit: NOT CHECKED: ${line}`);
  process.exit(0);
}

const allowed = JSON.parse(fs.readFileSync(allowlistFile, "utf8")) as Allowed[];
const { refused, stale, accepted } = checkAllowlist(findings, allowed);
for (const a of accepted) console.log(`audit: accepted ${a.id} (${a.package}): ${a.reason} [${a.date}]`);
for (const a of stale)
  console.warn(`audit: allowlist entry ${a.id} (${a.package}) matches nothing: remove it`);
for (const f of refused) console.error(`audit: ${f.severity} ${f.id} in ${f.package}: ${f.title} ${f.url}`);
if (refused.length > 0) {
  console.error(
    `audit: FAILED: ${refused.length} high or critical advisory(ies) not in .ci/audit-allowlist.json`,
  );
  process.exit(1);
}
console.log(`audit: ok (${findings.length} high or critical advisory(ies), all accepted)`);
