import http from "node:http";
import { loadConfig } from "../../../../shared/config";
import {
  CONNECTION_CHECK_MS,
  httpServerOptions,
  requestDeadline,
  type TimedRequest,
} from "../../../../services/gateway/http-bounds";

const config = loadConfig({
  HTTP_HEADERS_TIMEOUT_MS: "7000",
  HTTP_KEEP_ALIVE_TIMEOUT_MS: "3000",
  HTTP_REQUEST_TIMEOUT_MS: "20000",
  UPLOAD_TIMEOUT_MS: "90000",
});

describe("the gateway's HTTP bounds", () => {
  it("when the server is made, then Node enforces the configured headers and keep-alive times, checked every second", () => {
    const server = http.createServer(httpServerOptions(config));
    expect(server.headersTimeout).toBe(7000);
    expect(server.keepAliveTimeout).toBe(3000);
    expect(CONNECTION_CHECK_MS).toBe(1000);
    // Node's own bound on a whole request stays behind the gateway's longest (an upload's).
    expect(server.requestTimeout).toBeGreaterThan(7000 + 90000);
  });

  it("when a request is timed, then an upload gets UPLOAD_TIMEOUT_MS, any other HTTP_REQUEST_TIMEOUT_MS, fixed once", () => {
    const upload = { method: "POST", url: "/stores/7/events" } as TimedRequest;
    const read = { method: "GET", url: "/rounds/r1" } as TimedRequest;
    const now = Date.now();
    expect(requestDeadline(config, upload) - now).toBeGreaterThanOrEqual(90000);
    expect(requestDeadline(config, upload) - now).toBeLessThan(91000);
    expect(requestDeadline(config, read) - now).toBeGreaterThanOrEqual(20000);
    expect(requestDeadline(config, read) - now).toBeLessThan(21000);
    const first = requestDeadline(config, read);
    expect(requestDeadline(config, read)).toBe(first);
  });

  it("when an upload's path is in other letters' case or ends in slashes (the router still takes it), then it is timed as an upload", () => {
    for (const url of [
      "/Stores/7/Events",
      "/STORES/7/EVENTS/",
      "/stores/7/events//",
      "/stores/7/events?x=1",
    ]) {
      const now = Date.now();
      expect(requestDeadline(config, { method: "POST", url } as TimedRequest) - now).toBeGreaterThanOrEqual(
        90000,
      );
    }
  });
});
