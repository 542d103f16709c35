/**
 * The packet serializer between nodes ("Hybrid", the default). Notepack (msgpack in JavaScript) carries
 * bytes as bytes, which the picture upload needs, but it encodes and decodes in JavaScript: V8's own
 * JSON is several times faster for plain data. So:
 * - a packet whose bodies (params, data, meta) hold no bytes at their top level, nearly every packet,
 *   travels as one JSON text behind a one-byte tag;
 * - a packet with bytes (an upload chunk, a stream's piece) is Notepack, each plain body inside it as
 *   JSON text.
 * A Notepack packet is a msgpack map, whose first byte is never one of the tags, so packets of the
 * earlier all-Notepack format are still read. Every node must use the same serializer (as with any
 * Moleculer serializer).
 */
import { Serializers } from "moleculer";

type Packet = Record<string, unknown>;

/** Fields of a packet that carry a body, and the marker telling the receiver it is JSON text. */
const BODIES = ["params", "data", "meta"] as const;
const asJson = (field: string) => `${field}$json`;

/** First byte of a packet that is JSON text. */
const JSON_PACKET = 0x01;

const isBytes = (v: unknown): boolean => Buffer.isBuffer(v) || v instanceof Uint8Array;

/** JSON keeps plain data; bytes (a chunk, a stream's piece) stay binary. */
function jsonSafe(body: unknown): boolean {
  if (body === null || typeof body !== "object") return body !== undefined;
  if (isBytes(body)) return false;
  for (const value of Object.values(body as object)) if (isBytes(value)) return false;
  return true;
}

/** No body holds bytes, so the packet can be JSON. */
const withoutBytes = (packet: Packet): boolean =>
  BODIES.every((field) => packet[field] === undefined || jsonSafe(packet[field]));

function jsonPacket(obj: Packet): Buffer {
  const text = JSON.stringify(obj);
  const out = Buffer.allocUnsafe(1 + Buffer.byteLength(text));
  out[0] = JSON_PACKET;
  out.write(text, 1, "utf8");
  return out;
}

export class HybridSerializer extends Serializers.Notepack {
  override serialize(obj: Packet, type: string): Buffer {
    if (withoutBytes(obj)) return jsonPacket(obj);
    const packet: Packet = { ...obj };
    for (const field of BODIES) {
      if (field in packet && jsonSafe(packet[field])) {
        packet[field] = JSON.stringify(packet[field]);
        packet[asJson(field)] = true;
      }
    }
    return super.serialize(packet, type);
  }

  override deserialize(buf: Buffer, type: string): Packet {
    if (buf[0] === JSON_PACKET) return JSON.parse(buf.toString("utf8", 1)) as Packet;
    const packet = super.deserialize(buf, type) as Packet;
    for (const field of BODIES) {
      if (packet[asJson(field)] === true) {
        packet[field] = JSON.parse(packet[field] as string);
        delete packet[asJson(field)];
      }
    }
    return packet;
  }
}
