/**
 * sendInChunks: the gateway's side of the upload. The file is read only as fast as the stores service
 * acknowledges chunks (one call outstanding at a time), in order, and an upload that fails is discarded
 * on the node that holds it.
 */
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { CHUNK_BYTES, sendInChunks, type ChunkTarget } from "../../../../services/gateway/chunked-upload";
import type { StagedPicture } from "../../../../shared/contracts/stores";
import { chunksOf, picture } from "../../support/pictures";

const NODE = "stores-node-2";
const ID = "5d0c6f1e-2b7a-4c1d-9e3f-0a1b2c3d4e5f";

/** A stores service that records every call; each chunk call takes `delayMs` to answer. */
function fakeTarget(delayMs = 0) {
  const received: Buffer[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const target = {
    begin: jest.fn(async () => ({ staged_id: ID, node_id: NODE })),
    chunk: jest.fn(async (_id: string, _node: string, bytes: Buffer) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (delayMs > 0) await sleep(delayMs);
      received.push(Buffer.from(bytes));
      inFlight -= 1;
      return true;
    }),
    end: jest.fn(async (id: string): Promise<StagedPicture> => ({
      staged_id: id,
      size: received.reduce((n, b) => n + b.length, 0),
      mime: "image/png",
    })),
    discard: jest.fn(async () => ({ discarded: true })),
  } satisfies ChunkTarget;
  return { target, received, maxInFlight: () => maxInFlight };
}

