/**
 * Scenario 3: join contention. Every joiner (2,000 in a full run) asks for a seat of one 100-seat round,
 * 200 at a time. Exactly as many joins as seats must succeed, and the round must hold exactly that many
 * members afterwards; anything else fails the bench (capacity is a correctness property, not a speed).
 */
import { record } from "../baseline";
import { load, type LoadResult } from "../load";
import type { Fixtures } from "../fixtures";
import { bearer, type Scenario } from "./scenario";

const CONNECTIONS = 200;
const BODY = JSON.stringify({ attributes: [] });

const joinInit = (token: string) => ({
  method: "POST" as const,
  headers: { ...bearer(token), "content-type": "application/json" },
  body: BODY,
});

export const join =
  (seats: number) =>
  (f: Fixtures): Scenario => ({
    key: "3",
    title: `POST /rounds/{id}/join: ${f.joiners.length.toLocaleString("en")} users, ${seats} seats`,
    connections: CONNECTIONS,
    async record(url) {
      // A one-seat round: the first join takes the seat, the second is refused as the later ones are.
      const path = `${url}/rounds/${f.probeRound}/join`;
      const success = await record(path, joinInit(f.joiners[0].access));
      const refusal = await record(path, joinInit(f.joiners[1].access));
      if (success.status !== 200 || refusal.status !== 409)
        throw new Error(`join probe answered ${success.status} and ${refusal.status}, not 200 and 409`);
      // The baseline answers the first `seats` requests as a success, the rest as refused.
      return [{ ...success, count: seats }, refusal];
    },
    measure({ url, round }) {
      const roundId = f.joinRounds[round];
      let next = 0;
      return load({
        url,
        connections: CONNECTIONS,
        // One request per user: `amount` calls setupRequest exactly once for each request sent.
        amount: f.joiners.length,
        expected: [200, 409],
        requests: [
          {
            path: `/rounds/${roundId}/join`,
            // Wraps around only if autocannon re-sends after a broken connection; verify() then sees
            // more answers than users and fails the run.
            setupRequest: (req) => ({ ...req, ...joinInit(f.joiners[next++ % f.joiners.length].access) }),
          },
        ],
      });
    },
    async verify(url, round, result: LoadResult) {
      const res = await fetch(`${url}/rounds/${f.joinRounds[round]}`, { headers: bearer(f.reader.access) });
      const members = ((await res.json()) as { members_count?: number }).members_count;
      const ok = result.statuses["200"] ?? 0;
      const refused = result.statuses["409"] ?? 0;
      const summary = `${ok}×200, ${refused}×409, members_count ${members}`;
      if (members !== seats || ok !== seats || refused !== f.joiners.length - seats || result.errors > 0)
        throw new Error(`join contention: expected exactly ${seats} seats taken, got ${summary}`);
      return `exact: ${summary}`;
    },
  });
