/**
 * The blob engine with MONGO_URI: pictures in MongoDB GridFS (bucket `media`: collections media.files and
 * media.chunks), through the driver's GridFSBucket on the store's own connection
 * (docs/decisions/0023-store-event-form.md). Every stores process reads and writes the same bucket, so
 * any of them serves any picture, and a restart loses none.
 *
 * An upload streams straight into a GridFS upload stream named `.staging/<staged id>`: the driver keeps
 * at most one GridFS chunk (255 KiB) in memory and acknowledges a write once its chunk is inserted, so
 * the sender waits for MongoDB as it waits for a disk. `commit` renames the file to the picture's name
 * (from any stores process: the gateway's `createEvent` may reach another one than the chunks did).
 * A ledger of staged uploads (collection media_staging, one document per upload from `begin` until commit
 * or discard) is what the retention sweep reads: a process killed mid-upload leaves chunks without a
 * files document, which nothing else would find.
 */
import { randomUUID } from "node:crypto";
import type { Readable, Writable } from "node:stream";
import mongoose from "mongoose";
import type { Collection } from "../../shared/storage";
import type { ImageMime } from "./image-type";
import { isPictureName, mimeOfName, pictureName, stageStream, STAGED_ID, type BlobStore } from "./blob-store";
import { OpenUploads, type BeginOptions, type Sink, type Staged } from "./open-uploads";

type ObjectId = mongoose.mongo.ObjectId;
const { ObjectId } = mongoose.mongo;

/** A GridFS files document, as far as this engine reads it. */
export interface StoredFile {
  _id: ObjectId;
  filename: string;
  length: number;
  uploadDate: Date;
}

/** The filters this engine gives `find`: by id, by name, or uploaded before a date. */
export type FileFilter = { _id: ObjectId } | { filename: string } | { uploadDate: { $lt: Date } };

/** What this engine uses of the driver's GridFSBucket (which satisfies it as is; a test may fake it). */
export interface GridFsBucketLike {
  openUploadStreamWithId(id: ObjectId, filename: string): Writable & { abort(): Promise<void> };
  openDownloadStream(id: ObjectId): Readable;
  find(filter: FileFilter): AsyncIterable<StoredFile>;
  rename(id: ObjectId, filename: string): Promise<void>;
  /** Deletes the files document and its chunks; rejects (after deleting the chunks) when there is no document. */
  delete(id: ObjectId): Promise<void>;
}

/** One staged upload, from `begin` until `commit` or `discard` (the sweep's only way to find crashed ones). */
export interface StagingEntry {
  _id: string;
  file_id: string;
  started: Date;
}

export const BUCKET = "media";
export const STAGING_COLLECTION = "media_staging";

/** The driver's message when `delete` found no files document (MongoRuntimeError, no code of its own). */
export const FILE_NOT_FOUND = /^File not found for id /;

const stagingName = (stagedId: string): string => `.staging/${stagedId}`;

/** A GridFS upload stream: a write resolves once the driver has taken the chunk (inserted, when it filled one). */
class GridFsSink implements Sink {
  constructor(private readonly stream: Writable & { abort(): Promise<void> }) {}

  write(chunk: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.stream.write(chunk, (err) => (err ? reject(err) : resolve()));
    });
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.stream.once("error", reject);
      this.stream.end(() => resolve());
    });
  }

  async abort(): Promise<void> {
    await this.stream.abort();
  }
}

export class GridFsBlobStore implements BlobStore {
  private readonly uploads = new OpenUploads((stagedId) => this.discard(stagedId));

  constructor(
    private readonly bucket: GridFsBucketLike,
    private readonly staging: Collection<StagingEntry>,
  ) {}

  /** The ledger's index on `started` (the sweep's range); call once before use. */
  async init(): Promise<void> {
    await this.staging.createIndex({ fields: ["started"] });
  }

  stage(source: Readable, maxBytes: number): Promise<Staged> {
    return stageStream(this, source, maxBytes);
  }

