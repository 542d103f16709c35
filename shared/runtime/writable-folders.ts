/**
 * The folders a process must be able to write, checked before anything starts: in the shipped image
 * the root filesystem is read-only and only declared volumes are writable, so a missing volume must say
 * which setting points where, in one line, rather than fail with EACCES or EROFS deep in a service's
 * start (and a supervisor restarting it in a loop). bin/start.ts prints the line and exits 1.
 */
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config";
import { ConfigError } from "../errors";

export interface FolderToWrite {
  /** The setting that names the folder. */
  setting: "DATA_DIR";
  dir: string;
  /** What needs it, for the message. */
  purpose: string;
}

/** Services that keep documents in the store (the gateway keeps none). */
const STORING = new Set(["auth", "users", "rounds", "stores", "settings", "notifier"]);

export function foldersToWrite(config: Pick<Config, "services" | "mongoUri" | "dataDir">): FolderToWrite[] {
  const folders: FolderToWrite[] = [];
  const embedded = !config.mongoUri;
  if (embedded && config.services.some((s) => STORING.has(s))) {
    folders.push({
      setting: "DATA_DIR",
      dir: config.dataDir,
      purpose: "the embedded document store is kept there",
    });
  }
  // With MONGO_URI the pictures are in GridFS (services/stores/open-blob-store.ts).
  if (embedded && config.services.includes("stores")) {
    folders.push({
      setting: "DATA_DIR",
      dir: path.join(config.dataDir, "media"), // services/stores/open-blob-store.ts, mediaDirOf
      purpose: "uploaded pictures are kept there",
    });
  }
  return folders;
}

/** Thrown when a folder cannot be made or written: its message is the one line start-up prints. */
export class FolderNotWritableError extends ConfigError {}

/** Makes each folder (with its parents) and checks this process may write in it; throws on the first that fails. */
export function ensureWritable(folders: FolderToWrite[]): void {
  for (const { setting, dir, purpose } of folders) {
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.accessSync(dir, fs.constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new FolderNotWritableError(
        `${setting}: ${dir} is not writable by this process (${code}); ${purpose}: ` +
          `mount a writable volume there, or set ${setting} to a folder that is one`,
      );
    }
  }
}
