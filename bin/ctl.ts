/**
 * Operations CLI (the spec has no admin endpoints). Every command calls the services' own actions
 * (shared/ops/ctl/commands.ts), in one of three places:
 * - embedded, with a server running: the server, through its admin socket DATA_DIR/admin.sock;
 * - embedded, with the server stopped: this process, on DATA_DIR's files;
 * - with TRANSPORTER set: the cluster, which this process joins as a node.
 * Its output is the command's answer as JSON on stdout; a failure is one line on stderr and exit 1, a
 * wrong command line one line and exit 2 (docs/decisions/0142-cli-beside-a-running-server.md).
 */
import fs from "node:fs";
import type { ServiceBroker } from "moleculer";
import { isEmbedded, loadConfig, type Config } from "../shared/config";
import { dbDir, writeManifest } from "../shared/ops/embedded";
import { parseCommandLine, UsageError, type ParsedCommand } from "../shared/ops/ctl/args";
import { sendCommand } from "../shared/ops/ctl/client";
import { runCommand, type CommandRequest } from "../shared/ops/ctl/commands";
import { adminSocketPath } from "../shared/ops/ctl/protocol";
import { planOf } from "../shared/ops/ctl/requests";
import { socketAnswers } from "../shared/ops/ctl/server";
import { silenceHookWarnings } from "../shared/runtime/internals";
import { createBroker } from "../app/broker";
import { acquireLock, lockHolder, releaseLock } from "../shared/storage/nedb";

type Run = (request: CommandRequest) => Promise<unknown>;

/** Whether the store is DATA_DIR's embedded files (not MongoDB, not memory). */
const onFiles = (config: Config): boolean => isEmbedded(config) && !config.mongoUri;

async function resetStore(config: Config): Promise<void> {
  if (config.mongoUri) {
    const { default: mongoose } = await import("mongoose");
    const { connectionOptions } = await import("../shared/storage/mongo");
    const conn = await mongoose.createConnection(config.mongoUri, connectionOptions(config)).asPromise();
    await conn.dropDatabase();
    await conn.close();
    return;
  }
  // Take the folder first: a running server holds it, and its files must not vanish under it.
  const dir = dbDir(config);
  acquireLock(dir);
  try {
    for (const f of fs.readdirSync(dir)) if (f.endsWith(".db")) fs.rmSync(`${dir}/${f}`, { force: true });
  } finally {
    releaseLock(dir);
  }
}

/** Embedded: run the domain services here. Distributed: be a bare node that calls the cluster. */
async function withBroker<T>(config: Config, fn: (run: Run) => Promise<T>): Promise<T> {
  if (onFiles(config)) {
    // A server that holds the store but takes no commands (an older version, its socket removed): say so
    // before starting anything.
    const holder = lockHolder(dbDir(config));
    if (holder !== null) {
      throw new Error(
        `The embedded store in ${dbDir(config)} is in use by process ${holder}, which takes no commands on ${adminSocketPath(config)}; stop it first`,
      );
    }
  }
  const services = isEmbedded(config) ? config.services.filter((s) => s !== "gateway") : [];
  // No metrics server: in a container the CLI runs beside the service, which holds METRICS_PORT. No log:
  // the output is the command's answer (a server logs what its services meet).
  const broker: ServiceBroker = createBroker({ ...config, metricsPort: 0 }, services, { quiet: true });
  await broker.start();
  try {
    await broker.waitForServices(["users", "auth", "stores", "rounds", "settings"], 30_000);
    return await fn((request) => runCommand(broker, request, { baseUrl: config.publicUrl || null }));
  } finally {
    await broker.stop();
  }
}

/** The running embedded server's admin socket, if one answers there. */
async function serverSocket(config: Config): Promise<string | null> {
  const file = adminSocketPath(config);
  if (!isEmbedded(config) || !fs.existsSync(file)) return null;
  // One left by a killed server answers nothing: the store is then this process's to open.
  return (await socketAnswers(file)) ? file : null;
}

async function execute(command: ParsedCommand, config: Config): Promise<unknown> {
  const plan = planOf(command);
  const socket = await serverSocket(config);
  if (command.name === "seed" && command.flags.reset) {
    if (socket) {
      throw new Error(
        `seed --reset deletes the store's files, which the server running on ${config.dataDir} holds: stop it first`,
      );
    }
    await resetStore(config);
  }
  const runAll = async (run: Run) => {
    const results: unknown[] = [];
    for (const request of plan.requests) results.push(await run(request));
    return plan.output(results);
  };
  const output = socket
    ? await runAll((request) => sendCommand(socket, request))
    : await withBroker(config, runAll);
  if (command.name === "seed" && isEmbedded(config) && !config.mongoUri) {
    writeManifest(config, output as Parameters<typeof writeManifest>[1]);
  }
  return output;
}

/** One line: the message, and for a validation error the offending fields. */
function describe(err: unknown): string {
  const e = err as { message?: string; data?: unknown };
  const fields = Array.isArray(e.data) ? ` ${JSON.stringify(e.data)}` : "";
  return `${e.message ?? String(err)}${fields}`.replace(/\s*\n\s*/g, " ");
}

async function main(argv: string[]): Promise<void> {
  // The services' hooks warn in a server's log, not in the answer of a command.
  silenceHookWarnings();
  const line = parseCommandLine(argv);
  if ("help" in line) {
    process.stdout.write(line.help);
    return;
  }
  const output = await execute(line.command, loadConfig());
  process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${describe(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
