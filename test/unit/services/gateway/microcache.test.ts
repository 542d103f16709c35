import type { ServerResponse } from "node:http";
import {
  keepAnswer,
  keptAnswer,
  keptForm,
  microcacheSlot,
  SHORT_ANSWER_BYTES,
} from "../../../../services/gateway/microcache";
import { ResponseCache } from "../../../../services/gateway/response-cache";
import { routeByAction } from "../../../../services/gateway/routes";

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
    const responses = new ResponseCache({ maxAgeMs: 60_000, maxEntries: 100 });
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
    const responses = new ResponseCache({ maxAgeMs: 60_000, maxEntries: 100 });
    const slot = microcacheSlot(responses, routeByAction.get("users.friends"), "user-1", {});
    const text = JSON.stringify([{ first_name: "Ёжик ☕" }]);
    keepAnswer(responses, slot ?? undefined, {}, { statusCode: 200 } as ServerResponse, Buffer.from(text));
    const kept = keptAnswer(responses, slot!, Date.now());
    expect(kept).toMatchObject({ json: text, bytes: Buffer.byteLength(text) });
    expect(kept!.bytes).toBeGreaterThan(text.length);
  });

  it("when a round's answer is everyone's and counts down, then it is kept without its seconds and completed per read", () => {
    const responses = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    const now = Date.now();
    const end = now + 40_000;
    const head = Buffer.from('{"id":"r1","title":"Кофе","seconds_to_end":');
    const meta = {
      $freshUntil: now + 500,
      $sameForAllBut: ["owner"],
      $countdown: { to: end, until: end, headBytes: head.length },
    };
    // In two parts as the rounds service makes it, or in one as it arrives over NATS.
    for (const answer of [[head, Buffer.from("39}")], Buffer.concat([head, Buffer.from("39}")])]) {
      responses.clear();
      const slot = microcacheSlot(responses, routeByAction.get("rounds.get"), "stranger", { round_id: "r1" });
      keepAnswer(responses, slot!, meta, { statusCode: 200 } as ServerResponse, answer);
      const other = microcacheSlot(responses, routeByAction.get("rounds.get"), "reader", { round_id: "r1" });
      const kept = keptAnswer(responses, other!, now + 10_000);
      expect(kept?.json).toBe('{"id":"r1","title":"Кофе","seconds_to_end":30}');
      expect(kept?.bytes).toBe(head.length + 3);
      const owner = microcacheSlot(responses, routeByAction.get("rounds.get"), "owner", { round_id: "r1" });
      expect(keptAnswer(responses, owner!, now)).toBeNull();
    }
  });

  it("when a join dropped the round while its read was under way, then the read's answer is not kept", () => {
    const responses = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    const slot = microcacheSlot(responses, routeByAction.get("rounds.get"), "stranger", { round_id: "r1" });
    responses.dropTag("r1");
    const meta = { $freshUntil: null, $sameForAllBut: ["owner"] };
    keepAnswer(responses, slot!, meta, { statusCode: 200 } as ServerResponse, Buffer.from("{}"));
    expect(keptAnswer(responses, slot!, Date.now())).toBeNull();
  });
});
