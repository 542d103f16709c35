/**
 * The stores' picture engine, chosen with the document store: GridFS on MongoDB's own connection when
 * MONGO_URI is set (any stores process serves any picture), else files under DATA_DIR/media. The GridFS engine, like mongoose, is loaded only when it is used
 * (docs/decisions/0060-node-24-production.md).
 */
import path from "node:path";
import type { Config } from "../../shared/config";
import type { Store } from "../../shared/storage";
import type mongoose from "mongoose";
import { LocalBlobStore, type BlobStore } from "./blob-store";

/**
 * The folder of the filesystem engine: always DATA_DIR/media, beside the embedded store it goes with, so
 * one volume holds both and a backup of DATA_DIR has the pictures its documents name.
 */
export const mediaDirOf = (config: Pick<Config, "dataDir">): string => path.join(config.dataDir, "media");

type WithBuckets = Store & { gridFsBucket(bucketName: string): mongoose.mongo.GridFSBucket };

const hasBuckets = (store: Store): store is WithBuckets =>
  typeof (store as Partial<WithBuckets>).gridFsBucket === "function";

export async function openBlobStore(store: Store, config: Config): Promise<BlobStore> {
  if (store.engine !== "mongodb") return new LocalBlobStore(mediaDirOf(config));
  if (!hasBuckets(store)) throw new Error("This MongoDB store gives no GridFS bucket for the pictures");
  const { BUCKET, GridFsBlobStore, STAGING_COLLECTION } = await import("./gridfs-blob-store");
  const blobs = new GridFsBlobStore(store.gridFsBucket(BUCKET), store.collection(STAGING_COLLECTION));
  await blobs.init();
  return blobs;
}
