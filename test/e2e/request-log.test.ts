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

describe("the access log", () => {
  it("when ACCESS_LOG_SAMPLE is 1 with LOG_FORMAT json, then each request has one line whose own fields are its method, route template, status, duration, request id and trace id", async () => {
    const lines: string[] = [];
    const spy = jest.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
      lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    });
    const sys = await startSystem({ env: { LOG_LEVEL: "info", LOG_FORMAT: "json", ACCESS_LOG_SAMPLE: "1" } });
    try {
      const round = sys.manifest.rounds.small;
      const res = await fetch(`${sys.baseUrl}/rounds/${round}`, {
        headers: {
          authorization: `Bearer ${sys.manifest.users.alice.access_token}`,
          "x-request-id": "0af7651916cd43dd8448eb211c80319c",
        },
      });
      expect(res.status).toBe(200);
      await fetch(`${sys.baseUrl}/no/such/route`);
      await new Promise((r) => setTimeout(r, 100));
      // Moleculer's Console logger writes info lines with console.log, one JSON object each.
      const access = lines
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.mod === "access");
      expect(access).toEqual([
        expect.objectContaining({
          level: "info",
          method: "GET",
          route: "/rounds/:round_id",
          status: 200,
          duration_ms: expect.any(Number),
          request_id: "0af7651916cd43dd8448eb211c80319c",
          trace_id: "0af7651916cd43dd8448eb211c80319c",
        }),
        expect.objectContaining({ method: "GET", route: "(no route)", status: 404 }),
      ]);
      // The URL's ids are not in the line: the route's template is.
      expect(JSON.stringify(access[0])).not.toContain(round);
    } finally {
      await sys.stop();
      spy.mockRestore();
    }
  });
});