  async begin(options: BeginOptions = {}): Promise<string> {
    const stagedId = randomUUID();
    const fileId = new ObjectId();
    // In the ledger first: a process killed after its first chunk leaves something the sweep can find.
    await this.staging.insertOne({ _id: stagedId, file_id: fileId.toHexString(), started: new Date() });
    const stream = this.bucket.openUploadStreamWithId(fileId, stagingName(stagedId));
    // Failures reach the caller through the write and end callbacks; no unhandled 'error' event.
    stream.on("error", () => undefined);
    this.uploads.open(stagedId, new GridFsSink(stream), options);
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
    const file = await this.stagedFile(stagedId);
    if (!file) throw new Error(`No staged upload ${stagedId}`);
    const name = pictureName(mime);
    await this.bucket.rename(file._id, name);
    // Renamed first: a ledger entry outliving its commit names a file the sweep then leaves alone.
    await this.staging.deleteOne({ _id: stagedId });
    return name;
  }

  async discard(stagedId: string): Promise<void> {
    await this.uploads.abort(stagedId);
    if (!STAGED_ID.test(stagedId)) return;
    const entry = await this.staging.findOne({ _id: stagedId });
    if (!entry) return;
    await this.deleteStaged(entry);
  }

  async remove(name: string): Promise<void> {
    if (!isPictureName(name)) return;
    for await (const file of this.bucket.find({ filename: name })) await this.deleteQuietly(file._id);
  }

  async open(name: string) {
    const mime = mimeOfName(name);
    if (!mime || !isPictureName(name)) return null;
    const file = await first(this.bucket.find({ filename: name }));
    if (!file) return null;
    return { stream: this.bucket.openDownloadStream(file._id), size: file.length, mime };
  }

  /** Ledger entries begun before the retention, whatever state their upload reached, unless open here. */
  async sweepStaged(olderThanMs: number, now = Date.now()): Promise<number> {
    const before = new Date(now - olderThanMs);
    let removed = 0;
    for (const entry of await this.staging.find({ started: { $lt: before, $ne: null } })) {
      if (this.uploads.has(entry._id)) continue;
      if (await this.deleteStaged(entry)) removed++;
    }
    return removed;
  }

  async sweepOrphans(
    olderThanMs: number,
    inUse: (name: string) => Promise<boolean>,
    now = Date.now(),
  ): Promise<string[]> {
    const removed: string[] = [];
    for await (const file of this.bucket.find({ uploadDate: { $lt: new Date(now - olderThanMs) } })) {
      if (!isPictureName(file.filename) || (await inUse(file.filename))) continue;
      await this.deleteQuietly(file._id);
      removed.push(file.filename);
    }
    return removed;
  }

  private async stagedFile(stagedId: string): Promise<StoredFile | null> {
    const entry = await this.staging.findOne({ _id: stagedId });
    if (!entry) return null;
    const file = await first(this.bucket.find({ _id: new ObjectId(entry.file_id) }));
    return file && file.filename === stagingName(stagedId) ? file : null;
  }

  /**
   * Deletes a staged upload's bytes (a files document, or chunks alone when its process died before
   * writing one) unless it was committed meanwhile, then its ledger entry. True when bytes went.
   */
  private async deleteStaged(entry: StagingEntry): Promise<boolean> {
    const id = new ObjectId(entry.file_id);
    const file = await first(this.bucket.find({ _id: id }));
    const staged = !file || file.filename === stagingName(entry._id);
    if (staged) await this.deleteQuietly(id);
    await this.staging.deleteOne({ _id: entry._id });
    return staged;
  }

  /**
   * GridFS's delete removes the chunks even when no files document exists, then rejects with "File not
   * found": what a half-written upload, or a picture another process deleted first, looks like.
   */
  private async deleteQuietly(id: ObjectId): Promise<void> {
    await this.bucket.delete(id).catch((err: unknown) => {
      if (!FILE_NOT_FOUND.test((err as Error)?.message ?? "")) throw err;
    });
  }
}

async function first<T>(items: AsyncIterable<T>): Promise<T | null> {
  for await (const item of items) return item;
  return null;
}
