/** Scenario 2: reads spread over many distinct rounds, so cache misses and hits mix. */
import { record } from "../baseline";
import { load } from "../load";
import { bearer, pick, type ScenarioFactory } from "./scenario";

export const roundsSpread: ScenarioFactory = (f) => {
  const headers = bearer(f.reader.access);
  return {
    key: "2",
    title: `GET /rounds/{id} over ${f.spreadRounds.length.toLocaleString("en")} rounds`,
    connections: 64,
    record: async (url) => [await record(`${url}/rounds/${pick(f.spreadRounds)}`, { headers })],
    measure: ({ url, seconds }) =>
      load({
        url,
        connections: 64,
        seconds,
        requests: [
          {
            method: "GET",
            headers,
            setupRequest: (req) => ({ ...req, path: `/rounds/${pick(f.spreadRounds)}` }),
          },
        ],
      }),
  };
};
