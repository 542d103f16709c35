/**
 * Blob storage port and its local-filesystem engine (DATA_DIR/media); with MONGO_URI
 * the pictures go to MongoDB GridFS instead (gridfs-blob-store.ts, docs/decisions/0023). Uploads are
 * written as they arrive (never held whole in memory), counted and sniffed on the way (and hashed, when
 * asked), either from a stream (`stage`) or chunk by chunk (`begin`/`append`/`finish`): open-uploads.ts,
 * the same for both engines. `commit` moves a staged upload into place under a random name (never the
 * client's file name), `discard` deletes it. Staged uploads nobody committed (a crash between the two),
 * and pictures in place no item names, are swept by the stores service (services/stores/media-sweep.ts).
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { extensionOf, type ImageMime } from "./image-type";
import { OpenUploads, type BeginOptions, type Sink, type Staged } from "./open-uploads";

export type { BeginOptions, Staged } from "./open-uploads";

export interface BlobStore {
  stage(source: Readable, maxBytes: number): Promise<Staged>;
  begin(options?: BeginOptions): Promise<string>;
  append(stagedId: string, chunk: Buffer, maxBytes: number): Promise<void>;
  finish(stagedId: string): Promise<Staged>;
  commit(stagedId: string, mime: ImageMime): Promise<string>;
  discard(stagedId: string): Promise<void>;
  remove(name: string): Promise<void>;
  open(name: string): Promise<{ stream: Readable; size: number; mime: ImageMime } | null>;
  /**
   * Deletes staged uploads begun or last written more than `olderThanMs` ago
   * (media-sweep.ts, `STAGED_RETENTION_MS`): what a killed process left between stage and commit. An upload
   * still open here is skipped. Resolves to how many went.
   */
  sweepStaged(olderThanMs: number, now?: number): Promise<number>;
  /**
   * Deletes pictures in place older than `olderThanMs` that `inUse` says no item names: a picture moved
   * into place whose item was never written (a process killed in between, or an undo that failed). The
   * age keeps clear of an event being created right now. Resolves to the names removed.
   */
  sweepOrphans(
    olderThanMs: number,
    inUse: (name: string) => Promise<boolean>,
    now?: number,
  ): Promise<string[]>;
}

/** The type a stored picture's name says (the names are ours: a random UUID and the sniffed type's extension). */
export const mimeOfName = (name: string): ImageMime | null =>
  name.endsWith(".jpg")
    ? "image/jpeg"
    : name.endsWith(".png")
      ? "image/png"
      : name.endsWith(".webp")
        ? "image/webp"
        : null;

/** A name `open` and `remove` may act on: one of ours, never a path nor a hidden (staging) entry. */
export const isPictureName = (name: string): boolean =>
  mimeOfName(name) !== null && !name.includes("/") && !name.startsWith(".");

/** A fresh name for a committed picture. */
export const pictureName = (mime: ImageMime): string => `${randomUUID()}.${extensionOf[mime]}`;

export const STAGED_ID = /^[0-9a-f-]{36}$/;

/** A whole stream, through the chunk path (counted, sniffed, removed on failure): `stage` of every engine. */
export async function stageStream(store: BlobStore, source: Readable, maxBytes: number): Promise<Staged> {
  const stagedId = await store.begin();
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) await store.append(stagedId, chunk, maxBytes);
    return await store.finish(stagedId);
  } catch (err) {
    await store.discard(stagedId);
    throw err;
  }
}

/** A staging file, written through one open handle. */
class FileSink implements Sink {
  constructor(
    private readonly handle: fs.promises.FileHandle,
    private readonly file: string,
  ) {}

  async write(chunk: Buffer): Promise<void> {
    await this.handle.write(chunk);
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  async abort(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    await fs.promises.rm(this.file, { force: true });
  }
}

export class LocalBlobStore implements BlobStore {
  private readonly tmp: string;
  private readonly uploads = new OpenUploads((stagedId) => this.discard(stagedId));

  constructor(private readonly dir: string) {
    this.tmp = path.join(dir, ".staging");
    fs.mkdirSync(this.tmp, { recursive: true });
  }

  /** Staged files last written before the retention; an upload still open here is never one of them. */
  async sweepStaged(olderThanMs: number, now = Date.now()): Promise<number> {
    let removed = 0;
    for (const f of await fs.promises.readdir(this.tmp)) {
      if (this.uploads.has(f)) continue;
      const file = path.join(this.tmp, f);
      const stat = await fs.promises.stat(file).catch(() => null);
      if (stat && now - stat.mtimeMs > olderThanMs) {
        await fs.promises.rm(file, { force: true });
        removed++;
      }
    }
    return removed;
  }

  async sweepOrphans(
    olderThanMs: number,
    inUse: (name: string) => Promise<boolean>,
    now = Date.now(),
  ): Promise<string[]> {
    const removed: string[] = [];
    for (const name of await fs.promises.readdir(this.dir)) {
      if (!isPictureName(name)) continue;
      const file = path.join(this.dir, name);
      const stat = await fs.promises.stat(file).catch(() => null);
      if (!stat?.isFile() || now - stat.mtimeMs <= olderThanMs) continue;
      if (await inUse(name)) continue;
      await fs.promises.rm(file, { force: true });
      removed.push(name);
    }
    return removed;
  }

  stage(source: Readable, maxBytes: number): Promise<Staged> {
    return stageStream(this, source, maxBytes);
  }

  async begin(options: BeginOptions = {}): Promise<string> {
    const stagedId = randomUUID();
    const file = path.join(this.tmp, stagedId);
    this.uploads.open(stagedId, new FileSink(await fs.promises.open(file, "wx"), file), options);
    return stagedId;
  }

  append(stagedId: string, chunk: Buffer, maxBytes: number): Promise<void> {
    return this.uploads.append(stagedId, chunk, maxBytes);
  }

  finish(stagedId: string): Promise<Staged> {
    return this.uploads.finish(stagedId);
  }

  async commit(stagedId: string, mime: ImageMime): Promise<string> {
    if (!STAGED_ID.test(stagedId)) throw new Error("Bad staged id");
    const name = pictureName(mime);
    await fs.promises.rename(path.join(this.tmp, stagedId), path.join(this.dir, name));
    return name;
  }

  async discard(stagedId: string): Promise<void> {
    await this.uploads.abort(stagedId);
    if (STAGED_ID.test(stagedId)) await fs.promises.rm(path.join(this.tmp, stagedId), { force: true });
  }

  async remove(name: string): Promise<void> {
    if (isPictureName(name)) await fs.promises.rm(path.join(this.dir, name), { force: true });
  }

  async open(name: string) {
    const mime = mimeOfName(name);
    if (!mime || !isPictureName(name)) return null;
    const file = path.join(this.dir, name);
    try {
      const stat = await fs.promises.stat(file);
      return { stream: fs.createReadStream(file), size: stat.size, mime };
    } catch {
      return null;
    }
  }
}
