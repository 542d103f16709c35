import type { ServerResponse } from "node:http";
import {
  keepAnswer,
  keptAnswer,
  keptForm,
  microcacheSlot,
  SHORT_ANSWER_BYTES,
} from "../../services/gateway/microcache";
import { ResponseCache } from "../../services/gateway/response-cache";
import { routeByAction } from "../../services/gateway/routes";

describe("kept answers", () => {
  it("when an answer is short, then it is kept as the same text, whether it came as text, bytes or parts", () => {
    const text = JSON.stringify({ id: "r1", title: "Кофемолка ☕", members: [1, 2, 3] });
    const bytes = Buffer.from(text);
    expect(keptForm(text)).toBe(text);
    expect(keptForm(bytes)).toBe(text);
    expect(keptForm([bytes.subarray(0, 7), bytes.subarray(7)])).toBe(text);
  });

  it("when an answer is longer than SHORT_ANSWER_BYTES, then its bytes are kept as they came", () => {
    const long = Buffer.alloc(SHORT_ANSWER_BYTES + 1, "a");
    const parts = [long.subarray(0, 10), long.subarray(10)];
    expect(keptForm(long)).toBe(long);
    expect(keptForm(parts)).toBe(parts);
  });

  it("when a caller's list is kept from its bytes, then the next read of it gets the text", () => {
    const responses = new ResponseCache(60_000, 100);
    const spec = routeByAction.get("users.friends");
    const slot = microcacheSlot(responses, spec, "user-1", {});
    expect(slot).not.toBeNull();
    keepAnswer(responses, slot ?? undefined, {}, { statusCode: 200 } as ServerResponse, [
      Buffer.from('[{"id":'),
      Buffer.from('"u2"}]'),
    ]);
    expect(responses.get(slot!.tag, slot!.key, Date.now())?.json).toBe('[{"id":"u2"}]');
  });

  it("when an answer is kept as text, then its length is its UTF-8 bytes, counted once for every read", () => {
    const responses = new ResponseCache(60_000, 100);
    const slot = microcacheSlot(responses, routeByAction.get("users.friends"), "user-1", {});
    const text = JSON.stringify([{ first_name: "Ёжик ☕" }]);
    keepAnswer(responses, slot ?? undefined, {}, { statusCode: 200 } as ServerResponse, Buffer.from(text));
    const kept = keptAnswer(responses, slot!, Date.now());
    expect(kept).toMatchObject({ json: text, bytes: Buffer.byteLength(text) });
    expect(kept!.bytes).toBeGreaterThan(text.length);
  });
});
