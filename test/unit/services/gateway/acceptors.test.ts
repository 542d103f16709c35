/**
 * The gateway's listening sockets (services/gateway/acceptors): several on one port where Node and the
 * platform can share it, copies of one socket's descriptor on older Nodes, one elsewhere; a port in use
 * is refused as with one socket; stopping closes all.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import {
  acceptorSharing,
  httpAcceptorsHook,
  openAcceptors,
  type Acceptors,
  type AcceptorSharing,
} from "../../../../services/gateway/acceptors";
import { copyListeningSocket } from "../../../../services/gateway/socket-copies";
import { inRange, reasonNotToApply } from "../../../../shared/runtime/internals";

const HOST = "127.0.0.1";

function okServer(): http.Server {
  return http.createServer((_req, res) => res.end("ok"));
}

function get(port: number, agent?: http.Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: HOST, port, path: "/", agent: agent ?? false }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve(body));
      })
      .on("error", reject);
  });
}

const portOf = (server: http.Server) => (server.address() as net.AddressInfo).port;

describe("acceptorSharing", () => {
  it.each([
    ["20.20.2", "linux", "copies"],
    ["22.11.0", "linux", "copies"],
    ["22.12.0", "linux", "reuse-port"],
    ["23.0.0", "linux", "copies"],
    ["23.1.0", "linux", "reuse-port"],
    ["24.21.0", "linux", "reuse-port"],
    ["24.21.0", "darwin", "none"],
    ["20.20.2", "win32", "none"],
  ])("when Node is %s on %s, then the port's sockets are shared by %s", (version, platform, expected) => {
    expect(acceptorSharing(version, platform as NodeJS.Platform)).toBe(expected);
  });
});

describe("openAcceptors", () => {
  const opened: Array<{ server: http.Server; acceptors: Acceptors }> = [];
  afterEach(() => {
    for (const { server, acceptors } of opened.splice(0)) {
      acceptors.stopAccepting();
      server.closeAllConnections();
    }
  });

  async function open(
    port: number,
    wanted: number,
    sharing: AcceptorSharing = acceptorSharing(),
  ): Promise<{ server: http.Server; acceptors: Acceptors }> {
    const server = okServer();
    // The hook itself is under test: on, whatever INTERNALS_HOOKS_OFF this run has (a hooks-off run
    // tests the fallback elsewhere).
    const acceptors = await openAcceptors(server, port, HOST, wanted, sharing, { off: [] });
    opened.push({ server, acceptors });
    return { server, acceptors };
  }

  it("when four are asked for, then there are four where the port can be shared (else one), and a burst of 300 connections is all answered", async () => {
    const { server, acceptors } = await open(0, 4);
    expect(acceptors.count).toBe(acceptorSharing() === "none" ? 1 : 4);
    const answers = await Promise.all(Array.from({ length: 300 }, () => get(portOf(server))));
    expect(answers.every((a) => a === "ok")).toBe(true);
  });

  it("when four are asked for as copies of one socket, then there are four and a burst of 300 connections is all answered", async () => {
    const { server, acceptors } = await open(0, 4, "copies");
    expect(acceptors.count).toBe(4);
    const answers = await Promise.all(Array.from({ length: 300 }, () => get(portOf(server))));
    expect(answers.every((a) => a === "ok")).toBe(true);
  });

  it.each([
    ["one socket", 1, "none"],
    ["eight copies of one socket", 8, "copies"],
  ] as const)(
    "when 40 connections wait and there is %s, then each turn of the event loop accepts up to that many",
    async (_name, wanted, sharing) => {
      const { server } = await open(0, wanted, sharing);
      const turnOfEach: number[] = [];
      let turn = 0;
      let ticking: NodeJS.Immediate;
      const tick = () => {
        turn += 1;
        ticking = setImmediate(tick);
      };
      tick();
      const all = new Promise<void>((resolve) =>
        server.on("connection", (socket: net.Socket) => {
          turnOfEach.push(turn);
          socket.on("error", () => undefined);
          if (turnOfEach.length === 40) resolve();
        }),
      );
      // This process is blocked until the client has connected all 40 and left: they wait in the queue.
      const client = spawnSync(
        process.execPath,
        [
          "-e",
          `let n = 0; for (let i = 0; i < 40; i++) require("net").connect(${portOf(server)}, "${HOST}", () => ++n === 40 && process.exit(0));`,
        ],
        { timeout: 20_000 },
      );
      expect(client.status).toBe(0);
      await all;
      clearImmediate(ticking!);
      const perTurn = new Map<number, number>();
      for (const t of turnOfEach) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
      expect(Math.max(...perTurn.values())).toBe(wanted);
    },
  );

  it("when a thousand connections arrive while the event loop is blocked, then the kernel queues every one (none is left to its retransmits)", async () => {
    // Node's default queue (511) would drop the handshakes past it; the kernel caps ours at somaxconn.
    const cap = Number(fs.readFileSync("/proc/sys/net/core/somaxconn", "utf8"));
    const count = Math.min(1000, cap);
    const { server } = await open(0, 1, "none");
    server.on("connection", (socket: net.Socket) => socket.on("error", () => undefined));
    // Blocked until the client has connected all of them: they can only be in the kernel's queue.
    const client = spawnSync(
      process.execPath,
      [
        "-e",
        `let n = 0; for (let i = 0; i < ${count}; i++) require("net").connect(${portOf(server)}, "${HOST}", () => ++n === ${count} && process.exit(0)).on("error", () => process.exit(3));`,
      ],
      { timeout: 10_000 },
    );
    expect(client.status).toBe(0);
  });

  it("when the port is already in use, then opening fails with EADDRINUSE instead of sharing it", async () => {
    const { server } = await open(0, 1);
    await expect(openAcceptors(okServer(), portOf(server), HOST, 4)).rejects.toMatchObject({
      code: "EADDRINUSE",
    });
  });

  it("when another gateway holds the port with its acceptors, then a second one fails with EADDRINUSE", async () => {
    const { server } = await open(0, 4);
    await expect(openAcceptors(okServer(), portOf(server), HOST, 4)).rejects.toMatchObject({
      code: "EADDRINUSE",
    });
  });

  it("when accepting stops, then new connections are refused and a request in flight is still answered", async () => {
    let answer!: () => void;
    const server = http.createServer((_req, res) => {
      answer = () => res.end("late");
    });
    const acceptors = await openAcceptors(server, 0, HOST, 4);
    opened.push({ server, acceptors });
    const port = portOf(server);
    const inFlight = get(port);
    await new Promise<void>((resolve) => server.once("request", () => resolve()));
    acceptors.stopAccepting();
    await expect(get(port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    answer();
    expect(await inFlight).toBe("late");
  });

  it("when the hook is forced off, then there is one socket, with one warning naming it, and a burst is all answered", async () => {
    const warnings: string[] = [];
    const server = okServer();
    const acceptors = await openAcceptors(server, 0, HOST, 4, "copies", {
      off: ["http-acceptors"],
      warn: (m) => warnings.push(m),
    });
    opened.push({ server, acceptors });
    expect(acceptors.count).toBe(1);
    expect(warnings).toEqual([expect.stringMatching(/'http-acceptors' not applied \(forced off/)]);
    const answers = await Promise.all(Array.from({ length: 100 }, () => get(portOf(server))));
    expect(answers.every((a) => a === "ok")).toBe(true);
  });

  it("when the server lacks an option the hook reads, then there is one socket, with one warning", async () => {
    const warnings: string[] = [];
    const server = okServer();
    Object.defineProperty(server, "keepAliveInitialDelay", { value: undefined });
    const acceptors = await openAcceptors(server, 0, HOST, 4, acceptorSharing(), {
      off: [],
      warn: (m) => warnings.push(m),
    });
    opened.push({ server, acceptors });
    expect(acceptors.count).toBe(1);
    if (acceptorSharing() !== "none" && inRange(process.versions.node, httpAcceptorsHook.versions)) {
      expect(warnings).toEqual([expect.stringMatching(/lacks http\.Server's keepAliveInitialDelay/)]);
    }
  });
});

describe("copyListeningSocket", () => {
  it("when the copies do not all come back in time, then it rejects, saying how many came", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
    const adopted: net.Server[] = [];
    await expect(
      copyListeningSocket(server, 3, { adopt: (copy) => adopted.push(copy), accepted: () => undefined }, 1),
    ).rejects.toThrow(/copies of the listening socket: 0 of 3 after 1 ms/);
    for (const copy of adopted) copy.close();
    server.close();
  });
});

describe("the http-acceptors hook against the installed Node", () => {
  it("when an HTTP server is made, then it keeps every socket option the hook hands on", () => {
    expect(httpAcceptorsHook.check(okServer())).toEqual([]);
  });

  // Where Node cannot share a port there is one socket anyway, and nothing is read.
  (acceptorSharing() !== "none" ? it : it.skip)(
    "when Node can share a port, then it is one the hook was written for",
    () => {
      expect(reasonNotToApply(httpAcceptorsHook, okServer(), [])).toBeNull();
    },
  );
});
