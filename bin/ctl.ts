/**
 * Operations CLI (the spec has no admin endpoints). Every command calls the services' own actions.
 * Embedded mode works on DATA_DIR while the server is stopped (the embedded store is single-process);
 * with TRANSPORTER set the CLI joins the cluster as a node and calls the running services.
 */
import fs from "node:fs";
import type { ServiceBroker } from "moleculer";
import { isEmbedded, loadConfig, type Config } from "../shared/config";
import { call } from "../shared/contracts";
import { pagesOf } from "../shared/contracts/paging";
import { dbDir, writeManifest } from "../shared/ops/embedded";
import { seed } from "../shared/ops/seed";
import { createBroker } from "../app/broker";
import { acquireLock, releaseLock } from "../shared/storage/nedb";

const usage = `Usage: npm run -s ctl -- <command>   (built, as in the image: node dist/bin/ctl.js <command>)
  seed [--reset]                                   load the demo dataset and print its manifest
  token <user_id>                                  print a token set for a user
  user add --phone P --username U [--first F] [--last L] [--avatar URL]
  user remove <user_id>                            mark removed and revoke their refresh tokens
  friends add <user_id> <user_id>                  make two users friends
  apikey add --scope app|notifications [--label L] print a new API key (shown once)
  apikey revoke <key_id>
  app-version set --platform android|ios|ru_store --current V --min V
  device add <user_id> <token>                     register a push registration token
  device import <file>                             register many: one "<user_id> <token>" per line`;

class UsageError extends Error {}

/** `--name value` pairs and the positional words, in order. */
function parseArgs(args: string[]): { words: string[]; flags: Record<string, string> } {
  const words: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith("--")) {
      const name = args[i].slice(2);
      const value = args[i + 1];
      flags[name] = value !== undefined && !value.startsWith("--") ? (i++, value) : "true";
    } else {
      words.push(args[i]);
    }
  }
  return { words, flags };
}

function need(flags: Record<string, string>, name: string): string {
  const value = flags[name];
  if (!value || value === "true") throw new UsageError(`--${name} is required`);
  return value;
}

async function resetStore(config: Config): Promise<void> {
  if (config.mongoUri) {
    const { default: mongoose } = await import("mongoose");
    const { connectionOptions } = await import("../shared/storage/mongo");
    const conn = await mongoose
      .createConnection(config.mongoUri, connectionOptions(false, config))
      .asPromise();
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
async function withBroker<T>(config: Config, fn: (broker: ServiceBroker) => Promise<T>): Promise<T> {
  const services = isEmbedded(config) ? config.services.filter((s) => s !== "gateway") : [];
  // No metrics server: in a container the CLI runs beside the service, which holds METRICS_PORT.
  const broker = createBroker({ ...config, logLevel: "warn", metricsPort: 0 }, services);
  await broker.start();
  try {
    await broker.waitForServices(["users", "auth", "stores", "rounds", "settings"], 30_000);
    return await fn(broker);
  } finally {
    await broker.stop();
  }
}

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
};

async function run(args: string[]): Promise<void> {
  const { words, flags } = parseArgs(args);
  const [command, sub, ...rest] = words;
  const config = loadConfig();

  if (command === "seed") {
    if (flags.reset) await resetStore(config);
    const manifest = await withBroker(config, (b) => seed(b, config.publicUrl || null));
    if (isEmbedded(config) && !config.mongoUri) writeManifest(config, manifest);
    return print(manifest);
  }
  if (command === "token" && sub) {
    return print(await withBroker(config, (b) => call(b, "auth.issueTokens", { user_id: sub })));
  }
  if (command === "user" && sub === "add") {
    const params = {
      phone: need(flags, "phone"),
      username: need(flags, "username"),
      first_name: flags.first ?? null,
      last_name: flags.last ?? null,
      avatar_url: flags.avatar ?? null,
    };
    return print(await withBroker(config, (b) => call(b, "users.create", params)));
  }
  if (command === "user" && sub === "remove" && rest[0]) {
    return print(await withBroker(config, (b) => call(b, "users.remove", { id: rest[0] })));
  }
  if (command === "friends" && sub === "add" && rest.length === 2) {
    return print(await withBroker(config, (b) => call(b, "users.addFriends", { a: rest[0], b: rest[1] })));
  }
  if (command === "apikey" && sub === "add") {
    const scope = need(flags, "scope");
    if (scope !== "app" && scope !== "notifications")
      throw new UsageError("--scope must be app or notifications");
    return print(
      await withBroker(config, (b) => call(b, "auth.createApiKey", { scope, label: flags.label })),
    );
  }
  if (command === "apikey" && sub === "revoke" && rest[0]) {
    return print(await withBroker(config, (b) => call(b, "auth.revokeApiKey", { id: rest[0] })));
  }
  if (command === "device" && sub === "add" && rest.length === 2) {
    return print(
      await withBroker(config, (b) => call(b, "users.addDevice", { user_id: rest[0], token: rest[1] })),
    );
  }
  if (command === "device" && sub === "import" && rest[0]) {
    const devices = fs
      .readFileSync(rest[0], "utf8")
      .split("\n")
      .map((line) => line.trim().split(/\s+/))
      .filter((parts) => parts.length === 2 && parts[0] !== "")
      .map(([user_id, token]) => ({ user_id, token }));
    const added = await withBroker(config, async (b) => {
      let n = 0;
      // Pages bounded by bytes too: each call is one packet (shared/contracts/paging).
      for (const page of pagesOf(devices, 10_000))
        n += (await call(b, "users.importDevices", { devices: page })).added;
      return n;
    });
    return print({ read: devices.length, added });
  }
  if (command === "app-version" && sub === "set") {
    const params = {
      platform: need(flags, "platform") as "android" | "ios" | "ru_store",
      current_version: need(flags, "current"),
      min_version: need(flags, "min"),
    };
    return print(await withBroker(config, (b) => call(b, "settings.setVersions", params)));
  }
  throw new UsageError(command ? `Unknown command: ${args.join(" ")}` : "No command given");
}

/** Errors of the services carry a message and, for 422, the offending fields. */
function describe(err: unknown): string {
  const e = err as { message?: string; data?: unknown };
  const fields = Array.isArray(e.data) ? ` ${JSON.stringify(e.data)}` : "";
  return `${e.message ?? String(err)}${fields}`;
}

run(process.argv.slice(2)).catch((err) => {
  if (err instanceof UsageError) {
    process.stderr.write(`${err.message}\n${usage}\n`);
    process.exit(2);
  }
  process.stderr.write(`${describe(err)}\n`);
  process.exit(1);
});
