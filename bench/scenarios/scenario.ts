/** What every HTTP scenario provides to the A/B runner (bench/ab.ts). */
import type { RecordedResponse } from "../baseline";
import type { Fixtures } from "../fixtures";
import type { LoadResult } from "../load";

export type Side = "baseline" | "system";

export interface RunContext {
  url: string;
  side: Side;
  /** Which measured round this is (0-based), for scenarios that need fresh data per round. */
  round: number;
  seconds: number;
}

export interface Scenario {
  key: string;
  title: string;
  connections: number;
  /** Real answers of the system, recorded before measuring, that the baseline replays. */
  record(systemUrl: string): Promise<RecordedResponse[]>;
  measure(run: RunContext): Promise<LoadResult>;
  /**
   * After each run against the system: throws when it answered wrongly (scenario 3's exact capacity);
   * returns a note for the report.
   */
  verify?(systemUrl: string, round: number, result: LoadResult): Promise<string>;
}

export type ScenarioFactory = (fixtures: Fixtures) => Scenario;

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)];
