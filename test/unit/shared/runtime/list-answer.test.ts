/**
 * Answers that grow with their data (shared/runtime/list-answer.ts): as they are while they fit a page,
 * as the gateway's bytes when it asks, else a stream of chunks with the JSON's type and length.
 */
import type { Readable } from "node:stream";
import type { Context } from "moleculer";
import { PAGE_BYTES } from "../../../../shared/contracts/paging";
import { RawJson } from "../../../../shared/runtime/raw-json";
import {
  bytesAnswer,
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

  it("when the list fits a page, then it is answered as it is, or as bytes to the action the gateway names", () => {
    expect(valueAnswer(ctxWith(), "users.friends", small)).toBe(small);
    expect(valueAnswer(ctxWith({ $rawJson: "rounds.get" }), "users.friends", small)).toBe(small);
    const raw = valueAnswer(ctxWith({ $rawJson: "users.friends" }), "users.friends", small);
    expect(raw).toBeInstanceOf(RawJson);
    expect((raw as RawJson).toJSON()).toEqual(small);
  });

  it("when the caller says it cannot be large, then it is not even measured", () => {
    expect(valueAnswer(ctxWith({ $rawJson: "x" }), "x", large, false)).toBe(large);
  });

  it("when the list is larger than a page, then it is a stream of bounded chunks whose bytes are its JSON, typed and sized", async () => {
    const ctx = ctxWith({ $rawJson: "users.friends" });
    const answer = valueAnswer(ctx, "users.friends", large) as Readable;
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

describe("bytesAnswer", () => {
  it("when bytes in parts fit a page, then they go as they are; larger, streamed part after part", async () => {
    const smallJson = new RawJson(Buffer.from('{"a":'), Buffer.from("1}"));
    expect(bytesAnswer(ctxWith(), smallJson)).toBe(smallJson);
    const big = new RawJson(Buffer.from(`{"p":"${"y".repeat(PAGE_BYTES)}`), Buffer.from('","s":3}'));
    const ctx = ctxWith();
    const chunks = await read(bytesAnswer(ctx, big) as Readable);
    expect(Buffer.concat(chunks).equals(big.bytes)).toBe(true);
    expect(ctx.meta.$responseHeaders).toEqual({ "Content-Length": String(big.byteLength) });
  });
});
