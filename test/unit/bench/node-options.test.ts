import {
  describeNodeOptions,
  distributedNodeArgs,
  nodeArgsOf,
  parseNodeOptions,
} from "../../../bench/node-options";
import { DEPLOYED, PROCESS_KINDS } from "../../support/deployed";

describe("the bench's --node-options", () => {
  it("when absent, then every server runs with Node's defaults", () => {
    expect(parseNodeOptions(undefined)).toEqual({});
    expect(distributedNodeArgs({})).toEqual({});
    expect(describeNodeOptions({})).toMatch(/defaults/);
  });

  it("when given per process, then each named process gets its own flags and `*` the rest", () => {
    const options = parseNodeOptions(
      "gateway=--max-old-space-size=2048 --max-semi-space-size=16; *=--max-semi-space-size=16",
    );
    expect(nodeArgsOf(options, "gateway")).toEqual(["--max-old-space-size=2048", "--max-semi-space-size=16"]);
    expect(nodeArgsOf(options, "rounds")).toEqual(["--max-semi-space-size=16"]);
    expect(Object.keys(distributedNodeArgs(options)).sort()).toEqual([...PROCESS_KINDS].sort());
  });

  it("when `deployed`, then every process gets its kind's deployed options", () => {
    const args = distributedNodeArgs(parseNodeOptions("deployed"));
    for (const kind of PROCESS_KINDS) expect(args[kind].join(" ")).toBe(DEPLOYED[kind].nodeOptions);
  });

  it("when a part names no process, then it is refused", () => {
    expect(() => parseNodeOptions("gatewey=--max-old-space-size=1")).toThrow(/names no process/);
  });
});
