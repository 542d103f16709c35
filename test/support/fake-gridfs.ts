/**
 * An in-memory stand-in for the driver's GridFSBucket, as far as services/stores/gridfs-blob-store.ts
 * uses it, so that the blob-store contract suite exercises the GridFS engine's own logic (its ledger,
 * renames, sweeps and half-written uploads) where no MongoDB can run. It copies what the driver does
 * (mongodb 7, lib/gridfs): chunks are inserted one `chunkSizeBytes` piece at a time as they fill, a
 * write's callback fires once its chunk is inserted, the files document is written only at `end`,
 * `abort` deletes the chunks, `delete` deletes the chunks even without a files document and then rejects
 * with "File not found for id …". The real bucket runs the same suite whenever MONGO_URI is set.
 */
import { Readable, Writable } from "node:stream";
import type mongoose from "mongoose";
import type { FileFilter, GridFsBucketLike, StoredFile } from "../../services/stores/gridfs-blob-store";

type ObjectId = mongoose.mongo.ObjectId;

interface Chunk {
  filesId: string;
  n: number;
  data: Buffer;
}

export class FakeGridFsBucket implements GridFsBucketLike {
  readonly files = new Map<string, StoredFile>();
  readonly chunks: Chunk[] = [];

  constructor(private readonly chunkSizeBytes = 1024) {}

  openUploadStreamWithId(id: ObjectId, filename: string): Writable & { abort(): Promise<void> } {
    const key = id.toHexString();
    const size = this.chunkSizeBytes;
    let pending = Buffer.alloc(0);
    let n = 0;
    let length = 0;
    let aborted = false;
    const insert = (data: Buffer) =>
      // An insert is a round trip: the callback comes later, as with a real server.
      new Promise<void>((resolve) =>
        setImmediate(() => (this.chunks.push({ filesId: key, n: n++, data }), resolve())),
      );
    const stream = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        if (aborted) return done(new Error("Stream has been aborted"));
        length += chunk.length;
        pending = Buffer.concat([pending, chunk]);
        const full: Buffer[] = [];
        while (pending.length >= size) {
          full.push(pending.subarray(0, size));
          pending = pending.subarray(size);
        }
        full.reduce((p, data) => p.then(() => insert(data)), Promise.resolve()).then(() => done(), done);
      },
      final: (done) => {
        if (aborted) return done(new Error("Stream has been aborted"));
        const rest = pending.length > 0 ? insert(pending) : Promise.resolve();
        rest.then(() => {
          this.files.set(key, { _id: id, filename, length, uploadDate: new Date() });
          done();
        }, done);
      },
    });
    return Object.assign(stream, {
      abort: async () => {
        if (aborted) throw new Error("Cannot call abort() on a stream twice");
        aborted = true;
        this.dropChunks(key);
      },
    });
  }

  openDownloadStream(id: ObjectId): Readable {
    const key = id.toHexString();
    if (!this.files.has(key)) throw new Error(`FileNotFound: file ${key} was not found`);
    const parts = this.chunks
      .filter((c) => c.filesId === key)
      .sort((a, b) => a.n - b.n)
      .map((c) => c.data);
    return Readable.from(parts);
  }

  async *find(filter: FileFilter): AsyncIterable<StoredFile> {
    for (const file of [...this.files.values()]) {
      if ("_id" in filter && !file._id.equals(filter._id)) continue;
      if ("filename" in filter && file.filename !== filter.filename) continue;
      if ("uploadDate" in filter && !(file.uploadDate < filter.uploadDate.$lt)) continue;
      yield { ...file };
    }
  }

  async rename(id: ObjectId, filename: string): Promise<void> {
    const file = this.files.get(id.toHexString());
    if (!file) throw new Error(`File with id ${id.toHexString()} not found`);
    file.filename = filename;
  }

  async delete(id: ObjectId): Promise<void> {
    const key = id.toHexString();
    const existed = this.files.delete(key);
    this.dropChunks(key);
    if (!existed) throw new Error(`File not found for id ${key}`);
  }

  /** Chunks no files document owns: what a process killed mid-upload leaves. */
  chunksWithoutFile(): number {
    return this.chunks.filter((c) => !this.files.has(c.filesId)).length;
  }

  /** Moves a file's upload date back, as time passing would. */
  age(filename: string, ms: number): void {
    for (const file of this.files.values()) {
      if (file.filename === filename) file.uploadDate = new Date(file.uploadDate.getTime() - ms);
    }
  }

  private dropChunks(key: string): void {
    for (let i = this.chunks.length - 1; i >= 0; i--)
      if (this.chunks[i].filesId === key) this.chunks.splice(i, 1);
  }
}
