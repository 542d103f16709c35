import type { ScenarioOutcome } from "../../../bench/ab";
import type { LoadResult } from "../../../bench/load";
import { MACHINE_NODE_VARIABLE } from "../../../bench/lib";
import { otherMachineNode } from "../../../bench/machine-node";
import { httpRows, runRows } from "../../../bench/report";

const load: LoadResult = {
  requests: 100,
  seconds: 1,
  rps: 100,
  p50: 1,
  p99: 2,
  statuses: { 200: 100 },
  errors: 0,
};
const summary = { rps: 100, p50: 1, p99: 2, requests: 100, errors: 0 };

function outcome(rounds: number, extra: Partial<ScenarioOutcome>): ScenarioOutcome {
  return {
    scenario: {
      key: "1",
      title: "hot read",
      connections: 64,
      record: async () => [],
      measure: async () => load,
    },
    system: summary,
    baseline: summary,
    runs: Array.from({ length: rounds }, () => ({ baseline: load, system: load })),
    notes: [],
    ...extra,
  };
}

describe("bench report notes", () => {
  it("when the rounds read the machine, then the notes start with the medians of the rounds, before the rounds' own notes", () => {
    const o = outcome(3, {
      notes: ["exact", "exact", "exact"],
      machine: { loadGenerator: 0.9, idle: 0.05, waiting: { gateway: 0.3 } },
    });
    const [row] = httpRows([{ topology: "distributed", outcomes: [o] }]);
    expect(row.notes).toBe(
      "during the system's runs (medians of 3): load generator 0.90 cores, idle 0.05 cores; " +
        "waiting for a core: gateway 30%; exact (3 of 3 rounds)",
    );
  });

  it("when one run read the machine, then its reading is named as that run's", () => {
    const o = outcome(1, { notes: ["seeded"], machine: { loadGenerator: 0.3, idle: 0.5 } });
    const [row] = httpRows([{ topology: "embedded", outcomes: [o] }]);
    expect(row.notes).toBe("during the system's run: load generator 0.30 cores, idle 0.50 cores; seeded");
  });

  it("when the machine was not read, then the notes are the rounds' own", () => {
    const [row] = httpRows([{ topology: "embedded", outcomes: [outcome(3, { notes: ["exact"] })] }]);
    expect(row.notes).toBe("exact (1 of 3 rounds)");
  });
});

describe("a case run on another Node", () => {
  it("when an outcome names the Node it ran on, then its rows say so beside the topology", () => {
    const rows = httpRows([
      { topology: "embedded", outcomes: [outcome(1, {})] },
      { topology: "embedded", outcomes: [outcome(1, {})], node: "v20.20.2" },
    ]);
    expect(rows.map((r) => r.topology)).toEqual(["embedded", "embedded, Node v20.20.2"]);
    expect(runRows([{ topology: "embedded", outcomes: [outcome(2, {})], node: "v20.20.2" }])).toEqual(
      expect.arrayContaining([expect.objectContaining({ topology: "embedded, Node v20.20.2", round: 2 })]),
    );
  });

  it("when the bench was started by this very Node, or by no other, then nothing runs again elsewhere", () => {
    const saved = process.env[MACHINE_NODE_VARIABLE];
    try {
      delete process.env[MACHINE_NODE_VARIABLE];
      expect(otherMachineNode()).toBeNull();
      process.env[MACHINE_NODE_VARIABLE] = process.execPath;
      expect(otherMachineNode()).toBeNull();
    } finally {
      if (saved === undefined) delete process.env[MACHINE_NODE_VARIABLE];
      else process.env[MACHINE_NODE_VARIABLE] = saved;
    }
  });
});

describe("the references around the system's runs", () => {
  const at = (rps: number): LoadResult => ({ ...load, rps });

  it("when a case has a baseline run after its last round and moleculer-web alone around it, then every run is a row, in the order run", () => {
    const o = outcome(1, {
      runs: [{ baseline: at(200), system: at(100) }],
      closing: at(300),
      framework: { before: { ...at(400), when: "" }, after: { ...at(500), when: "" } },
    });
    const rows = runRows([{ topology: "embedded", outcomes: [o] }]);
    expect(rows.map((r) => [r.round, r.side, r["req/s"]])).toEqual([
      ["before", "moleculer-web alone", "400"],
      [1, "baseline", "200"],
      [1, "system", "100"],
      ["after", "baseline", "300"],
      ["after", "moleculer-web alone", "500"],
    ]);
    const [row] = httpRows([{ topology: "embedded", outcomes: [o] }]);
    expect(row["vs baseline"]).toBe("40.0% (33.3–50.0%)");
    expect(row["vs moleculer-web alone"]).toBe("22.2% (20.0–25.0%); p99 1.00× (1.00–1.00×)");
  });
});
