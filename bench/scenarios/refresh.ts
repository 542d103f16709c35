/**
 * Scenario 5: POST /auth/refresh-token, which hashes the presented token and rotates it. A refresh
 * token works once, so every request takes a fresh one from a pool: the joiners' own tokens to begin
 * with, then the successor each answer carries (as a client does). A baseline run works on a copy of
 * the pool, since its answers carry no usable token.
 */
import { record } from "../baseline";
import { load } from "../load";
import type { Fixtures } from "../fixtures";
import { bearer, type Scenario } from "./scenario";

interface Pair {
  access: string;
  refresh: string;
}

const CONNECTIONS = 64;

const refreshInit = (p: Pair) => ({
  method: "POST" as const,
  headers: { ...bearer(p.access), "content-type": "application/json" },
  body: JSON.stringify({ refresh_token: p.refresh }),
});

export const refresh = (f: Fixtures): Scenario => {
  let pool: Pair[] = f.joiners.map((u) => ({ access: u.access, refresh: u.refresh }));
  const successor = (body: string): Pair | null => {
    try {
      const set = JSON.parse(body) as { access_token?: string; refresh_token?: string };
      return set.access_token && set.refresh_token
        ? { access: set.access_token, refresh: set.refresh_token }
        : null;
    } catch {
      return null;
    }
  };
  return {
    key: "5",
    title: "POST /auth/refresh-token (rotation)",
    connections: CONNECTIONS,
    async record(url) {
      const res = await record(`${url}/auth/refresh-token`, refreshInit(pool.shift() as Pair));
      const next = successor(res.body.toString());
      if (res.status !== 200 || !next) throw new Error(`refresh probe answered ${res.status}`);
      pool.push(next);
      return [res];
    },
    async measure({ url, side, seconds }) {
      const queue = side === "system" ? pool : [...pool];
      const result = await load({
        url,
        connections: CONNECTIONS,
        seconds,
        requests: [
          {
            path: "/auth/refresh-token",
            setupRequest: (req) => {
              // An empty pool (every answer an error) sends a token that is refused: counted as errors.
              return { ...req, ...refreshInit(queue.shift() ?? { access: "none", refresh: "none" }) };
            },
            onResponse: (status, body) => {
              const next = status === 200 ? successor(body) : null;
              if (next) queue.push(next);
            },
          },
        ],
      });
      if (side === "system") pool = queue;
      return result;
    },
  };
};
