import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { sendCommand } from "../../../../../shared/ops/ctl/client";
import type { CommandRequest } from "../../../../../shared/ops/ctl/commands";
import { RemoteError } from "../../../../../shared/ops/ctl/protocol";
import { openAdminSocket, socketAnswers, type AdminSocket } from "../../../../../shared/ops/ctl/server";

const dirs: string[] = [];
const sockets: AdminSocket[] = [];
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const tmpSocket = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "admin-sock-"));
  dirs.push(dir);
  return path.join(dir, "admin.sock");
};

const log = () => ({ info: jest.fn(), warn: jest.fn() });

async function open(
  handle: (r: CommandRequest) => Promise<unknown> = async (r) => ({ echo: r }),
  extra: {
    maxRequestBytes?: number;
    requestWaitMs?: number;
    path?: string;
    log?: ReturnType<typeof log>;
  } = {},
) {
  const file = extra.path ?? tmpSocket();
  const socket = await openAdminSocket({ path: file, handle, log: extra.log ?? log(), ...extra });
  if (socket) sockets.push(socket);
  return { file, socket };
}

/** Sends raw bytes and reads everything the server answers until it closes the connection. */
const raw = (file: string, bytes: string | Buffer, end = false): Promise<string> =>
  new Promise((resolve, reject) => {
    const c = net.connect(file);
    let out = "";
    c.on("data", (d) => (out += d));
    c.on("close", () => resolve(out));
    c.on("error", reject);
    c.write(bytes);
    if (end) c.end();
  });

const answerOf = (text: string) => JSON.parse(text.trim()) as { ok: boolean; error?: { message: string } };

