/**
 * The gateway's listening sockets (services/gateway/acceptors): several on one port where Node and the
 * platform can share it, one elsewhere; a port in use is refused as with one socket; stopping closes all.
 */
import http from "node:http";
import net from "node:net";
import { canShareAcceptance, openAcceptors, type Acceptors } from "../../services/gateway/acceptors";

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

describe("canShareAcceptance", () => {
  it.each([
    ["20.20.2", "linux", false],
    ["22.11.0", "linux", false],
    ["22.12.0", "linux", true],
    ["23.0.0", "linux", false],
    ["23.1.0", "linux", true],
    ["24.21.0", "linux", true],
    ["24.21.0", "darwin", false],
  ])("when Node is %s on %s, then sharing a port is %s", (version, platform, expected) => {
    expect(canShareAcceptance(version, platform as NodeJS.Platform)).toBe(expected);
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

  async function open(port: number, wanted: number): Promise<{ server: http.Server; acceptors: Acceptors }> {
    const server = okServer();
    const acceptors = await openAcceptors(server, port, HOST, wanted);
    opened.push({ server, acceptors });
    return { server, acceptors };
  }

  it("when four are asked for, then there are four where the port can be shared (else one), and a burst of 300 connections is all answered", async () => {
    const { server, acceptors } = await open(0, 4);
    expect(acceptors.count).toBe(canShareAcceptance() ? 4 : 1);
    const answers = await Promise.all(Array.from({ length: 300 }, () => get(portOf(server))));
    expect(answers.every((a) => a === "ok")).toBe(true);
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
});
