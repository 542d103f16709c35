/** The gateway's access log (services/gateway/access-log.ts), over a real HTTP server. */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { LoggerInstance } from "moleculer";
import { AccessLog, CLIENT_CLOSED, type AccessLine } from "../../../../services/gateway/access-log";
import { routes } from "../../../../services/gateway/routes";

const roundRoute = routes.find((r) => r.path === "/rounds/:round_id")!;

async function serve(log: AccessLog | null, handler: http.RequestListener) {
  const server = http.createServer((req, res) => {
    log?.track(
      req,
      res,
      () => (req.url?.startsWith("/rounds/") ? roundRoute : undefined),
      () => "0af7651916cd43dd8448eb211c80319c",
    );
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function recorder() {
  const lines: unknown[][] = [];
  const logger = { info: (...args: unknown[]) => lines.push(args) } as unknown as LoggerInstance;
  return { lines, logger };
}

const settle = () => new Promise((r) => setTimeout(r, 50));

describe("AccessLog", () => {
  it("when the share is 0, then there is no log at all", () => {
    expect(AccessLog.of(0, recorder().logger, true)).toBeNull();
  });

  it("when every request is logged as json, then a line carries method, route template, status, duration, request id and trace id, never the URL", async () => {
    const { lines, logger } = recorder();
    const { server, url } = await serve(AccessLog.of(1, logger, true), (_req, res) => {
      res.statusCode = 200;
      res.end("{}");
    });
    try {
      await (await fetch(`${url}/rounds/r-123`)).text();
      await settle();
      expect(lines).toEqual([
        [
          {
            method: "GET",
            route: "/rounds/:round_id",
            status: 200,
            duration_ms: expect.any(Number),
            request_id: "0af7651916cd43dd8448eb211c80319c",
            trace_id: "0af7651916cd43dd8448eb211c80319c",
          } satisfies AccessLine,
          "request",
        ],
      ]);
    } finally {
      server.close();
    }
  });

  it("when the format is short, then the line is one readable string", async () => {
    const { lines, logger } = recorder();
    const { server, url } = await serve(AccessLog.of(1, logger, false), (_req, res) => {
      res.statusCode = 404;
      res.end();
    });
    try {
      await (await fetch(`${url}/nowhere`)).text();
      await settle();
      expect(lines).toEqual([
        [
          expect.stringMatching(
            /^GET \(no route\) 404 [\d.]+ ms request_id=0af7651916cd43dd8448eb211c80319c trace_id=0af7651916cd43dd8448eb211c80319c$/,
          ),
        ],
      ]);
    } finally {
      server.close();
    }
  });

  it("when the client leaves before an answer, then the line says 499", async () => {
    const { lines, logger } = recorder();
    const { server, url } = await serve(AccessLog.of(1, logger, true), () => undefined);
    try {
      const aborted = new AbortController();
      const pending = fetch(`${url}/rounds/r-1`, { signal: aborted.signal }).catch(() => null);
      await settle();
      aborted.abort();
      await pending;
      await settle();
      expect(lines).toEqual([[expect.objectContaining({ status: CLIENT_CLOSED }), "request"]]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("when the share is a tenth, then about a tenth of requests are logged", async () => {
    const { lines, logger } = recorder();
    const { server, url } = await serve(AccessLog.of(0.1, logger, true), (_req, res) => res.end());
    try {
      for (let i = 0; i < 400; i++) await (await fetch(`${url}/rounds/r-${i}`)).text();
      await settle();
      // Binomial(400, 0.1): mean 40, standard deviation 6; 15 to 70 is more than four deviations out.
      expect(lines.length).toBeGreaterThan(15);
      expect(lines.length).toBeLessThan(70);
    } finally {
      server.close();
    }
  });
});
