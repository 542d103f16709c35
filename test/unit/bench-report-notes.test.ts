import type { ScenarioOutcome } from "../../bench/ab";
import type { LoadResult } from "../../bench/load";
import { httpRows } from "../../bench/report";

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
