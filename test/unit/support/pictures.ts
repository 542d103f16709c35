/** Small picture payloads for the upload tests: valid signatures followed by filler bytes. */
import { randomBytes } from "node:crypto";

const JPEG_HEAD = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]);
const PNG_HEAD = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]);
const WEBP_HEAD = Buffer.concat([
  Buffer.from("RIFF", "latin1"),
  Buffer.from([0x24, 0x00, 0x00, 0x00]),
  Buffer.from("WEBP", "latin1"),
]);

/** `size` bytes that start with the format's signature (random after it, so copies can be told apart). */
export function picture(kind: "jpeg" | "png" | "webp", size = 1024): Buffer {
  const head = kind === "jpeg" ? JPEG_HEAD : kind === "png" ? PNG_HEAD : WEBP_HEAD;
  if (size < head.length) throw new Error(`A ${kind} needs at least ${head.length} bytes`);
  return Buffer.concat([head, randomBytes(size - head.length)]);
}

/** Splits a buffer into chunks of `size` bytes, as a network would deliver it. */
export function chunksOf(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}
