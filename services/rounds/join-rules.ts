/**
 * What a join's `attributes` must be: ids of choices of the round item's attribute groups, at most one
 * per group, and one for every group with `need_to_choose`. Returns the ids or the 422 issues (loc
 * relative to the body; the gateway prefixes "body").
 */
import type { GroupedAttributeValue } from "../../shared/contracts/round";
import type { ValidationIssue } from "../../shared/errors";

export type AttributesCheck = { ok: true; ids: number[] } | { ok: false; issues: ValidationIssue[] };

export function checkAttributes(groups: GroupedAttributeValue[], attributes: unknown[]): AttributesCheck {
  const groupOfChoice = new Map<number, GroupedAttributeValue>();
  for (const g of groups) for (const c of g.choices) groupOfChoice.set(c.id, g);

  const issues: ValidationIssue[] = [];
  const chosen = new Map<number, number>(); // group id → choice id
  attributes.forEach((value, i) => {
    const loc = ["attributes", i];
    if (typeof value !== "number" || !Number.isInteger(value)) {
      issues.push({ type: "int_type", loc, msg: "Input should be a valid integer", input: value });
      return;
    }
    const group = groupOfChoice.get(value);
    if (!group) {
      issues.push({
        type: "value_error",
        loc,
        msg: `Value error, ${value} is not a choice of this round's item`,
        input: value,
      });
      return;
    }
    const previous = chosen.get(group.id);
    if (previous !== undefined && previous !== value) {
      issues.push({
        type: "value_error",
        loc,
        msg: `Value error, only one choice of '${group.name}' may be given`,
        input: value,
      });
      return;
    }
    chosen.set(group.id, value);
  });

  for (const g of groups) {
    if (g.need_to_choose && !chosen.has(g.id) && g.choices.length > 0) {
      issues.push({
        type: "missing",
        loc: ["attributes"],
        msg: `Field required: choose one of '${g.name}' (${g.choices.map((c) => c.id).join(", ")})`,
        input: attributes,
      });
    }
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, ids: [...new Set(chosen.values())] };
}
