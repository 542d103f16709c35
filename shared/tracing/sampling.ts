/**
 * Which traces are kept (TRACING_SAMPLE_RATE). The gateway decides once per request, at random, before
 * the request's first span; every span of the request follows that decision, in every process it
 * reaches: Moleculer carries it with each call and event, the outbox with each fact (propagation.ts).
 * Work that no request started (a timer's calls, a fact recorded before sampling existed) is a trace of
 * its own, decided by Moleculer's own sampler at the same rate. A request answered 5xx keeps its
 * gateway span whatever the decision (services/gateway/request-span.ts).
 */

/**
 * The decision for a new request: in with probability `rate`. Random rather than Moleculer's counter
 * (every ⌈1/rate⌉-th span): that counter keeps every fourth request at a rate of 0.3, and a client
 * whose requests come in a fixed cycle would always have the same one of them traced.
 */
export function sampleRequest(rate: number, random: () => number = Math.random): boolean {
  if (rate >= 1) return true;
  if (rate <= 0) return false;
  return random() < rate;
}

/** Tags of a span kept only because its request failed on the server (its children were not). */
export const KEPT_FOR_ERROR = { sampling: { kept: "5xx" } } as const;
