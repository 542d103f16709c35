import type { ServerResponse } from "node:http";
import { encodeAnswer, keptAnswer, microcacheSlot } from "../../../../services/gateway/microcache";
import { ResponseCache } from "../../../../services/gateway/response-cache";
import { routeByAction } from "../../../../services/gateway/routes";

const ok = { statusCode: 200 } as ServerResponse;

describe("kept answers", () => {
  it("when a caller's list is encoded, then the answer is its JSON and the next read of it gets the same text", () => {
    const responses = new ResponseCache({ maxAgeMs: 60_000, maxEntries: 100 });
    const slot = microcacheSlot(responses, routeByAction.get("users.friends"), "user-1", {});
    expect(slot).not.toBeNull();
    const json = encodeAnswer(responses, slot!, {}, ok, [{ id: "u2" }]);
    expect(json).toBe('[{"id":"u2"}]');
    expect(keptAnswer(responses, slot!, Date.now())?.json).toBe(json);
  });

  it("when an answer is kept, then its length is its UTF-8 bytes, counted once for every read", () => {
    const responses = new ResponseCache({ maxAgeMs: 60_000, maxEntries: 100 });
    const slot = microcacheSlot(responses, routeByAction.get("users.friends"), "user-1", {});
    const list = [{ first_name: "Ёжик ☕" }];
    encodeAnswer(responses, slot!, {}, ok, list);
    const kept = keptAnswer(responses, slot!, Date.now());
    const text = JSON.stringify(list);
    expect(kept).toMatchObject({ json: text, bytes: Buffer.byteLength(text) });
    expect(kept!.bytes).toBeGreaterThan(text.length);
  });

  it("when an answer has no slot, is not a 200 or its service says nothing of its freshness, then it is encoded and not kept", () => {
    const responses = new ResponseCache({ maxAgeMs: 60_000, maxEntries: 100 });
    const slot = microcacheSlot(responses, routeByAction.get("rounds.get"), "user-1", { round_id: "r1" });
    expect(encodeAnswer(responses, undefined, { $freshUntil: null }, ok, { a: "é" })).toBe('{"a":"é"}');
    encodeAnswer(responses, slot!, { $freshUntil: null }, { statusCode: 202 } as ServerResponse, { a: 1 });
    encodeAnswer(responses, slot!, {}, ok, { a: 1 });
    expect(responses.size).toBe(0);
  });

  it("when a round's answer is everyone's and counts down, then it is kept without its seconds and completed per read", () => {
    const responses = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    const now = Date.now();
    const end = now + 40_000;
    const meta = { $freshUntil: now + 500, $sameForAllBut: ["owner"], $countdown: { to: end, until: end } };
    const round = { id: "r1", seconds_to_end: 39, title: "Кофе" };
    const slot = microcacheSlot(responses, routeByAction.get("rounds.get"), "stranger", { round_id: "r1" });
    const json = encodeAnswer(responses, slot!, meta, ok, round);
    expect(JSON.parse(json)).toEqual(round);
    const other = microcacheSlot(responses, routeByAction.get("rounds.get"), "reader", { round_id: "r1" });
    const kept = keptAnswer(responses, other!, now + 10_000);
    expect(JSON.parse(String(kept?.json))).toEqual({ ...round, seconds_to_end: 30 });
    expect(kept?.bytes).toBe(Buffer.byteLength(String(kept?.json)));
    const owner = microcacheSlot(responses, routeByAction.get("rounds.get"), "owner", { round_id: "r1" });
    expect(keptAnswer(responses, owner!, now)).toBeNull();
  });

  it("when a join dropped the round while its read was under way, then the read's answer is not kept", () => {
    const responses = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    const slot = microcacheSlot(responses, routeByAction.get("rounds.get"), "stranger", { round_id: "r1" });
    responses.dropTag("r1");
    const meta = { $freshUntil: null, $sameForAllBut: ["owner"] };
    encodeAnswer(responses, slot!, meta, ok, { id: "r1" });
    expect(keptAnswer(responses, slot!, Date.now())).toBeNull();
  });
});
