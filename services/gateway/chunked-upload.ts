/**
 * Sends an upload to the stores service in chunks, one action call each, waiting for every answer before
 * reading on: the client's socket is only read as fast as the stores service writes, so neither side
 * buffers the file, in one process or across the transporter.
 *
 * Each chunk is gathered in one buffer of CHUNK_BYTES per upload, made once and filled again once the
 * stores service has answered for the previous chunk (it has written it, or the transporter has copied
 * it into a packet). An upload thus makes no new memory outside V8's heap for its chunks, which V8 would
 * free only at its own pace (decision 0025).
 */
import type { Readable } from "node:stream";
import type { StagedPicture } from "../../shared/contracts/stores";

export interface ChunkTarget {
  begin(): Promise<{ staged_id: string; node_id: string }>;
  /** Resolves once `bytes` are taken: the caller fills the same buffer again after. */
  chunk(stagedId: string, nodeId: string, bytes: Buffer): Promise<unknown>;
  end(stagedId: string, nodeId: string): Promise<StagedPicture>;
  discard(stagedId: string, nodeId: string): Promise<unknown>;
}

export const CHUNK_BYTES = 256 * 1024;

export async function sendInChunks(
  file: Readable,
  target: ChunkTarget,
  chunkBytes = CHUNK_BYTES,
): Promise<StagedPicture> {
  const { staged_id: id, node_id: node } = await target.begin();
  try {
    const chunk = Buffer.allocUnsafeSlow(chunkBytes);
    let filled = 0;
    for await (const piece of file as AsyncIterable<Buffer>) {
      let taken = 0;
      while (taken < piece.length) {
        const copied = piece.copy(chunk, filled, taken);
        taken += copied;
        filled += copied;
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
