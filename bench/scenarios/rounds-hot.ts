/** Scenario 1: one round read over and over, its snapshot in the cache. */
import { record } from "../baseline";
import { load } from "../load";
import { bearer, type ScenarioFactory } from "./scenario";

export const roundsHot: ScenarioFactory = (f) => {
  const path = `/rounds/${f.hotRound}`;
  const headers = bearer(f.reader.access);
  return {
    key: "1",
    title: "GET /rounds/{id} hot (cached)",
    connections: 64,
    // The recording request also puts the round's snapshot in the cache: every measured read is a hit.
    record: async (url) => [await record(url + path, { headers })],
    measure: ({ url, seconds }) =>
      load({ url, connections: 64, seconds, requests: [{ method: "GET", path, headers }] }),
  };
};
