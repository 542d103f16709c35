/**
 * Operations CLI (the spec has no admin endpoints):
 *   seed [--reset]     load the demo dataset, print its manifest (JSON) on stdout
 *   token <user_id>    print a token set (spec §2.15) for the user
 * Embedded mode works on DATA_DIR while the server is stopped (the embedded store is single-process); with
 * TRANSPORTER set the CLI joins the cluster as a node and calls the running services.
 */
import fs from "node:fs";
import mongoose from "mongoose";
import type { ServiceBroker } from "moleculer";
import { isEmbedded, loadConfig, type Config } from "../shared/config";
import { call } from "../shared/contracts";
import { dbDir, writeManifest } from "../shared/ops/embedded";
import { acquireLock, releaseLock } from "../shared/storage/nedb";
import { seed } from "../shared/ops/seed";
import { createBroker } from "../shared/runtime/broker";

const usage = `Usage: npm run ctl -- <command>
  seed [--reset]     load the demo dataset and print its manifest
  token <user_id>    print a token set for a user`;

async function resetStore(config: Config): Promise<void> {
  if (config.mongoUri) {
    const conn = await mongoose.createConnection(config.mongoUri).asPromise();
    await conn.dropDatabase();
    await conn.close();
  } else {
    // Take the folder first: a running server holds it, and its files must not vanish under it.
    const dir = dbDir(config);
    acquireLock(dir);
    try {
      for (const f of fs.readdirSync(dir)) if (f.endsWith(".db")) fs.rmSync(`${dir}/${f}`, { force: true });
    } finally {
      releaseLock(dir);
    }
  }
}

function brokerFor(config: Config): ServiceBroker {
  // Embedded: run the domain services here. Distributed: be a bare node that calls the cluster.
  const services = isEmbedded(config) ? config.services.filter((s) => s !== "gateway") : [];
  return createBroker({ ...config, logLevel: "warn" }, services);
}

async function run(args: string[]): Promise<void> {
  const [command, ...rest] = args;
  const config = loadConfig();
  if (command === "seed") {
    if (rest.includes("--reset")) await resetStore(config);
    const broker = brokerFor(config);
    await broker.start();
    try {
      await broker.waitForServices(["users", "auth", "stores", "rounds"], 30_000);
      const manifest = await seed(broker, config.publicUrl || null);
      if (isEmbedded(config) && !config.mongoUri) writeManifest(config, manifest);
      process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
    } finally {
      await broker.stop();
    }
  } else if (command === "token" && rest[0]) {
    const broker = brokerFor(config);
    await broker.start();
    try {
      await broker.waitForServices(["auth", "users"], 30_000);
      const tokens = await call(broker, "auth.issueTokens", { user_id: rest[0] });
      process.stdout.write(`${JSON.stringify(tokens, null, 2)}\n`);
    } finally {
      await broker.stop();
    }
  } else {
    process.stderr.write(`${usage}\n`);
    process.exitCode = 2;
  }
}

run(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
