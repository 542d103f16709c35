/** The supply-chain check's rules (bin/audit.ts, shared/ops/audit.ts), on reports shaped as npm audit's. */
import { auditFindings, checkAllowlist } from "../../../../shared/ops/audit";

const report = {
  auditReportVersion: 2,
  vulnerabilities: {
    "lib-a": {
      name: "lib-a",
      severity: "high",
      via: [
        {
          source: 1100001,
          name: "lib-a",
          title: "Prototype pollution",
          url: "https://github.com/advisories/GHSA-aaaa-bbbb-cccc",
          severity: "high",
        },
      ],
    },
    "lib-b": { name: "lib-b", severity: "high", via: ["lib-a"] },
    "lib-c": {
      name: "lib-c",
      severity: "moderate",
      via: [
        {
          source: 3,
          name: "lib-c",
          title: "minor",
          url: "https://github.com/advisories/GHSA-dddd-eeee-ffff",
          severity: "moderate",
        },
      ],
    },
  },
  metadata: {},
};

describe("the audit check", () => {
  it("when a report has a high advisory, then it is found once by its GHSA id; moderate ones and packages listed only through it are not", () => {
    expect(auditFindings(report)).toEqual([
      {
        id: "GHSA-aaaa-bbbb-cccc",
        package: "lib-a",
        severity: "high",
        title: "Prototype pollution",
        url: "https://github.com/advisories/GHSA-aaaa-bbbb-cccc",
      },
    ]);
  });

  it("when npm audit answered with an error (no registry), then there is no report to pass", () => {
    expect(auditFindings({ message: "405 Method Not Allowed", error: { summary: "" } })).toBeNull();
    expect(auditFindings(null)).toBeNull();
  });

  it("when the allowlist accepts the advisory with a reason and a date, then nothing is refused; without them, or for another package, it is refused", () => {
    const findings = auditFindings(report)!;
    const entry = {
      id: "GHSA-aaaa-bbbb-cccc",
      package: "lib-a",
      reason: "not reachable: we never call merge()",
      date: "2026-12-01",
    };
    expect(checkAllowlist(findings, [entry])).toEqual({ refused: [], accepted: [entry], stale: [] });
    expect(checkAllowlist(findings, []).refused).toEqual(findings);
    expect(checkAllowlist(findings, [{ ...entry, reason: "" }]).refused).toEqual(findings);
    expect(checkAllowlist(findings, [{ ...entry, date: "soon" }]).refused).toEqual(findings);
    expect(checkAllowlist(findings, [{ ...entry, package: "lib-b" }]).refused).toEqual(findings);
  });

  it("when an allowlist entry matches no advisory any more, then it is reported as stale", () => {
    const entry = {
      id: "GHSA-zzzz-zzzz-zzzz",
      package: "lib-z",
      reason: "fixed upstream since",
      date: "2026-01-01",
    };
    expect(checkAllowlist([], [entry])).toEqual({ refused: [], accepted: [], stale: [entry] });
  });
});
