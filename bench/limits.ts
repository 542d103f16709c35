/**
 * The bench's own limits: it sends thousands of requests a second from one address (127.0.0.1) and
 * many joins per user, far past the defaults (ADDRESS_RATE_LIMIT, RATE_LIMITS), which would answer most
 * of them 429. The limits stay on, raised out of reach, so every request still pays for its counting
 * as it does in production (docs/decisions/0037).
 */
const OUT_OF_REACH = "1000000000";

export const BENCH_LIMITS: Record<string, string> = {
  ADDRESS_RATE_LIMIT: OUT_OF_REACH,
  RATE_LIMITS: ["rounds.join", "auth.refresh", "stores.createEvent", "notifier.sendMulticast"]
    .map((action) => `${action}=${OUT_OF_REACH}`)
    .join(","),
};
