/**
 * Answers that grow with their data (shared/runtime/list-answer.ts): as they are while they fit a page,
 * else a stream of chunks with the JSON's type and length.
 */
import type { Readable } from "node:stream";
import type { Context } from "moleculer";
import { PAGE_BYTES } from "../../../../shared/contracts/paging";
import {
  STREAM_CHUNK_BYTES,
  valueAnswer,
  type StreamAnswerMeta,
} from "../../../../shared/runtime/list-answer";

const ctxWith = (meta: StreamAnswerMeta = {}) => ({ meta }) as unknown as Context<unknown, StreamAnswerMeta>;

async function read(stream: Readable): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return chunks;
}

describe("valueAnswer", () => {
  const small = [{ id: "a" }, { id: "b" }];
  const large = Array.from({ length: 3000 }, (_, i) => ({ id: `friend-${i}`, avatar_url: "x".repeat(100) }));

  it("when the list fits a page, then it is answered as the value it is", () => {
    const ctx = ctxWith();
    expect(valueAnswer(ctx, small)).toBe(small);
    expect(ctx.meta).toEqual({});
  });

  it("when the caller says it cannot be large, then it is not even measured", () => {
    expect(valueAnswer(ctxWith(), large, false)).toBe(large);
  });

  it("when the list is larger than a page, then it is a stream of bounded chunks whose bytes are its JSON, typed and sized", async () => {
    const ctx = ctxWith();
    const answer = valueAnswer(ctx, large) as Readable;
    expect(typeof answer.pipe).toBe("function");
    const json = JSON.stringify(large);
    expect(Buffer.byteLength(json)).toBeGreaterThan(PAGE_BYTES);
    expect(ctx.meta.$responseType).toBe("application/json; charset=utf-8");
    expect(ctx.meta.$responseHeaders).toEqual({ "Content-Length": String(Buffer.byteLength(json)) });
    const chunks = await read(answer);
    expect(chunks.every((c) => c.length <= STREAM_CHUNK_BYTES)).toBe(true);
    expect(JSON.parse(Buffer.concat(chunks).toString("utf8"))).toEqual(large);
  });
});
