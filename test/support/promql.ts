/**
 * The metric names a PromQL expression reads, and the expressions of the dashboard and the alerting
 * rules in deploy/observability/. A small tokenizer, not a full parser: strings, comments, label
 * matchers (`{…}`: label names and values), ranges and subqueries (`[…]`: durations, Grafana's
 * `$__rate_interval`) and Grafana variables are dropped; an identifier followed by `(` is a function or
 * an aggregation, and so is an aggregation followed by `by` or `without`; the parenthesised list after `by`, `without`, `on`, `ignoring`, `group_left` and
 * `group_right` holds label names; keywords and number literals are not names. What is left is a metric
 * name: an identifier followed by `{`, `[`, an operator, `)`, `,` or the end.
 */
import fs from "node:fs";
import path from "node:path";
import { parse } from "yaml";

const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"]);
const LABEL_LISTS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);
/** Aggregations, which may take their `by (…)` or `without (…)` before their parentheses. */
const AGGREGATIONS = new Set([
  "sum",
  "min",
  "max",
  "avg",
  "group",
  "stddev",
  "stdvar",
  "count",
  "count_values",
  "bottomk",
  "topk",
  "quantile",
  "limitk",
  "limit_ratio",
]);
const IDENT = /[A-Za-z_:][A-Za-z0-9_:]*/y;

/** `expr` with strings, comments, `{…}` and `[…]` contents and Grafana variables blanked out. */
function strip(expr: string): string {
  let out = "";
  let depthBrace = 0;
  let depthBracket = 0;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if (c === '"' || c === "'" || c === "`") {
      // A string (label value, label_replace's arguments): skipped with its escapes.
      let j = i + 1;
      while (j < expr.length && expr[j] !== c) j += expr[j] === "\\" && c !== "`" ? 2 : 1;
      i = j;
      out += " ";
      continue;
    }
    if (c === "#" && depthBrace === 0 && depthBracket === 0) {
      while (i < expr.length && expr[i] !== "\n") i++;
      out += " ";
      continue;
    }
    if (c === "{") {
      if (depthBrace++ === 0) out += "{";
      continue;
    }
    if (c === "}") {
      if (--depthBrace === 0) out += "}";
      continue;
    }
    if (c === "[") {
      if (depthBracket++ === 0) out += "[";
      continue;
    }
    if (c === "]") {
      if (--depthBracket === 0) out += "]";
      continue;
    }
    if (depthBrace > 0 || depthBracket > 0) continue;
    if (c === "$") {
      // Grafana variables: $name, ${name}, ${name:format}.
      let j = i + 1;
      if (expr[j] === "{") while (j < expr.length && expr[j] !== "}") j++;
      else while (j < expr.length && /[A-Za-z0-9_]/.test(expr[j])) j++;
      i = j - (expr[j] === "}" ? 0 : 1);
      out += " ";
      continue;
    }
    out += c;
  }
  if (depthBrace !== 0 || depthBracket !== 0) throw new Error(`unbalanced brackets in: ${expr}`);
  return out;
}

/** The metric names `expr` reads. */
export function metricNames(expr: string): string[] {
  const s = strip(expr);
  const names = new Set<string>();
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (/[0-9.]/.test(c)) {
      // A number or a duration (1e3, 0x1f, 5m, 1h30m): one token, never a name.
      let j = i + 1;
      while (j < s.length && /[A-Za-z0-9_.]/.test(s[j])) j++;
      i = j;
      continue;
    }
    IDENT.lastIndex = i;
    const m = IDENT.exec(s);
    if (!m) {
      i++;
      continue;
    }
    const word = m[0];
    let j = i + word.length;
    while (j < s.length && /\s/.test(s[j])) j++;
    const next = s[j] ?? "";
    const following = /^[A-Za-z_]+/.exec(s.slice(j))?.[0].toLowerCase();
    if (AGGREGATIONS.has(word.toLowerCase()) && (following === "by" || following === "without")) {
      // `sum by (route) (…)`: the aggregation; its label list is skipped next.
      i += word.length;
      continue;
    }
    if (LABEL_LISTS.has(word.toLowerCase()) && next === "(") {
      // A list of label names: skip to its closing parenthesis.
      const close = s.indexOf(")", j);
      if (close < 0) throw new Error(`unclosed label list in: ${expr}`);
      i = close + 1;
      continue;
    }
    if (next !== "(" && !KEYWORDS.has(word.toLowerCase()) && !LABEL_LISTS.has(word.toLowerCase())) {
      names.add(word);
    }
    i += word.length;
  }
  return [...names];
}

const root = path.resolve(__dirname, "../..");
export const OBSERVABILITY_DIR = path.join(root, "deploy", "observability");

export interface Expression {
  /** Where it is: the panel's title or the alert's name. */
  where: string;
  expr: string;
}

/** Every query of the Grafana dashboard (rows' panels included). */
export function dashboardExpressions(file = path.join(OBSERVABILITY_DIR, "dashboard.json")): Expression[] {
  const dashboard = JSON.parse(fs.readFileSync(file, "utf8")) as { panels: Panel[] };
  const out: Expression[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr) out.push({ where: `panel "${p.title}"`, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  return out;
}

interface Panel {
  title: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every alerting (and recording) rule's expression. */
export function ruleExpressions(file = path.join(OBSERVABILITY_DIR, "alerts.yml")): Expression[] {
  const rules = parse(fs.readFileSync(file, "utf8")) as {
    groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
  };
  return rules.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record} (${g.name})`, expr: String(r.expr) })),
  );
}

/** The names of the series a Prometheus text exposition holds (comments and types left out). */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split("\n")) {
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{|\s)/.exec(line);
    if (m) names.add(m[1]);
  }
  return names;
}
