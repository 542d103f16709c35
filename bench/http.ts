/**
 * Scenarios 1–5 against one topology: start it with its data, run every selected scenario as alternating
 * baseline/system rounds, stop it.
 */
import type { ServiceBroker } from "moleculer";
import { alternate, type ScenarioOutcome } from "./ab";
import type { Baseline } from "./baseline";
import { createFixtures, type FixtureSizes } from "./fixtures";
import { join } from "./scenarios/join";
import { refresh } from "./scenarios/refresh";
import { roundsHot } from "./scenarios/rounds-hot";
import { roundsSpread } from "./scenarios/rounds-spread";
import type { ScenarioFactory } from "./scenarios/scenario";
import { friends, payments } from "./scenarios/user-lists";
import { startDistributed, startEmbedded, type System, type Topology } from "./systems";
import { distributedNodeArgs, nodeArgsOf, type NodeOptions } from "./node-options";

export interface HttpPlan {
  rounds: number;
  seconds: number;
  sizes: FixtureSizes;
  /** Scenario keys to run ("1", "2", "3", "4a", "4b", "5"); all when empty. */
  only: string[];
  /** The servers' Node options (`--node-options`, bench/node-options.ts); Node's defaults when absent. */
  nodeOptions?: NodeOptions;
}

export const HTTP_KEYS = ["1", "2", "3", "4a", "4b", "5"];

export function planFor(quick: boolean, only: string[]): HttpPlan {
  return quick
    ? {
        rounds: 1,
        seconds: 1,
        sizes: {
          spreadRounds: 500,
          joiners: 400,
          joinSeats: 100,
          joinRounds: 1,
          listUsers: 5,
          friendsPerUser: 5,
          paymentsPerUser: 2,
        },
        only,
      }
    : {
        rounds: 3,
        seconds: 5,
        sizes: {
          spreadRounds: 10_000,
          joiners: 2_000,
          joinSeats: 100,
          joinRounds: 3,
          listUsers: 20,
          friendsPerUser: 10,
          paymentsPerUser: 3,
        },
        only,
      };
}

export interface TopologyOutcome {
  topology: Topology;
  outcomes: ScenarioOutcome[];
  /** The Node it ran on, when not the one the report names (bench/machine-node.ts). */
  node?: string;
}

/** Cases 1–5 by key, over fixtures of these sizes. */
export const scenarioFactories = (sizes: FixtureSizes): [string, ScenarioFactory][] => [
  ["1", roundsHot],
  ["2", roundsSpread],
  ["3", join(sizes.joinSeats)],
  ["4a", friends],
  ["4b", payments],
  ["5", refresh],
];

export async function runHttpBench(
  topology: Topology,
  plan: HttpPlan,
  baseline: Baseline,
  log: (line: string) => void,
  /** More cases on the same system before it stops (case 8 on the distributed one). */
  more?: (system: System) => Promise<ScenarioOutcome[]>,
): Promise<TopologyOutcome> {
  const factories = scenarioFactories(plan.sizes);
  const selected = factories.filter(([key]) => plan.only.length === 0 || plan.only.includes(key));
  const t0 = Date.now();
  log(`== ${topology}: starting, creating the data`);
  const seed = (broker: ServiceBroker) => createFixtures(broker, plan.sizes);
  const options = plan.nodeOptions ?? {};
  const system =
    topology === "embedded"
      ? await startEmbedded(seed, { nodeArgs: nodeArgsOf(options, "embedded") })
      : await startDistributed(seed, { nodeArgs: distributedNodeArgs(options) });
  log(`== ${topology}: ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const outcomes: ScenarioOutcome[] = [];
  try {
    for (const [, factory] of selected) {
      const scenario = factory(system.fixtures);
      log(`${topology} ${scenario.key}: ${scenario.title}`);
      outcomes.push(
        await alternate(scenario, system.baseUrl, baseline, {
          rounds: plan.rounds,
          seconds: plan.seconds,
          log,
          watched: system.watched,
        }),
      );
    }
    if (more) outcomes.push(...(await more(system)));
  } finally {
    await system.stop();
  }
  return { topology, outcomes };
}
