/**
 * One measured load run through autocannon's programmatic API, reduced to what the report prints:
 * requests per second, latency percentiles, answers per status and the errors that count.
 */
import autocannon from "autocannon";

export interface LoadOptions {
  url: string;
  connections: number;
  /** Length of a timed run; ignored when `amount` is set. */
  seconds?: number;
  /** Exactly this many requests (setupRequest is then called once per request sent). */
  amount?: number;
  requests: autocannon.Request[];
  /** Statuses that are a normal answer of the scenario; any other one counts as an error. */
  expected?: number[];
  /**
   * Called on every answer with its status, latency (ms) and connection (autocannon's client object,
   * the same for every answer on one connection), right after the request's onResponse.
   */
  observe?: (status: number, ms: number, connection: unknown) => void;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  /** Connection errors, timeouts and answers with an unexpected status. */
  errors: number;
}

export async function load(opts: LoadOptions): Promise<LoadResult> {
  const expected = opts.expected ?? [200];
  const started = process.hrtime.bigint();
  let last = started;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: opts.url,
        connections: opts.connections,
        duration: opts.seconds ?? 5,
        amount: opts.amount,
        requests: opts.requests,
        timeout: 30,
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    instance.on("response", (client: unknown, status: number, _bytes: number, ms: number) => {
      last = process.hrtime.bigint();
      opts.observe?.(status, ms, client);
    });
  });
  // Our own clock up to the last answer: autocannon notices the end of a run only on its once-a-second
  // tick, which would round a 2,000-request join run up to whole seconds.
  const seconds = Number(last - started) / 1e9;
  const statuses: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = stat.count ?? 0;
  const unexpected = Object.entries(statuses)
    .filter(([code]) => !expected.includes(Number(code)))
    .reduce((sum, [, n]) => sum + n, 0);
  const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
  return {
    requests: answered,
    seconds,
    rps: answered / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    statuses,
    errors: result.errors + unexpected,
  };
}
