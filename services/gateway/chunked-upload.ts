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

export async function sendInChunks(
  file: Readable,
  target: ChunkTarget,
  chunkBytes = CHUNK_BYTES,
): Promise<StagedPicture> {
  const { staged_id: id, node_id: node } = await target.begin();
  try {
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    for await (const piece of file as AsyncIterable<Buffer>) {
      pending.push(piece);
      pendingBytes += piece.length;
      if (pendingBytes >= chunkBytes) {
        const chunk = Buffer.concat(pending, pendingBytes);
        await target.chunk(id, node, chunk);
        pending = [];
        pendingBytes = 0;
      }
    }
    if (pendingBytes > 0) {
      const chunk = Buffer.concat(pending, pendingBytes);
      await target.chunk(id, node, chunk);
    }
    return await target.end(id, node);
  } catch (err) {
    await target.discard(id, node).catch(() => undefined);
    throw err;
  }
}