describe("sendInChunks", () => {
  it("when the default chunk size is read, then it is 256 KiB", () => {
    expect(CHUNK_BYTES).toBe(256 * 1024);
  });

  it("when a small file is sent, then it goes as one chunk between begin and end and end's answer comes back", async () => {
    const bytes = picture("png", 5000);
    const { target, received } = fakeTarget();
    const staged = await sendInChunks(Readable.from(chunksOf(bytes, 1000)), target);
    expect(staged).toEqual({ staged_id: ID, size: 5000, mime: "image/png" });
    expect(target.begin).toHaveBeenCalledTimes(1);
    expect(target.chunk).toHaveBeenCalledTimes(1);
    expect(Buffer.concat(received).equals(bytes)).toBe(true);
    expect(target.end).toHaveBeenCalledWith(ID, NODE);
    expect(target.discard).not.toHaveBeenCalled();
  });

  it("when a large file is sent, then it arrives whole and in order, in chunks of exactly chunkBytes but the last", async () => {
    const bytes = picture("jpeg", 100_000);
    const { target, received } = fakeTarget();
    await sendInChunks(Readable.from(chunksOf(bytes, 3000)), target, 10_000);
    expect(Buffer.concat(received).equals(bytes)).toBe(true);
    expect(received.map((chunk) => chunk.length)).toEqual([...Array(10).fill(10_000)]);
  });

  it("when pieces straddle chunk boundaries, then every chunk call is given the upload's one buffer, refilled", async () => {
    const bytes = picture("png", 25_500);
    const { target, received } = fakeTarget();
    await sendInChunks(Readable.from(chunksOf(bytes, 7000)), target, 10_000);
    expect(Buffer.concat(received).equals(bytes)).toBe(true);
    expect(received.map((chunk) => chunk.length)).toEqual([10_000, 10_000, 5500]);
    const given = target.chunk.mock.calls.map((call) => call[2]);
    // The last is a view of the same memory: no new memory outside V8's heap a chunk.
    expect(new Set(given.map((chunk) => chunk.buffer)).size).toBe(1);
  });

  it("when every chunk call is slow, then only one is outstanding at a time (the sender waits)", async () => {
    const bytes = picture("png", 60_000);
    const { target, received, maxInFlight } = fakeTarget(5);
    await sendInChunks(Readable.from(chunksOf(bytes, 4096)), target, 8192);
    expect(maxInFlight()).toBe(1);
    expect(Buffer.concat(received).equals(bytes)).toBe(true);
  });

  it("when the stores service is slow, then the file is not read ahead of it (flow control)", async () => {
    let pulled = 0;
    const total = 64;
    const source = new Readable({
      highWaterMark: 1024,
      read() {
        pulled += 1;
        this.push(pulled <= total ? Buffer.alloc(1024, pulled) : null);
      },
    });
    let pulledAtFirstAnswer = -1;
    const { target } = fakeTarget();
    target.chunk.mockImplementationOnce(async () => {
      await sleep(50);
      pulledAtFirstAnswer = pulled;
      return true;
    });
    await sendInChunks(source, target, 4096);
    // While the first chunk (4 KiB) was being written, only a buffer's worth more was read.
    expect(pulledAtFirstAnswer).toBeGreaterThan(0);
    expect(pulledAtFirstAnswer).toBeLessThan(12);
    expect(pulled).toBe(total + 1);
  });

  it("when the chunk and end calls are made, then they go to the node that began the upload", async () => {
    const { target } = fakeTarget();
    await sendInChunks(Readable.from([picture("png", 100)]), target);
    expect(target.chunk).toHaveBeenCalledWith(ID, NODE, expect.any(Buffer));
    expect(target.end).toHaveBeenCalledWith(ID, NODE);
  });

  it("when the file is empty, then no chunk is sent and end reports it", async () => {
    const { target } = fakeTarget();
    const staged = await sendInChunks(Readable.from([]), target);
    expect(target.chunk).not.toHaveBeenCalled();
    expect(target.end).toHaveBeenCalledTimes(1);
    expect(staged.size).toBe(0);
  });

  it("when a chunk is refused (413 from the stores service), then the upload is discarded on its node and the error rethrown", async () => {
    const { target } = fakeTarget();
    const refused = Object.assign(new Error("main_picture is larger than 10 bytes"), { code: 413 });
    target.chunk.mockResolvedValueOnce(true).mockRejectedValueOnce(refused);
    const source = Readable.from(chunksOf(picture("png", 50_000), 1000));
    await expect(sendInChunks(source, target, 10_000)).rejects.toBe(refused);
    expect(target.discard).toHaveBeenCalledWith(ID, NODE);
    expect(target.end).not.toHaveBeenCalled();
    expect(source.destroyed).toBe(true);
  });

  it("when the file stream errors (limit passed, client gone), then the upload is discarded and the error rethrown", async () => {
    const { target } = fakeTarget();
    let sent = 0;
    const source = new Readable({
      read() {
        sent += 1;
        if (sent <= 3) this.push(Buffer.alloc(5000));
        else this.destroy(new Error("main_picture is larger than 15000 bytes"));
      },
    });
    await expect(sendInChunks(source, target, 4096)).rejects.toThrow("larger than 15000 bytes");
    expect(target.discard).toHaveBeenCalledWith(ID, NODE);
    expect(target.end).not.toHaveBeenCalled();
  });

  it("when end fails, then the upload is discarded and the error rethrown", async () => {
    const { target } = fakeTarget();
    target.end.mockRejectedValueOnce(new Error("close failed"));
    await expect(sendInChunks(Readable.from([picture("png", 100)]), target)).rejects.toThrow("close failed");
    expect(target.discard).toHaveBeenCalledWith(ID, NODE);
  });

  it("when discarding also fails, then the original error is the one rethrown", async () => {
    const { target } = fakeTarget();
    const original = new Error("chunk lost");
    target.chunk.mockRejectedValueOnce(original);
    target.discard.mockRejectedValueOnce(new Error("node gone"));
    await expect(sendInChunks(Readable.from([picture("png", 100)]), target)).rejects.toBe(original);
  });

  it("when begin fails, then nothing is sent and nothing is discarded", async () => {
    const { target } = fakeTarget();
    target.begin.mockRejectedValueOnce(new Error("stores unavailable"));
    await expect(sendInChunks(Readable.from([picture("png", 100)]), target)).rejects.toThrow(
      "stores unavailable",
    );
    expect(target.chunk).not.toHaveBeenCalled();
    expect(target.discard).not.toHaveBeenCalled();
  });
});
