import { HybridSerializer } from "../../../../shared/runtime/serializer";

import { Serializers, ServiceBroker } from "moleculer";

const serializer = new HybridSerializer();
serializer.init(new ServiceBroker({ logger: false }));
const roundTrip = (packet: Record<string, unknown>, type = "REQ") =>
  serializer.deserialize(serializer.serialize({ ...packet }, type), type);

describe("HybridSerializer", () => {
  it("when a packet carries plain data, then it comes back equal, its body having travelled as JSON text", () => {
    const packet = {
      ver: "4",
      sender: "gateway-1",
      id: "c1",
      action: "rounds.get",
      params: { round_id: "r1", nested: { list: [1, "two", null, true] } },
      meta: { user: { id: "u1" }, $statusCode: 202 },
      timeout: 10000,
    };
    expect(roundTrip(packet)).toEqual(packet);
    expect(serializer.serialize({ ...packet }, "REQ").includes(Buffer.from('{"round_id":"r1"'))).toBe(true);
  });

  it("when a body holds bytes at its top level (an upload chunk), then the bytes travel as bytes", () => {
    const chunk = Buffer.alloc(256 * 1024, 7);
    const out = roundTrip({ params: { staged_id: "s1", chunk }, meta: {} });
    expect(Buffer.isBuffer((out.params as { chunk: Buffer }).chunk)).toBe(true);
    expect((out.params as { chunk: Buffer }).chunk.equals(chunk)).toBe(true);
    // Not inflated: a JSON array of numbers would be about four times the chunk.
    expect(serializer.serialize({ params: { staged_id: "s1", chunk }, meta: {} }, "REQ").length).toBeLessThan(
      chunk.length + 1024,
    );
  });

  it("when the body itself is bytes (a stream's piece) or absent, then it is kept as it was", () => {
    const piece = Buffer.from("picture bytes");
    expect((roundTrip({ params: piece, stream: true }).params as Buffer).equals(piece)).toBe(true);
    expect(roundTrip({ data: null, success: true }, "RES")).toEqual({ data: null, success: true });
    expect(roundTrip({ success: true }, "RES")).toEqual({ success: true });
  });

  it("when no body holds bytes, then the whole packet is one JSON text behind a one-byte tag", () => {
    const packet = {
      id: "c1",
      action: "rounds.get",
      params: { round_id: "r1" },
      meta: { user: { id: "u1" } },
    };
    const buf = serializer.serialize({ ...packet }, "REQ");
    expect(buf[0]).toBe(0x01);
    expect(JSON.parse(buf.toString("utf8", 1))).toEqual(packet);
  });

  it("when a packet of the earlier all-Notepack format arrives, then it is read as before", () => {
    const notepack = Serializers.Notepack.prototype.serialize.call(
      serializer,
      { id: "c1", params: '{"round_id":"r1"}', params$json: true, meta: "{}", meta$json: true },
      "REQ",
    ) as Buffer;
    expect(serializer.deserialize(notepack, "REQ")).toEqual({
      id: "c1",
      params: { round_id: "r1" },
      meta: {},
    });
  });

  it("when it serializes, then the packet it was given is left untouched", () => {
    const params = { a: 1 };
    const packet = { params, meta: {} };
    serializer.serialize(packet, "REQ");
    expect(packet.params).toBe(params);
  });
});
