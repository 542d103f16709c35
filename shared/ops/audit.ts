/**
 * Reading `npm audit --json` (report version 2) and the reviewed allowlist of bin/audit.ts: plain
 * functions, so the rules are tested without a registry (test/unit/shared/ops/audit.test.ts).
 */

/** One advisory against one package, high or critical. */
export interface Finding {
  /** GHSA id (from the advisory's URL), else npm's numeric source id. */
  id: string;
  package: string;
  severity: string;
  title: string;
  url: string;
}

/** An accepted advisory: its id, the package, why it is accepted, and when that was decided (YYYY-MM-DD). */
export interface Allowed {
  id: string;
  package: string;
  reason: string;
  date: string;
}

const SEVERE = new Set(["high", "critical"]);

interface Via {
  source?: number;
  name?: string;
  title?: string;
  url?: string;
  severity?: string;
}

/** The high and critical advisories of a report, or null when it is no audit report (an npm error). */
export function auditFindings(report: unknown): Finding[] | null {
  const r = report as { auditReportVersion?: number; vulnerabilities?: Record<string, { via?: unknown[] }> };
  if (!r || typeof r !== "object" || r.auditReportVersion !== 2 || typeof r.vulnerabilities !== "object") {
    return null;
  }
  const out = new Map<string, Finding>();
  for (const [pkg, v] of Object.entries(r.vulnerabilities ?? {})) {
    // A string in `via` names another vulnerable package: its own advisories are listed under it.
    for (const via of (v.via ?? []).filter((x): x is Via => typeof x === "object" && x !== null)) {
      if (!SEVERE.has(via.severity ?? "")) continue;
      const id = /GHSA(-[0-9a-z]{4}){3}/i.exec(via.url ?? "")?.[0] ?? String(via.source ?? "unknown");
      const name = via.name ?? pkg;
      out.set(`${id} ${name}`, {
        id,
        package: name,
        severity: via.severity ?? "",
        title: via.title ?? "",
        url: via.url ?? "",
      });
    }
  }
  return [...out.values()];
}

const wellFormed = (a: Allowed): boolean =>
  typeof a.id === "string" &&
  a.id !== "" &&
  typeof a.package === "string" &&
  a.package !== "" &&
  typeof a.reason === "string" &&
  a.reason.trim().length >= 10 &&
  /^\d{4}-\d{2}-\d{2}$/.test(a.date ?? "");

/**
 * Which findings the allowlist accepts (same id and package), which it does not, and which entries
 * match nothing. An entry without a reason or a date accepts nothing.
 */
export function checkAllowlist(
  findings: Finding[],
  allowlist: Allowed[],
): { refused: Finding[]; accepted: Allowed[]; stale: Allowed[] } {
  const valid = allowlist.filter(wellFormed);
  const matches = (f: Finding, a: Allowed) =>
    a.id.toLowerCase() === f.id.toLowerCase() && a.package === f.package;
  return {
    refused: findings.filter((f) => !valid.some((a) => matches(f, a))),
    accepted: valid.filter((a) => findings.some((f) => matches(f, a))),
    stale: allowlist.filter((a) => !wellFormed(a) || !findings.some((f) => matches(f, a))),
  };
}
