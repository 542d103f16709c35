/**
 * The whole-request bound (HTTP_REQUEST_TIMEOUT_MS; decision 0073): a request whose answer is
 * not ready a second after its deadline is answered 504 in the spec's shape by the gateway's sweep of
 * the requests in flight, whatever the calls behind it still wait for, and the gateway goes on serving.
 * The bound is the gateway's own (30 s) and each call's own timeout (REQUEST_TIMEOUT_MS) is set well
 * above it, so only the gateway's bound can answer.
 */
import { HTTP_REQUEST_TIMEOUT_MS } from "../../services/gateway/http-bounds";
import { faultyStores } from "../support/faulty-stores";
import { api, startSystem, topology, type System } from "../support/system";

const BOUND_MS = HTTP_REQUEST_TIMEOUT_MS;
/** gateway/http-bounds REST_TIMEOUT_MARGIN_MS, then at most one sweep tick late (gateway/request-deadlines). */
const EARLIEST_MS = BOUND_MS + 1000;
/** Plus the tick and slack for a shared machine. */
const LATEST_MS = EARLIEST_MS + 250 + 2500;

describe("the whole-request bound", () => {
  const stores = faultyStores("unused");
  let sys: System;

  beforeAll(async () => {
    sys = await startSystem({
      services: ["gateway", "auth", "users", "rounds", "settings"],
      extra: [stores.schema],
      env: { REQUEST_TIMEOUT_MS: String(2 * BOUND_MS) },
    });
  });
  afterAll(async () => {
    stores.release();
    await sys?.stop();
  });

  it(
    "when a service never answers in time, then 504 in the spec's shape once the bound and its margin pass, while other requests are served",
    async () => {
      const token = sys.manifest.users.alice.access_token;
      stores.hangNow();
      const started = Date.now();
      const stuck = api(sys, "GET", `/rounds/${sys.manifest.rounds.small}`, { token });
      // Meanwhile the gateway answers what does not wait for the stuck service.
      const health = await fetch(`${sys.baseUrl}/health`);
      expect(health.status).toBe(200);
      const res = await stuck;
      const took = Date.now() - started;
      expect(res.status).toBe(504);
      expect(res.body).toEqual({ detail: "Gateway Timeout" });
      expect(took).toBeGreaterThanOrEqual(EARLIEST_MS - 50);
      expect(took).toBeLessThan(LATEST_MS);

      // The late answer, once it comes, writes nothing more; the same read then answers as usual.
      stores.release();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const again = await api(sys, "GET", `/rounds/${sys.manifest.rounds.small}`, { token });
      expect(again.status).toBe(200);
      if (topology === "embedded") {
        const gateway = sys.broker.getLocalService("gateway") as unknown as { deadlines: { size: number } };
        expect(gateway.deadlines.size).toBe(0);
      }
    },
    BOUND_MS + 30_000,
  );

  it(
    "when an answer comes within the margin after the bound, then it is the answer: 200",
    async () => {
      const token = sys.manifest.users.alice.access_token;
      stores.hangNow();
      const started = Date.now();
      const slow = api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, { token });
      setTimeout(() => stores.release(), BOUND_MS + 500);
      const res = await slow;
      expect(res.status).toBe(200);
      // It did wait for the stand-in (not a cached answer), past the bound but within its margin.
      expect(Date.now() - started).toBeGreaterThanOrEqual(BOUND_MS + 400);
    },
    BOUND_MS + 30_000,
  );
});
