import { missingHeapArgs } from "../../../bench/lib";

describe("the bench's own heap", () => {
  const larger = ["--max-old-space-size=16384"];

  it("when it runs the scaling report at its own sizes, then it asks for a larger heap", () => {
    expect(missingHeapArgs(["--scaling"], [])).toEqual(larger);
  });

  it("when a million users are asked for, in any form, then it asks for a larger heap", () => {
    expect(missingHeapArgs(["--only", "8", "--users", "1000000"], [])).toEqual(larger);
    expect(missingHeapArgs(["--scaling", "--users=10000,1000000"], [])).toEqual(larger);
  });

  it("when the data set is smaller, then Node's default heap is kept", () => {
    expect(missingHeapArgs([], [])).toEqual([]);
    expect(missingHeapArgs(["--scaling", "--quick"], [])).toEqual([]);
    expect(missingHeapArgs(["--only", "8", "--users", "100000"], [])).toEqual([]);
    expect(missingHeapArgs(["--scaling", "--users", "10000,100000"], [])).toEqual([]);
  });

  it("when the heap is already set, then nothing is added (so the bench never restarts itself twice)", () => {
    expect(missingHeapArgs(["--scaling"], ["--max-old-space-size=8192"])).toEqual([]);
  });
});
