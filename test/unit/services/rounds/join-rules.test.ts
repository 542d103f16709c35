import { checkAttributes } from "../../../../services/rounds/join-rules";
import type { GroupedAttributeValue } from "../../../../shared/contracts/round";
import { colorGroup, engravingGroup, sizeGroup } from "../../support/fixtures";

const groups = [colorGroup, engravingGroup];

describe("checkAttributes", () => {
  it("when one valid choice of each group is given, then they are accepted", () => {
    expect(checkAttributes(groups, [101, 201])).toEqual({ ok: true, ids: [101, 201] });
  });

  it("when only the mandatory group is chosen, then the optional group may be left out", () => {
    expect(checkAttributes(groups, [102])).toEqual({ ok: true, ids: [102] });
  });

  it("when the same choice is given twice, then it is accepted once", () => {
    expect(checkAttributes(groups, [101, 101])).toEqual({ ok: true, ids: [101] });
  });

  it("when the item has no attribute groups, then an empty list is accepted", () => {
    expect(checkAttributes([], [])).toEqual({ ok: true, ids: [] });
  });

  it("when a need_to_choose group has no choices at all, then it is not required", () => {
    const empty: GroupedAttributeValue = { ...sizeGroup, choices: [] };
    expect(checkAttributes([empty], [])).toEqual({ ok: true, ids: [] });
  });

  it("when an id is not a choice of the item, then it is a value_error at its index", () => {
    const result = checkAttributes(groups, [101, 999]);
    expect(result).toEqual({
      ok: false,
      issues: [
        {
          type: "value_error",
          loc: ["attributes", 1],
          msg: "Value error, 999 is not a choice of this round's item",
          input: 999,
        },
      ],
    });
  });

  it.each([["101"], [1.5], [null], [true], [{ id: 101 }]])(
    "when an entry is %p instead of an integer, then it is an int_type at its index",
    (value) => {
      const result = checkAttributes(groups, [101, value]);
      expect(result).toEqual({
        ok: false,
        issues: [
          { type: "int_type", loc: ["attributes", 1], msg: "Input should be a valid integer", input: value },
        ],
      });
    },
  );

  it("when two choices of one group are given, then the second is a value_error naming the group", () => {
    const result = checkAttributes(groups, [101, 102]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues).toHaveLength(1);
    expect(result.issues[0]).toMatchObject({ type: "value_error", loc: ["attributes", 1], input: 102 });
    expect(result.issues[0].msg).toContain("'Color'");
  });

  it("when a need_to_choose group has no choice, then it is missing at attributes and lists the choices", () => {
    const result = checkAttributes(groups, [201]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues).toEqual([
      {
        type: "missing",
        loc: ["attributes"],
        msg: "Field required: choose one of 'Color' (101, 102)",
        input: [201],
      },
    ]);
  });

  it("when several entries are wrong, then every problem is reported at once, in order", () => {
    const result = checkAttributes([colorGroup, engravingGroup, sizeGroup], ["x", 999, 201, 301, 302]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((i) => [i.type, i.loc])).toEqual([
      ["int_type", ["attributes", 0]],
      ["value_error", ["attributes", 1]],
      ["value_error", ["attributes", 4]],
      ["missing", ["attributes"]],
    ]);
    expect(result.issues[2].msg).toContain("'Size'");
    expect(result.issues[3].msg).toContain("'Color'");
  });
});
