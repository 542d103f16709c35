/**
 * What a process on embedded defaults loads: the whole system started in a child process (its own
 * module cache, as in production), then the modules it holds are read from `require.cache`. The MongoDB
 * engine and Swagger UI's browser bundle stay out of it (docs/decisions/0116-unused-modules-not-loaded.md).
 */
import { spawnSync } from "node:child_process";
import { root } from "../support/processes";

const script = `
const { loadConfig } = require("./shared/config");
const { createBroker } = require("./app/broker");
const broker = createBroker(loadConfig());
broker.start().then(async () => {
  const res = await fetch("http://127.0.0.1:" + broker.getLocalService("gateway").server.address().port + "/docs/swagger-ui.css");
  const loaded = Object.keys(require.cache)
    .map((file) => file.match(/node_modules\\/(mongoose|mongodb|bson)\\//)?.[1] ?? file.match(/swagger-ui-dist\\/(.*)/)?.[1])
    .filter(Boolean);
  await broker.stop();
  console.log(JSON.stringify({ docsStatus: res.status, loaded: [...new Set(loaded)] }));
});
`;

function startAndList(): { docsStatus: number; loaded: string[] } {
  const base = { ...process.env };
  for (const name of ["MONGO_URI", "TRANSPORTER", "CACHER", "SERVICES"]) delete base[name];
  const res = spawnSync(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], {
    cwd: root,
    env: { ...base, STORE_IN_MEMORY: "true", PORT: "0", LOG_LEVEL: "warn" },
    encoding: "utf8",
    timeout: 60_000,
  });
  if (res.status !== 0) throw new Error(`the child process failed (${res.status}): ${res.stderr}`);
  return JSON.parse(res.stdout.trim().split("\n").pop() as string) as {
    docsStatus: number;
    loaded: string[];
  };
}

describe("modules an embedded process loads (child process)", () => {
  it("when the system starts without MONGO_URI, then neither the MongoDB engine nor Swagger UI's bundle is loaded, and /docs still serves its assets", () => {
    const { docsStatus, loaded } = startAndList();
    expect(docsStatus).toBe(200);
    expect(loaded).toEqual([]);
  });
});
