import http from "node:http";
import { loadConfig } from "../../../../shared/config";
import { UPLOAD_TIMEOUT_MS } from "../../../../shared/contracts/stores";
import {
  CONNECTION_CHECK_MS,
  HTTP_HEADERS_TIMEOUT_MS,
  HTTP_REQUEST_TIMEOUT_MS,
  httpServerOptions,
  requestDeadline,
  type TimedRequest,
} from "../../../../services/gateway/http-bounds";

const config = loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: "3000" });

describe("the gateway's HTTP bounds", () => {
  it("when the server is made, then Node enforces the configured headers and keep-alive times, checked every second", () => {
    const server = http.createServer(httpServerOptions(config));
    expect(server.headersTimeout).toBe(HTTP_HEADERS_TIMEOUT_MS);
    expect(server.keepAliveTimeout).toBe(3000);
    expect(CONNECTION_CHECK_MS).toBe(1000);
    // Node's own bound on a whole request stays behind the gateway's longest (an upload's).
    expect(server.requestTimeout).toBeGreaterThan(HTTP_HEADERS_TIMEOUT_MS + UPLOAD_TIMEOUT_MS);
  });

  it("when a request is timed, then an upload gets UPLOAD_TIMEOUT_MS, any other HTTP_REQUEST_TIMEOUT_MS, fixed once", () => {
    const upload = { method: "POST", url: "/stores/7/events" } as TimedRequest;
    const read = { method: "GET", url: "/rounds/r1" } as TimedRequest;
    const now = Date.now();
    expect(requestDeadline(upload) - now).toBeGreaterThanOrEqual(UPLOAD_TIMEOUT_MS);
    expect(requestDeadline(upload) - now).toBeLessThan(UPLOAD_TIMEOUT_MS + 1000);
    expect(requestDeadline(read) - now).toBeGreaterThanOrEqual(HTTP_REQUEST_TIMEOUT_MS);
    expect(requestDeadline(read) - now).toBeLessThan(HTTP_REQUEST_TIMEOUT_MS + 1000);
    const first = requestDeadline(read);
    expect(requestDeadline(read)).toBe(first);
  });

  it("when an upload's path is in other letters' case or ends in slashes (the router still takes it), then it is timed as an upload", () => {
    for (const url of [
      "/Stores/7/Events",
      "/STORES/7/EVENTS/",
      "/stores/7/events//",
      "/stores/7/events?x=1",
    ]) {
      const now = Date.now();
      expect(requestDeadline({ method: "POST", url } as TimedRequest) - now).toBeGreaterThanOrEqual(
        UPLOAD_TIMEOUT_MS,
      );
    }
  });
});
