/**
 * The packet serializer between nodes ("Hybrid", the default). Notepack (msgpack in JavaScript) carries
 * bytes as bytes, which the picture upload needs, but encoding and decoding a round's answer with it
 * cost a fifth of the rounds process's time in a read; V8's own JSON is several times faster for
 * such plain data. So the envelope stays Notepack, and a packet's body (params, data, meta) travels as
 * JSON text inside it, except a body that holds bytes at its top level (an upload chunk), which stays
 * Notepack. An answer that is already JSON (a RawJson) travels as its bytes and arrives as a RawJson
 * again. Every node must use the same serializer (as with any Moleculer serializer).
 */
import { Serializers } from "moleculer";
import { RawJson } from "./raw-json";

type Packet = Record<string, unknown>;

/** Fields of a packet that carry a body, and the marker telling the receiver it is JSON text. */
const BODIES = ["params", "data", "meta"] as const;
const asJson = (field: string) => `${field}$json`;
/** Marks a response whose data is a RawJson's bytes. */
const RAW_DATA = "data$raw";

const isBytes = (v: unknown): boolean => Buffer.isBuffer(v) || v instanceof Uint8Array;

/** JSON keeps plain data; bytes (a chunk, a stream's piece) stay binary. */
function jsonSafe(body: unknown): boolean {
  if (body === null || typeof body !== "object") return body !== undefined;
  if (isBytes(body)) return false;
  for (const value of Object.values(body as object)) if (isBytes(value)) return false;
  return true;
}

export class HybridSerializer extends Serializers.Notepack {
  override serialize(obj: Packet, type: string): Buffer {
    const packet: Packet = { ...obj };
    if (packet.data instanceof RawJson) {
      packet.data = packet.data.bytes;
      packet[RAW_DATA] = true;
    }
    for (const field of BODIES) {
      if (field in packet && jsonSafe(packet[field])) {
        packet[field] = JSON.stringify(packet[field]);
        packet[asJson(field)] = true;
      }
    }
    return super.serialize(packet, type);
  }

  override deserialize(buf: Buffer, type: string): Packet {
    const packet = super.deserialize(buf, type) as Packet;
    if (packet[RAW_DATA] === true) {
      packet.data = new RawJson(packet.data as Buffer);
      delete packet[RAW_DATA];
    }
    for (const field of BODIES) {
      if (packet[asJson(field)] === true) {
        packet[field] = JSON.parse(packet[field] as string);
        delete packet[asJson(field)];
      }
    }
    return packet;
  }
}
