/**
 * An answer already encoded as JSON (UTF-8 bytes). The gateway writes the bytes to the client as they
 * are, and the Hybrid serializer carries them between nodes as bytes, so an answer built once is neither
 * parsed nor encoded again on its way out. Anything else that meets one (another serializer, a cacher)
 * sees the value itself, through `toJSON`.
 */
export class RawJson {
  constructor(readonly bytes: Buffer) {}

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
