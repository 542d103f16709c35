/**
 * The HTTP side of a graceful stop (services/gateway/drain.ts), on a real Node HTTP server and real
 * keep-alive connections: while leaving it still serves, closing each connection after its answer;
 * once draining it refuses new connections, finishes what is in flight and closes the rest.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { HttpDrain } from "../../../../services/gateway/drain";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
  socket: import("node:net").Socket;
}

/** A server answering "ok" after `?wait=ms` (never, with `?wait=never`), with its drain. */
async function serve(): Promise<{ server: http.Server; drain: HttpDrain; port: number }> {
  const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
    const wait = new URL(req.url ?? "/", "http://x").searchParams.get("wait");
    if (wait === "never") return;
    setTimeout(() => res.end("ok"), Number(wait ?? 0));
  });
  const drain = new HttpDrain(server, () => server.close());
  server.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  return { server, drain, port: (server.address() as AddressInfo).port };
}

function get(port: number, path: string, agent: http.Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          connection: res.headers.connection,
          body,
          socket: req.socket!,
        }),
      );
    });
    req.on("error", reject);
  });
}

const closedWithin = (socket: import("node:net").Socket, ms: number) =>
  socket.destroyed || socket.closed
    ? Promise.resolve(true)
    : Promise.race([
        new Promise<boolean>((r) => socket.once("close", () => r(true))),
        sleep(ms).then(() => false),
      ]);

let agents: http.Agent[] = [];
let servers: http.Server[] = [];
const keepAlive = () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return agent;
};
const started = async () => {
  const s = await serve();
  servers.push(s.server);
  return s;
};

afterEach(() => {
  for (const a of agents) a.destroy();
  for (const s of servers) s.closeAllConnections();
  for (const s of servers) if (s.listening) s.close();
  agents = [];
  servers = [];
});

describe("HttpDrain", () => {
  it("when nothing is stopping, then answers keep their connection alive", async () => {
    const { port } = await started();
    const agent = keepAlive();
    const first = await get(port, "/", agent);
    const second = await get(port, "/", agent);
    expect(first.connection).toBe("keep-alive");
    expect(second.socket).toBe(first.socket);
  });

  it("when leaving, then new connections are still taken and served, and every answer closes its connection after it is whole", async () => {
    const { port, drain } = await started();
    const agent = keepAlive();
    const before = await get(port, "/", agent);
    drain.leave();
    // On the connection opened before: answered whole, then closed by the server.
    const onOld = await get(port, "/?wait=50", agent);
    expect(onOld).toMatchObject({ status: 200, body: "ok", connection: "close" });
    expect(onOld.socket).toBe(before.socket);
    expect(await closedWithin(onOld.socket, 1000)).toBe(true);
    // A new connection is still accepted while leaving.
    const onNew = await get(port, "/", keepAlive());
    expect(onNew).toMatchObject({ status: 200, body: "ok", connection: "close" });
  });

  it("when the drain begins with a keep-alive request in flight, then new connections are refused, that request is answered whole and its connection closed afterwards", async () => {
    const { port, drain, server } = await started();
    const agent = keepAlive();
    const inFlight = get(port, "/?wait=400", agent);
    await sleep(100);
    drain.begin();
    expect(server.listening).toBe(false);
    const refused = await get(port, "/", keepAlive()).then(
      () => "answered",
      (err: NodeJS.ErrnoException) => err.code,
    );
    expect(refused).toBe("ECONNREFUSED");
    const answer = await inFlight;
    expect(answer).toMatchObject({ status: 200, body: "ok" });
    // Its headers may have been decided before the drain; the idle sweep closes it once it is whole.
    expect(await closedWithin(answer.socket, 1000)).toBe(true);
  });

  it("when the drain begins with an idle keep-alive connection, then it is closed and end() returns without waiting for its bound", async () => {
    const { port, drain } = await started();
    const idle = await get(port, "/", keepAlive());
    const at = Date.now();
    await drain.end(5000);
    expect(Date.now() - at).toBeLessThan(1000);
    expect(await closedWithin(idle.socket, 1000)).toBe(true);
  });

  it("when a request is still unanswered at the end of the bound, then end() cuts its connection then", async () => {
    const { port, drain } = await started();
    const never = get(port, "/?wait=never", keepAlive()).then(
      () => "answered",
      (err: NodeJS.ErrnoException) => err.code,
    );
    await sleep(50);
    const at = Date.now();
    await drain.end(300);
    expect(Date.now() - at).toBeGreaterThanOrEqual(290);
    expect(await never).toBe("ECONNRESET");
  });
});
