/**
 * Cases 8 and 9 start servers of their own (always embedded; distributed when cases 1–5 do not run). Those must
 * start with the bench's `--node-options` as the other cases' do: a comparison of Node options on case 8
 * is otherwise a comparison of Node's defaults with themselves. The start-up functions are replaced by
 * ones that record what they were given and stop there.
 */
import type { Baseline } from "../../../bench/baseline";
import { mixedPlanFor, runMixedBench, runMixedEmbedded } from "../../../bench/mixed";
import { parseNodeOptions } from "../../../bench/node-options";
import { startEmbedded } from "../../../bench/systems";
import { startCluster } from "../../support/cluster";

jest.mock("../../../bench/systems", () => ({
  ...jest.requireActual("../../../bench/systems"),
  startEmbedded: jest.fn(async () => {
    throw new Error("not started in this test");
  }),
}));
jest.mock("../../support/cluster", () => ({
  ...jest.requireActual("../../support/cluster"),
  startCluster: jest.fn(async () => {
    throw new Error("not started in this test");
  }),
}));

const baseline = {} as Baseline;
const quiet = () => undefined;

describe("case 8's own servers and the bench's --node-options", () => {
  beforeEach(() => jest.clearAllMocks());

  it("when options name the embedded server, then case 8's embedded server starts with them", async () => {
    const plan = {
      ...mixedPlanFor(true, {}),
      nodeOptions: parseNodeOptions("embedded=--max-semi-space-size=64"),
    };
    await expect(runMixedEmbedded(plan, baseline, quiet)).rejects.toThrow("not started in this test");
    const options = jest.mocked(startEmbedded).mock.calls[0][1];
    expect(options?.nodeArgs).toEqual(["--max-semi-space-size=64"]);
  });

  it("when options name a service, then case 8's own cluster starts that process with them", async () => {
    const plan = { ...mixedPlanFor(true, {}), nodeOptions: parseNodeOptions("gateway=--trace-gc") };
    await expect(runMixedBench(plan, baseline, quiet)).rejects.toThrow("not started in this test");
    const options = jest.mocked(startCluster).mock.calls[0][0];
    expect(options?.nodeArgs).toEqual({ gateway: ["--trace-gc"] });
  });

  it("when no options are given, then case 8's servers start with Node's defaults", async () => {
    const plan = mixedPlanFor(true, {});
    await expect(runMixedEmbedded(plan, baseline, quiet)).rejects.toThrow();
    await expect(runMixedBench(plan, baseline, quiet)).rejects.toThrow();
    expect(jest.mocked(startEmbedded).mock.calls[0][1]?.nodeArgs).toEqual([]);
    expect(jest.mocked(startCluster).mock.calls[0][0]?.nodeArgs).toEqual({});
  });
});

describe("case 8's own cluster and MONGO_URI", () => {
  const saved = process.env.MONGO_URI;
  beforeEach(() => jest.clearAllMocks());
  afterEach(() => {
    if (saved === undefined) delete process.env.MONGO_URI;
    else process.env.MONGO_URI = saved;
  });

  it("when the bench's environment has MONGO_URI, then the cluster stores in MongoDB; without it, in embedded stores", async () => {
    process.env.MONGO_URI = "mongodb://127.0.0.1:27017/rounds";
    await expect(runMixedBench(mixedPlanFor(true, {}), baseline, quiet)).rejects.toThrow();
    delete process.env.MONGO_URI;
    await expect(runMixedBench(mixedPlanFor(true, {}), baseline, quiet)).rejects.toThrow();
    expect(jest.mocked(startCluster).mock.calls.map(([o]) => o?.store)).toEqual(["mongodb", "embedded"]);
  });
});
