/**
 * Starts the services this process runs (SERVICES), embedded by default: one broker, no transporter,
 * memory cacher, embedded store under DATA_DIR. On an empty DATA_DIR (outside production) it seeds the
 * demo dataset and prints how to call the API. Embedded, it takes the operations CLI's commands on
 * DATA_DIR/admin.sock (shared/ops/ctl/server). SIGTERM or SIGINT stops it gracefully (shared/runtime/shutdown).
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { isEmbedded, loadConfig, retiredSettingsIn, runsEverything } from "../shared/config";
import { embeddedStoreIsEmpty, writeManifest } from "../shared/ops/embedded";
import { seed } from "../shared/ops/seed";
import { createBroker } from "../app/broker";
import { installCrashHandlers } from "../shared/runtime/crash";
import { startHealthServer } from "../shared/runtime/health-server";
import { STOPPING_EVENT, stopOnSignals } from "../shared/runtime/shutdown";
import { runCommand } from "../shared/ops/ctl/commands";
import { adminSocketPath } from "../shared/ops/ctl/protocol";
import { openAdminSocket } from "../shared/ops/ctl/server";
import { ensureWritable, foldersToWrite } from "../shared/runtime/writable-folders";

async function main(): Promise<void> {
  const config = loadConfig();
  // Production refuses JWT_SECRET (loadConfig); elsewhere a retired setting is named and ignored.
  for (const line of retiredSettingsIn()) process.stderr.write(`Warning: ${line}\n`);
  // Before anything starts: a folder it cannot write is one line naming its setting, not a stack trace.
  ensureWritable(foldersToWrite(config));
  // Demo data is for trying the whole system out: a process running a part of it (a test's cluster, a
  // service on its own) never seeds, and neither does production.
  const shouldSeed =
    isEmbedded(config) &&
    !config.mongoUri &&
    runsEverything(config) &&
    config.nodeEnv !== "production" &&
    embeddedStoreIsEmpty(config);

  const broker = createBroker(config);
  stopOnSignals(broker, { delayMs: config.shutdownDelayMs, timeoutMs: config.shutdownTimeoutMs });
  // An exception nobody caught is logged with its request id and ends the process (exit 1) for its
  // supervisor to restart; it is never swallowed.
  installCrashHandlers({ logger: broker.getLogger("process") });
  await broker.start();
  if (config.healthPort > 0 && !config.services.includes("gateway")) {
    const health = startHealthServer(broker, config.healthPort, config.services, config.host);
    broker.localBus.on("$broker.stopped", () => health.close());
  }

  const gateway = broker.getLocalService("gateway") as unknown as { server?: Server } | undefined;
  const port = gateway?.server ? (gateway.server.address() as AddressInfo).port : null;
  const url = config.publicUrl || (port !== null ? `http://localhost:${port}` : null);

  const manifest = shouldSeed ? await seed(broker, url) : null;

  // Embedded, the server holds the store: the CLI hands it its commands, which run here through the
  // same functions as in the CLI's own broker (docs/decisions/0142-cli-beside-a-running-server.md).
  // A distributed process has none: the CLI joins the cluster instead. Open before the banner below,
  // which tells how to renew the tokens with the CLI. Always on: only the server's own user may use the
  // socket, who could stop the server anyway, and without it the CLI could not work beside a server.
  if (isEmbedded(config)) {
    const admin = await openAdminSocket({
      path: adminSocketPath(config),
      handle: (request) => runCommand(broker, request, { baseUrl: url }),
      log: broker.getLogger("admin"),
    });
    // No new command once the stop begins; the file goes with it.
    if (admin) broker.localBus.once(STOPPING_EVENT, () => void admin.close());
  }

  if (manifest) {
    const file = writeManifest(config, manifest);
    const lines = [
      "",
      `API:      ${url}`,
      `Docs:     ${url}/docs (OpenAPI: ${url}/openapi.json)`,
      `Manifest: ${file} (demo users, tokens, rounds; tokens valid 24 h, renew with: npm run ctl -- token <user_id>)`,
      "Try:",
      `  curl -s -H "Authorization: Bearer ${manifest.users.alice.access_token}" ${url}/rounds/${manifest.rounds.open}`,
      "",
    ];
    process.stdout.write(lines.join("\n"));
  } else if (url) {
    process.stdout.write(`\nAPI: ${url}\nDocs: ${url}/docs (OpenAPI: ${url}/openapi.json)\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`Start-up failed: ${(err as Error).message}\n`);
  process.exit(1);
});
