/**
 * An answer already encoded as JSON (UTF-8 bytes). The gateway writes the bytes to the client as they
 * are, and the Hybrid serializer carries them between nodes as bytes, so an answer built once is neither
 * parsed nor encoded again on its way out. Anything else that meets one (another serializer, a cacher)
 * sees the value itself, through `toJSON`.
 *
 * The bytes may come in parts (a shared head and a per-request tail): whoever writes them out writes
 * the parts in turn, so they are never joined into a new buffer just to be copied again.
 */
export class RawJson {
  readonly parts: readonly Buffer[];
  readonly byteLength: number;

  constructor(...parts: Buffer[]) {
    this.parts = parts;
    let length = 0;
    for (const part of parts) length += part.length;
    this.byteLength = length;
  }

  /** The bytes as one buffer (joined only when there are several parts). */
  get bytes(): Buffer {
    return this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.byteLength);
  }

  toJSON(): unknown {
    return JSON.parse(this.bytes.toString("utf8"));
  }
}

/**
 * Meta of a call whose caller writes a RawJson answer straight out (the gateway, when the path to the
 * service keeps it intact): the action it called. Only that action may answer one: meta travels on to
 * the calls it makes, whose callers expect values.
 */
export interface RawJsonMeta {
  $rawJson?: string;
}
