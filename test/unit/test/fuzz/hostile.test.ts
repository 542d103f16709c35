/**
 * The fuzz tier's generators of free-form objects (test/fuzz/hostile.ts): they find every free-form
 * object of the API document the gateway serves, and name its entries with what a document store or a
 * JavaScript object treats specially, so a body with such names reaches the service behind.
 */
import fc from "fast-check";
import { openApi } from "../../../support/contract";
import {
  freeFormBody,
  freeFormObjectsOf,
  freeFormPaths,
  operationsOf,
  renderBody,
  saneValue,
} from "../../../fuzz/hostile";

const MUST_APPEAR = ["a.b", ".", "$", "$x", "__proto__", "constructor", "prototype"];

/** The own names of the object at `path` of a parsed body (null when it is not an object there). */
function namesAt(body: unknown, path: (string | number)[]): string[] | null {
  let v: unknown = body;
  for (const seg of path) {
    if (v === null || typeof v !== "object") return null;
    v = Object.prototype.hasOwnProperty.call(v, seg) ? (v as Record<string, unknown>)[seg] : undefined;
  }
  return v !== null && typeof v === "object" && !Array.isArray(v) ? Object.keys(v) : null;
}

describe("free-form objects of the API document", () => {
  it("when the document is searched, then the multicast's keys and the join's attribute items are found", () => {
    const found = Object.fromEntries(freeFormObjectsOf(openApi).map((x) => [x.operation, x.paths]));
    expect(found["POST /notifications/send-multicast"]).toEqual([["keys"]]);
    expect(found["POST /rounds/{round_id}/join"]).toEqual([["attributes", 0]]);
  });

  it("when a schema has fixed properties only, then it holds no free-form object", () => {
    const fixed = { type: "object", properties: { a: { type: "string" } }, additionalProperties: false };
    expect(freeFormPaths(fixed)).toEqual([]);
    expect(freeFormPaths({ type: "object", additionalProperties: { type: "string" } })).toEqual([[]]);
    expect(freeFormPaths({ type: "array", items: {} })).toEqual([[0]]);
  });

  it.each(freeFormObjectsOf(openApi).map((x) => [x.operation, x.paths] as const))(
    "when bodies for %s are generated, then its free-form objects are named with . $ __proto__ constructor prototype",
    (operation, paths) => {
      const o = operationsOf(openApi).find((x) => `${x.method} ${x.path}` === operation)!;
      const seen = new Map<string, Set<string>>(paths.map((p) => [JSON.stringify(p), new Set<string>()]));
      for (const plan of fc.sample(freeFormBody(o), { numRuns: 500, seed: 7 })) {
        const body: unknown = JSON.parse(renderBody(plan)!.toString("utf8"));
        for (const p of paths) for (const n of namesAt(body, p) ?? []) seen.get(JSON.stringify(p))!.add(n);
      }
      for (const names of seen.values()) expect([...names]).toEqual(expect.arrayContaining(MUST_APPEAR));
      // Parsing them changed no prototype.
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    },
  );

  it("when the rest of a multicast body is made sane, then it passes the request's own schema", () => {
    const o = operationsOf(openApi).find((x) => x.path === "/notifications/send-multicast")!;
    const schema = o.op.requestBody.content["application/json"].schema;
    expect(saneValue(schema)).toEqual({ title: "x", user_ids: ["x0"] });
  });
});