describe("openAdminSocket", () => {
  it("when a request line arrives, then the command runs and its result is the answer", async () => {
    const handle = jest.fn(async () => ({ access_token: "t" }));
    const { file } = await open(handle);
    const request: CommandRequest = { command: "token", params: { user_id: "u1" } };
    await expect(sendCommand(file, request)).resolves.toEqual({ access_token: "t" });
    expect(handle).toHaveBeenCalledWith(request);
  });

  it("when the socket is opened, then its file is a socket of mode 0600", async () => {
    const { file, socket } = await open();
    expect(socket).not.toBeNull();
    const stat = fs.statSync(file);
    expect(stat.isSocket()).toBe(true);
    expect(stat.mode & 0o777).toBe(0o600);
  });

  it("when the command fails, then the answer carries its message, code, type and fields", async () => {
    const err = Object.assign(new Error("Parameters validation error!"), {
      code: 422,
      type: "VALIDATION_ERROR",
      data: [{ field: "min_version" }],
      stack: "secret stack",
    });
    const { file } = await open(async () => Promise.reject(err));
    const failure = await sendCommand(file, { command: "token", params: {} }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RemoteError);
    expect(failure).toMatchObject({
      message: "Parameters validation error!",
      code: 422,
      type: "VALIDATION_ERROR",
      data: [{ field: "min_version" }],
    });
    // The server's stack stays in the server.
    expect(await raw(file, '{"command":"token"}\n')).not.toContain("secret stack");
  });

  it.each([
    ["not JSON", "{nope\n", /not JSON/],
    ["not an object", "[1]\n", /a request is an object/],
    ["an unknown command", '{"command":"shutdown"}\n', /unknown command "shutdown"/],
    ["params that are not an object", '{"command":"token","params":"u1"}\n', /params must be an object/],
  ])(
    "when the request is %s, then the answer is an error and the server serves the next one",
    async (_, line, message) => {
      const handle = jest.fn(async () => "ran");
      const { file } = await open(handle);
      const answer = answerOf(await raw(file, line));
      expect(answer.ok).toBe(false);
      expect(answer.error!.message).toMatch(message);
      expect(handle).not.toHaveBeenCalled();
      await expect(sendCommand(file, { command: "seed", params: {} })).resolves.toBe("ran");
    },
  );

  it("when a request is larger than the bound, then the answer is an error without reading the rest", async () => {
    const handle = jest.fn(async () => "ran");
    const { file } = await open(handle, { maxRequestBytes: 1000 });
    const answer = answerOf(await raw(file, `{"command":"seed","params":{"x":"${"a".repeat(5000)}"}}\n`));
    expect(answer.error!.message).toMatch(/longer than 1000 bytes/);
    expect(handle).not.toHaveBeenCalled();
  });

  it("when no whole line comes within the wait, then the answer is an error and the connection closes", async () => {
    const { file } = await open(undefined, { requestWaitMs: 100 });
    const answer = answerOf(await raw(file, '{"command":"seed"'));
    expect(answer.error!.message).toMatch(/no whole line within 100 ms/);
  });

  it("when a client holds its connection open after the answer, then the server closes it all the same", async () => {
    const { file } = await open(async () => "ran");
    // allowHalfOpen: this client never ends its side by itself.
    const client = net.connect({ path: file, allowHalfOpen: true });
    let out = "";
    client.on("data", (d) => (out += d));
    const ended = new Promise((r) => client.on("end", r));
    const failed = new Promise<NodeJS.ErrnoException>((r) => client.on("error", r));
    client.write('{"command":"seed"}\n');
    await ended;
    expect(JSON.parse(out)).toEqual({ ok: true, result: "ran" });
    // Writing on finds nobody reading: the server's end is closed, not merely ended.
    const writes = setInterval(() => client.write("more\n"), 20);
    const err = await failed.finally(() => clearInterval(writes));
    expect(err.code).toBe("EPIPE");
    client.destroy();
  });

  it("when a client goes away before its answer, then the server stays up and serves the next", async () => {
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const { file } = await open(async (r) => (r.command === "seed" ? slow.then(() => "late") : "ok"));
    const gone = net.connect(file);
    gone.write('{"command":"seed"}\n');
    await new Promise((r) => setTimeout(r, 50));
    gone.destroy();
    release();
    await new Promise((r) => setTimeout(r, 50));
    await expect(sendCommand(file, { command: "token", params: { user_id: "u" } })).resolves.toBe("ok");
  });

  it("when a socket is left by a process that was killed, then it is removed and listened on again", async () => {
    const file = tmpSocket();
    // A socket nobody accepts on: listened on under another name, renamed, and the listener closed
    // (which removes only the first name), as a killed server leaves one.
    const first = `${file}.first`;
    const old = net.createServer();
    await new Promise<void>((r) => old.listen(first, r));
    fs.renameSync(first, file);
    await new Promise((r) => old.close(r));
    expect(fs.statSync(file).isSocket()).toBe(true);
    expect(await socketAnswers(file)).toBe(false);

    const logger = log();
    const { socket } = await open(async () => "ran", { path: file, log: logger });
    expect(socket).not.toBeNull();
    expect(logger.info).toHaveBeenCalledWith(
      expect.stringMatching(/Removed .*admin.sock, left by a process/),
    );
    await expect(sendCommand(file, { command: "seed", params: {} })).resolves.toBe("ran");
  });

  it("when another process takes commands on the socket, then it is left alone and none is opened", async () => {
    const { file } = await open(async () => "first");
    const logger = log();
    const second = await openAdminSocket({ path: file, handle: async () => "second", log: logger });
    expect(second).toBeNull();
    expect(logger.warn).toHaveBeenCalledWith(expect.stringMatching(/Another process takes commands/));
    await expect(sendCommand(file, { command: "seed", params: {} })).resolves.toBe("first");
  });

  it("when something else than a socket is at the path, then it is not deleted and none is opened", async () => {
    const file = tmpSocket();
    fs.writeFileSync(file, "mine");
    const logger = log();
    const { socket } = await open(undefined, { path: file, log: logger });
    expect(socket).toBeNull();
    expect(fs.readFileSync(file, "utf8")).toBe("mine");
    expect(logger.warn).toHaveBeenCalledWith(expect.stringMatching(/is not a socket/));
  });

  it("when the path is longer than a Unix socket's, then none is opened and a warning says so", async () => {
    const logger = log();
    const { socket } = await open(undefined, {
      path: path.join(os.tmpdir(), "x".repeat(120), "admin.sock"),
      log: logger,
    });
    expect(socket).toBeNull();
    expect(logger.warn).toHaveBeenCalledWith(expect.stringMatching(/longer than a Unix socket's path/));
  });

  it("when closed, then the file is gone, and a command under way still gets its answer", async () => {
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const { file, socket } = await open(() => slow.then(() => "done"));
    const pending = sendCommand(file, { command: "seed", params: {} });
    await new Promise((r) => setTimeout(r, 50));
    const closed = socket!.close();
    expect(fs.existsSync(file)).toBe(false);
    release();
    await expect(pending).resolves.toBe("done");
    await closed;
    expect(await socketAnswers(file)).toBe(false);
  });
});
