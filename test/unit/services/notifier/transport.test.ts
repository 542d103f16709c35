/** Push transports: the offline log transport, and the choice between it and firebase-admin by config. */
import https from "node:https";
import tls from "node:tls";
import { loadConfig } from "../../../../shared/config";
import { LogTransport, transportFor, type PushTransport } from "../../../../services/notifier/transport";

const message = { notification: { title: "Flash sale" }, data: { id: "7" } };

describe("LogTransport", () => {
  it("when it sends, then every token succeeds and one line says what would have been pushed", async () => {
    const lines: string[] = [];
    const transport = new LogTransport((line) => lines.push(line));
    const tokens = ["t1", "t2", "t3"];
    await expect(transport.send(message, tokens)).resolves.toEqual([
      { success: true },
      { success: true },
      { success: true },
    ]);
    expect(lines).toEqual(['push (log transport): "Flash sale" to 3 device(s)']);
    expect(transport.name).toBe("log");
  });

  it("when it sends to no token, then it answers an empty list and still logs", async () => {
    const lines: string[] = [];
    const transport = new LogTransport((line) => lines.push(line));
    await expect(transport.send(message, [])).resolves.toEqual([]);
    expect(lines).toEqual(['push (log transport): "Flash sale" to 0 device(s)']);
    await expect(transport.close()).resolves.toBeUndefined();
  });
});

describe("transportFor", () => {
  const opened: PushTransport[] = [];
  let connect: jest.SpyInstance;
  let request: jest.SpyInstance;

  beforeEach(() => {
    connect = jest.spyOn(tls, "connect");
    request = jest.spyOn(https, "request");
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.close()));
    // Choosing (and closing) a transport never contacts the network.
    expect(connect).not.toHaveBeenCalled();
    expect(request).not.toHaveBeenCalled();
    jest.restoreAllMocks();
  });

  const choose = (env: Record<string, string>, log: (line: string) => void = () => undefined) => {
    const transport = transportFor(loadConfig(env), log);
    opened.push(transport);
    return transport;
  };

  it("when no credentials and no endpoint are configured (auto), then the log transport is chosen and logs through the given function", async () => {
    const lines: string[] = [];
    const transport = choose({}, (line) => lines.push(line));
    expect(transport).toBeInstanceOf(LogTransport);
    await transport.send(message, ["a"]);
    expect(lines).toEqual(['push (log transport): "Flash sale" to 1 device(s)']);
  });

  it("when FCM_ENDPOINT is set (auto), then firebase-admin is chosen", () => {
    const transport = choose({ FCM_ENDPOINT: "http://127.0.0.1:9" });
    expect(transport.name).toBe("firebase");
    expect(transport).not.toBeInstanceOf(LogTransport);
  });

  it("when Google credentials are set (auto), then firebase-admin is chosen", () => {
    const transport = choose({
      GOOGLE_APPLICATION_CREDENTIALS: "/nonexistent/service-account.json",
    });
    expect(transport.name).toBe("firebase");
  });

  it("when PUSH_TRANSPORT is log, then the log transport wins even with credentials and an endpoint", () => {
    const transport = choose({
      PUSH_TRANSPORT: "log",
      GOOGLE_APPLICATION_CREDENTIALS: "/nonexistent/service-account.json",
      FCM_ENDPOINT: "https://127.0.0.1:9",
    });
    expect(transport).toBeInstanceOf(LogTransport);
  });

  it("when PUSH_TRANSPORT is firebase without credentials, then firebase-admin is chosen anyway", () => {
    expect(choose({ PUSH_TRANSPORT: "firebase" }).name).toBe("firebase");
  });

  it("when two firebase transports are open at once, then each has its own app and both close", async () => {
    const a = choose({ PUSH_TRANSPORT: "firebase", FCM_ENDPOINT: "https://127.0.0.1:9" });
    const b = choose({ PUSH_TRANSPORT: "firebase", FCM_ENDPOINT: "https://127.0.0.1:9" });
    expect(a).not.toBe(b);
    await expect(Promise.all(opened.splice(0).map((t) => t.close()))).resolves.toHaveLength(2);
  });
});
