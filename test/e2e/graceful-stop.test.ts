// Tier: one process only (`npm start` as one process under SIGTERM and SIGINT).
/**
 * `npm start` (embedded, one process) under SIGTERM and SIGINT: it stops accepting connections at once,
 * finishes the upload in flight, and exits 0; with SHUTDOWN_DELAY_MS it first reports not ready and
 * serves that long, each answer closing its connection.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { freePort } from "../support/brokers";
import { bin, buildDist, childEnv, root } from "../support/processes";
import { eventFields, eventForm, pngBytes } from "../support/upload";

let dataDir: string;
let port: number;

const env = (extra: Record<string, string> = {}) =>
  childEnv({ NODE_ENV: "development", LOG_LEVEL: "warn", DATA_DIR: dataDir, PORT: String(port), ...extra });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startServer(
  extra: Record<string, string> = {},
): Promise<{ child: ChildProcess; exit: Promise<number | null> }> {
  const child = spawn(process.execPath, [bin("start")], { cwd: root, env: env(extra), stdio: "ignore" });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, exit };
    await sleep(100);
  }
  child.kill("SIGKILL");
  throw new Error("server did not start");
}

let manifest: { users: { alice: { access_token: string } }; stores: { alice_store: number } };

beforeAll(async () => {
  buildDist();
  port = await freePort();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "graceful-stop-"));
  const seeded = spawnSync(process.execPath, [bin("ctl"), "seed"], {
    cwd: root,
    env: env(),
    encoding: "utf8",
  });
  if (seeded.status !== 0) throw new Error(seeded.stderr);
  manifest = JSON.parse(seeded.stdout);
}, 120_000);

beforeEach(async () => {
  port = await freePort();
});

afterAll(() => {
  fs.rmSync(dataDir, { recursive: true, force: true });
});

it("when SIGTERM arrives in the middle of an upload, then the server refuses new connections, finishes the upload and exits 0", async () => {
  const server = await startServer();
  // The multipart body of a store event, sent in two halves with the signal in between.
  const form = new Response(
    eventForm(eventFields({ name: "Uploaded while stopping" }), pngBytes(512 * 1024)),
  );
  const body = Buffer.from(await form.arrayBuffer());
  const half = Math.floor(body.length / 2);
  const req = http.request(`http://127.0.0.1:${port}/stores/${manifest.stores.alice_store}/events`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${manifest.users.alice.access_token}`,
      "content-type": form.headers.get("content-type") as string,
      "content-length": String(body.length),
    },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
  });
  req.write(body.subarray(0, half));
  await sleep(500); // the gateway has authenticated and is reading the picture

  server.child.kill("SIGTERM");
  await sleep(500);
  // No new work: the listening socket is closed while the upload is still open.
  const refused = await fetch(`http://127.0.0.1:${port}/health`).then(
    () => "answered",
    (err: { cause?: { code?: string } }) => err.cause?.code,
  );
  expect(refused).toBe("ECONNREFUSED");
  expect(server.child.exitCode).toBeNull();

  req.end(body.subarray(half));
  const res = await answer;
  expect(res.status).toBe(200);
  expect(JSON.parse(res.body)).toEqual(expect.objectContaining({ name: "Uploaded while stopping" }));
  expect(await server.exit).toBe(0);
}, 60_000);

it("when SIGINT (Ctrl-C) arrives at an idle server with an open keep-alive connection, then it exits 0 within a second or two", async () => {
  const server = await startServer();
  // fetch keeps its connection alive: the stop must not wait for the client to close it.
  expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  const signalAt = Date.now();
  server.child.kill("SIGINT");
  expect(await server.exit).toBe(0);
  expect(Date.now() - signalAt).toBeLessThan(3000);
}, 60_000);

/** A GET with Node's http client: its status, and the Connection header fetch does not show. */
function get(path: string): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, agent: new http.Agent({ keepAlive: true }) }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }),
        );
      })
      .on("error", reject);
  });
}

it("when SIGTERM arrives with SHUTDOWN_DELAY_MS, then /health/ready is 503 at once, requests are served for the delay with Connection: close, then refused, and it exits 0", async () => {
  const server = await startServer({ SHUTDOWN_DELAY_MS: "2000" });
  expect((await get("/health/ready")).status).toBe(200);
  expect((await get("/health")).connection).toBe("keep-alive");
  const signalAt = Date.now();
  server.child.kill("SIGTERM");
  await sleep(300);

  const ready = await get("/health/ready");
  expect(ready.status).toBe(503);
  expect(JSON.parse(ready.body)).toEqual({ status: "not ready", checks: { process: "stopping" } });
  const served = await get("/openapi.json");
  expect(served).toMatchObject({ status: 200, connection: "close" });
  expect(Date.now() - signalAt).toBeLessThan(2000);

  await sleep(2000 - (Date.now() - signalAt) + 500);
  const refused = await get("/health").then(
    () => "answered",
    (err: NodeJS.ErrnoException) => err.code,
  );
  expect(refused).toBe("ECONNREFUSED");
  expect(await server.exit).toBe(0);
}, 60_000);
