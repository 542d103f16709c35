/** LOG_FORMAT=json lines (shared/runtime/json-log.ts). */
import { jsonLine } from "../../../../shared/runtime/json-log";

const printArgs = (args: unknown[]) =>
  args.map((a) => (typeof a === "object" ? `<${JSON.stringify(a)}>` : a));
const bindings = { nodeID: "n1", ns: "", mod: "access" };

describe("jsonLine", () => {
  it("when a line is logged with a plain object first, then its fields are the line's own and the rest is msg", () => {
    const [line] = jsonLine("info", [{ method: "GET", status: 200 }, "request"], bindings, { printArgs });
    expect(JSON.parse(line)).toEqual({
      ts: expect.any(Number),
      level: "info",
      msg: "request",
      nodeID: "n1",
      ns: "",
      mod: "access",
      method: "GET",
      status: 200,
    });
  });

  it("when a line starts with a string, or an object that is not plain (an error), then it is Moleculer's json line: everything printed into msg", () => {
    const where = { requestID: "r1" };
    expect(JSON.parse(jsonLine("error", ["failed:", where], bindings, { printArgs })[0])).toEqual({
      ts: expect.any(Number),
      level: "error",
      msg: 'failed: <{"requestID":"r1"}>',
      ...bindings,
    });
    const err = new Error("boom");
    expect(JSON.parse(jsonLine("error", [err], bindings, { printArgs })[0])).toEqual(
      expect.objectContaining({ msg: "<{}>", level: "error" }),
    );
  });
});
