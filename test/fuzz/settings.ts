/**
 * How long the fuzz tier runs, from the environment (test tooling only, not the services' configuration):
 * FUZZ_SEED (an integer, or "random"; CI uses a fixed one), FUZZ_RUNS (inputs per operation),
 * FUZZ_PATH (fast-check's replay path of a failure), FUZZ_OPERATION ("POST /auth/refresh-token": that
 * operation only, to replay one failure), FUZZ_SURVEY=1 (try every input and print a summary
 * of the failures instead of stopping at the first), FUZZ_SHRINK=1 (shrink a failure before reporting).
 */
export const CI_SEED = 20260101;
export const CI_RUNS_PER_OPERATION = 200;

function seedOf(value: string | undefined): number {
  if (value === undefined || value === "") return CI_SEED;
  if (value === "random") return (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new Error(`FUZZ_SEED must be an integer or "random", got ${value}`);
  return n;
}

export const fuzzSettings = {
  seed: seedOf(process.env.FUZZ_SEED),
  runs: Number(process.env.FUZZ_RUNS || CI_RUNS_PER_OPERATION),
  path: process.env.FUZZ_PATH || undefined,
  operation: process.env.FUZZ_OPERATION || undefined,
  survey: process.env.FUZZ_SURVEY === "1",
  /** Shrink a failure to a smaller request (slow: every step is a request). */
  shrink: process.env.FUZZ_SHRINK === "1",
};
