/**
 * Sends an upload to the stores service in chunks, one action call each, waiting for every answer before
 * reading on: the client's socket is only read as fast as the stores service writes, so neither side
 * buffers the file, in one process or across the transporter.
 */
import type { Readable } from "node:stream";
import type { StagedPicture } from "../../shared/contracts/stores";

export interface ChunkTarget {
  begin(): Promise<{ staged_id: string; node_id: string }>;
  chunk(stagedId: string, nodeId: string, bytes: Buffer): Promise<unknown>;
  end(stagedId: string, nodeId: string): Promise<StagedPicture>;
  discard(stagedId: string, nodeId: string): Promise<unknown>;
}

export const CHUNK_BYTES = 256 * 1024;

/**
 * One buffer per upload, filled again for each chunk. A chunk's call is answered only once the stores
 * wrote it (hashed and copied what they keep of it; across the transporter, once its packet was made,
 * a copy), so the next chunk may overwrite it; a chunk that fails ends the upload. A new buffer a chunk
 * would be memory outside V8's heap that V8 frees only at its own pace (docs/decisions/0025).
 */
export async function sendInChunks(
  file: Readable,
  target: ChunkTarget,
  chunkBytes = CHUNK_BYTES,
): Promise<StagedPicture> {
  const { staged_id: id, node_id: node } = await target.begin();
  try {
    const chunk = Buffer.allocUnsafe(chunkBytes);
    let filled = 0;
    for await (const piece of file as AsyncIterable<Buffer>) {
      for (let offset = 0; offset < piece.length;) {
        const copied = piece.copy(chunk, filled, offset);
        filled += copied;
        offset += copied;
        if (filled === chunkBytes) {
          await target.chunk(id, node, chunk);
          filled = 0;
        }
      }
    }
    if (filled > 0) await target.chunk(id, node, chunk.subarray(0, filled));
    return await target.end(id, node);
  } catch (err) {
    await target.discard(id, node).catch(() => undefined);
    throw err;
  }
}
