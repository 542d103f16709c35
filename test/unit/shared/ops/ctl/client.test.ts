import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { sendCommand } from "../../../../../shared/ops/ctl/client";

const dirs: string[] = [];
const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A stand-in server that does `onLine` with each request line. */
async function server(onLine: (socket: net.Socket, line: string) => void): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "admin-client-"));
  dirs.push(dir);
  const file = path.join(dir, "admin.sock");
  const srv = net.createServer((socket) => {
    let buf = "";
    socket.on("data", (d) => {
      buf += d;
      if (buf.includes("\n")) onLine(socket, buf.slice(0, buf.indexOf("\n")));
    });
    socket.on("error", () => undefined);
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(file, r));
  return file;
}

const request = { command: "token" as const, params: { user_id: "u1" } };

describe("sendCommand", () => {
  it("when the server answers ok, then the result is returned and the request was one JSON line", async () => {
    let seen = "";
    const file = await server((s, line) => {
      seen = line;
      s.end('{"ok":true,"result":{"n":1}}\n');
    });
    await expect(sendCommand(file, request)).resolves.toEqual({ n: 1 });
    expect(JSON.parse(seen)).toEqual(request);
  });

  it("when the server does not answer within the wait, then it fails saying so", async () => {
    const file = await server(() => undefined);
    await expect(sendCommand(file, request, 100)).rejects.toThrow(
      /No answer from the server .*within 100 ms/,
    );
  });

  it("when the server closes without an answer, then it fails saying so", async () => {
    const file = await server((s) => s.end());
    await expect(sendCommand(file, request)).rejects.toThrow(/closed before a whole line/);
  });

  it("when the answer is not JSON or too large, then it fails saying so", async () => {
    const garbled = await server((s) => s.end("<html>\n"));
    await expect(sendCommand(garbled, request)).rejects.toThrow(/something else than JSON/);
    const large = await server((s) => s.end(`{"ok":true,"result":"${"a".repeat(2000)}"}\n`));
    await expect(sendCommand(large, request, 1000, 1000)).rejects.toThrow(/longer than 1000 bytes/);
  });

  it("when nobody listens on the socket, then it fails with the connection's error", async () => {
    await expect(sendCommand(path.join(os.tmpdir(), "no-such-admin.sock"), request)).rejects.toThrow(
      /ENOENT/,
    );
  });
});
