// Tier: one process only (a faulty service added to the test's broker, and the console of this process).
import { faultyStores } from "../support/faulty-stores";
import { startSystem } from "../support/system";

describe("request ids in logs", () => {
  it("when an action fails behind the gateway, then the failure is logged with the request's X-Request-ID", async () => {
    const lines: string[] = [];
    const spy = jest.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
      lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    });
    const faulty = faultyStores("item lookup broke");
    const sys = await startSystem({
      services: ["gateway", "auth", "users", "rounds", "settings"],
      extra: [faulty.schema],
      env: { LOG_LEVEL: "error", LOG_FORMAT: "json" },
    });
    try {
      faulty.breakNow();
      const res = await fetch(`${sys.baseUrl}/rounds/${sys.manifest.rounds.small}`, {
        headers: {
          authorization: `Bearer ${sys.manifest.users.alice.access_token}`,
          "x-request-id": "req-trace-42",
        },
      });
      expect(res.status).toBe(500);
      expect(res.headers.get("x-request-id")).toBe("req-trace-42");
      const traced = lines.filter((l) => l.includes("req-trace-42"));
      expect(traced.some((l) => l.includes("stores.item failed: item lookup broke"))).toBe(true);
      expect(traced.some((l) => l.includes("rounds.get failed"))).toBe(true);
    } finally {
      await sys.stop();
      spy.mockRestore();
    }
  });
});
