/** Facts about the embedded store's folder that start-up and the CLI share. */
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config";
import { dbDir } from "../storage";
import type { DemoManifest } from "./seed";

export { dbDir };
export const manifestPath = (config: Config): string => path.join(config.dataDir, "demo-manifest.json");

/** True when the embedded store has never been written (no collection file yet). */
export function embeddedStoreIsEmpty(config: Config): boolean {
  const dir = dbDir(config);
  if (!fs.existsSync(dir)) return true;
  return !fs.readdirSync(dir).some((f) => f.endsWith(".db"));
}

export function writeManifest(config: Config, manifest: DemoManifest): string {
  const file = manifestPath(config);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  return file;
}
