/**
 * Blob storage port with a local-filesystem engine (MEDIA_DIR, default DATA_DIR/media). Uploads are
 * written to a temporary file as they arrive (never held whole in memory), counted and sniffed on the
 * way (and hashed, when asked), either from a stream (`stage`) or chunk by chunk (`begin`/`append`/`finish`); `commit`
 * renames a staged file into place under a random name (never the client's file name), `discard`
 * deletes it. Staged files nobody committed (a crash between the two), and pictures in place no item
 * names, are swept by the stores service (services/stores/media-sweep.ts).
 */
import { createHash, randomUUID, type Hash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { PayloadTooLargeError } from "../../shared/errors";
import { extensionOf, sniffImage, type ImageMime } from "./image-type";

export interface Staged {
  stagedId: string;
  size: number;
  mime: ImageMime | null;
  /** Hex SHA-256 of the bytes, when `begin` asked for it. */
  sha256?: string;
}

export interface BeginOptions {
  /** Compute the bytes' SHA-256 as they are written (an upload with an Idempotency-Key: its fingerprint). */
  sha256?: boolean;
}

export interface BlobStore {
  stage(source: Readable, maxBytes: number): Promise<Staged>;
  begin(options?: BeginOptions): Promise<string>;
  append(stagedId: string, chunk: Buffer, maxBytes: number): Promise<void>;
  finish(stagedId: string): Promise<Staged>;
  commit(stagedId: string, mime: ImageMime): Promise<string>;
  discard(stagedId: string): Promise<void>;
  remove(name: string): Promise<void>;
  open(name: string): Promise<{ stream: Readable; size: number; mime: ImageMime } | null>;
}

const mimeOfName = (name: string): ImageMime | null =>
  name.endsWith(".jpg")
    ? "image/jpeg"
    : name.endsWith(".png")
      ? "image/png"
      : name.endsWith(".webp")
        ? "image/webp"
        : null;

const STAGED_ID = /^[0-9a-f-]{36}$/;

/** An upload being received in chunks (one per request, so the sender waits: flow control). */
interface OpenUpload {
  handle: fs.promises.FileHandle;
  size: number;
  head: Buffer;
  hash: Hash | null;
  idle: NodeJS.Timeout;
}

/** An upload whose sender went silent this long is abandoned and deleted. */
const IDLE_MS = 60_000;

export class LocalBlobStore implements BlobStore {
  private readonly tmp: string;
  private readonly uploads = new Map<string, OpenUpload>();

  constructor(private readonly dir: string) {
    this.tmp = path.join(dir, ".staging");
    fs.mkdirSync(this.tmp, { recursive: true });
  }

  /**
   * Deletes staged files last written more than `olderThanMs` ago (STAGED_UPLOAD_RETENTION_MINUTES):
   * uploads a killed process left between stage and commit. An upload still open here is never one of
   * them (its sender would have timed out long before), and is skipped anyway. Resolves to how many went.
   */
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

  /**
   * Deletes pictures in place older than `olderThanMs` that `inUse` says no item names: a picture
   * moved into place whose item was never written (a process killed in between, or an undo that
   * failed). The age keeps clear of an event being created right now. Resolves to the names removed.
   */
  async sweepOrphans(
    olderThanMs: number,
    inUse: (name: string) => Promise<boolean>,
    now = Date.now(),
  ): Promise<string[]> {
    const removed: string[] = [];
    for (const name of await fs.promises.readdir(this.dir)) {
      if (name.startsWith(".") || !mimeOfName(name)) continue;
      const file = path.join(this.dir, name);
      const stat = await fs.promises.stat(file).catch(() => null);
      if (!stat?.isFile() || now - stat.mtimeMs <= olderThanMs) continue;
      if (await inUse(name)) continue;
      await fs.promises.rm(file, { force: true });
      removed.push(name);
    }
    return removed;
  }

  /** A whole stream, through the same chunk path (one open file, counted, sniffed, removed on failure). */
  async stage(source: Readable, maxBytes: number): Promise<Staged> {
    const stagedId = await this.begin();
    try {
      for await (const chunk of source as AsyncIterable<Buffer>) await this.append(stagedId, chunk, maxBytes);
      return await this.finish(stagedId);
    } catch (err) {
      await this.discard(stagedId);
      throw err;
    }
  }

  async begin(options: BeginOptions = {}): Promise<string> {
    const stagedId = randomUUID();
    const handle = await fs.promises.open(path.join(this.tmp, stagedId), "wx");
    const idle = setTimeout(() => this.discard(stagedId).catch(() => undefined), IDLE_MS).unref();
    const hash = options.sha256 ? createHash("sha256") : null;
    this.uploads.set(stagedId, { handle, size: 0, head: Buffer.alloc(0), hash, idle });
    return stagedId;
  }

  async append(stagedId: string, chunk: Buffer, maxBytes: number): Promise<void> {
    const upload = this.uploads.get(stagedId);
    if (!upload) throw new Error(`No open upload ${stagedId}`);
    upload.idle.refresh();
    upload.size += chunk.length;
    if (upload.size > maxBytes) {
      await this.discard(stagedId);
      throw new PayloadTooLargeError(`main_picture is larger than ${maxBytes} bytes`);
    }
    if (upload.head.length < 12)
      upload.head = Buffer.concat([upload.head, chunk.subarray(0, 12 - upload.head.length)]);
    upload.hash?.update(chunk);
    await upload.handle.write(chunk);
  }

  async finish(stagedId: string): Promise<Staged> {
    const upload = this.uploads.get(stagedId);
    if (!upload) throw new Error(`No open upload ${stagedId}`);
    this.uploads.delete(stagedId);
    clearTimeout(upload.idle);
    await upload.handle.close();
    const staged: Staged = { stagedId, size: upload.size, mime: sniffImage(upload.head) };
    if (upload.hash) staged.sha256 = upload.hash.digest("hex");
    return staged;
  }

  async commit(stagedId: string, mime: ImageMime): Promise<string> {
    if (!STAGED_ID.test(stagedId)) throw new Error("Bad staged id");
    const name = `${randomUUID()}.${extensionOf[mime]}`;
    await fs.promises.rename(path.join(this.tmp, stagedId), path.join(this.dir, name));
    return name;
  }

  async discard(stagedId: string): Promise<void> {
    const upload = this.uploads.get(stagedId);
    if (upload) {
      this.uploads.delete(stagedId);
      clearTimeout(upload.idle);
      await upload.handle.close().catch(() => undefined);
    }
    if (STAGED_ID.test(stagedId)) await fs.promises.rm(path.join(this.tmp, stagedId), { force: true });
  }

  async remove(name: string): Promise<void> {
    if (mimeOfName(name) && !name.includes("/"))
      await fs.promises.rm(path.join(this.dir, name), { force: true });
  }

  async open(name: string) {
    const mime = mimeOfName(name);
    if (!mime || name.includes("/") || name.startsWith(".")) return null;
    const file = path.join(this.dir, name);
    try {
      const stat = await fs.promises.stat(file);
      return { stream: fs.createReadStream(file), size: stat.size, mime };
    } catch {
      return null;
    }
  }
}
