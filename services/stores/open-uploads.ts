/**
 * What both blob engines do alike while an upload is received in chunks (one action call each, so the
 * sender waits: flow control): count the bytes against the limit (413 beyond it), keep the first 12 for
 * sniffing, hash them when asked (an Idempotency-Key's fingerprint), and abandon an upload whose sender
 * went silent. Where the bytes go is the engine's `Sink`: a staging file, or a GridFS upload stream.
 */
import { createHash, type Hash } from "node:crypto";
import { PayloadTooLargeError, UploadInterruptedError } from "../../shared/errors";
import { sniffImage, type ImageMime } from "./image-type";

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

/** Where an engine writes one upload's bytes. `write` resolves once the chunk is taken (bounded memory). */
export interface Sink {
  write(chunk: Buffer): Promise<void>;
  /** The bytes are all in: make them durable (closed file, GridFS files document written). */
  close(): Promise<void>;
  /** Give up: whatever was written goes (and stays gone). */
  abort(): Promise<void>;
}

interface OpenUpload {
  sink: Sink;
  size: number;
  head: Buffer;
  hash: Hash | null;
  idle: NodeJS.Timeout;
}

/** An upload whose sender went silent this long is abandoned and deleted. */
export const IDLE_MS = 60_000;

export class OpenUploads {
  private readonly uploads = new Map<string, OpenUpload>();

  /** `onIdle` discards an upload nobody finished in time (the engine's `discard`). */
  constructor(private readonly onIdle: (stagedId: string) => Promise<void>) {}

  has(stagedId: string): boolean {
    return this.uploads.has(stagedId);
  }

  open(stagedId: string, sink: Sink, options: BeginOptions): void {
    const idle = setTimeout(() => this.onIdle(stagedId).catch(() => undefined), IDLE_MS).unref();
    const hash = options.sha256 ? createHash("sha256") : null;
    this.uploads.set(stagedId, { sink, size: 0, head: Buffer.alloc(0), hash, idle });
  }

  async append(stagedId: string, chunk: Buffer, maxBytes: number): Promise<void> {
    const upload = this.uploads.get(stagedId);
    if (!upload) throw new UploadInterruptedError();
    upload.idle.refresh();
    upload.size += chunk.length;
    if (upload.size > maxBytes) {
      await this.onIdle(stagedId);
      throw new PayloadTooLargeError(`main_picture is larger than ${maxBytes} bytes`);
    }
    if (upload.head.length < 12)
      upload.head = Buffer.concat([upload.head, chunk.subarray(0, 12 - upload.head.length)]);
    upload.hash?.update(chunk);
    await upload.sink.write(chunk);
  }

  async finish(stagedId: string): Promise<Staged> {
    const upload = this.uploads.get(stagedId);
    if (!upload) throw new UploadInterruptedError();
    this.uploads.delete(stagedId);
    clearTimeout(upload.idle);
    await upload.sink.close();
    const staged: Staged = { stagedId, size: upload.size, mime: sniffImage(upload.head) };
    if (upload.hash) staged.sha256 = upload.hash.digest("hex");
    return staged;
  }

  /** Forgets an open upload and aborts its sink; false when none is open under that id. */
  async abort(stagedId: string): Promise<boolean> {
    const upload = this.uploads.get(stagedId);
    if (!upload) return false;
    this.uploads.delete(stagedId);
    clearTimeout(upload.idle);
    await upload.sink.abort().catch(() => undefined);
    return true;
  }
}
