/**
 * Frees an upload's chunks as the upload goes, in the processes it crosses (the gateway, the stores).
 *
 * A chunk is a Buffer whose memory lives outside V8's heap, and the few JavaScript objects each chunk
 * makes fill the young generation so slowly that no scavenge runs during an upload. V8 then frees the
 * chunks only when the memory it tracks outside its heap has grown by its soft limit (V8's 64 MB) since
 * the last full collection, so a gateway with a large heap cap grew by about that much for any picture.
 * A scavenge, which frees young Buffers no longer referenced, every SCAVENGE_EVERY_BYTES of chunks keeps
 * the growth to a few chunks' worth, at the cost of a young-generation collection (the figures:
 * docs/decisions/0119-upload-chunks-scavenged.md).
 *
 * Asking for a scavenge needs Node's `gc` function (`--expose-gc`, set in the gateway's and the stores'
 * NODE_OPTIONS and by `npm start`) and V8's `{ type: "minor" }` option to it, which Node does not
 * document: the upload-scavenge hook (shared/runtime/internals). Without it V8 keeps its own pace, with
 * one warning.
 */
import { useHook, type HookSettings, type InternalsHook } from "./internals";

/** Bytes of chunks between two scavenges (one process running both services counts each chunk twice). */
export const SCAVENGE_EVERY_BYTES = 4 * 1024 * 1024;

export interface WithGc {
  gc?: unknown;
}

let minorGc: (() => void) | null = null;
let sinceLast = 0;

export const uploadScavengeHook: InternalsHook<WithGc> = {
  name: "upload-scavenge",
  library: "node",
  versions: ">=20.0.0 <25.0.0",
  check: (target) =>
    typeof target.gc === "function" ? [] : ["the gc function (the process was started without --expose-gc)"],
  apply(target) {
    const gc = target.gc as (options: { type: "minor" }) => void;
    minorGc = () => gc({ type: "minor" });
  },
  remove() {
    minorGc = null;
  },
};

/** Applies the hook to this process (once; later calls only say whether it is in place). */
export const useUploadScavenge = (settings: HookSettings, target: WithGc = globalThis): boolean =>
  useHook(uploadScavengeHook, target, settings);

/** Counts `bytes` of chunks passed on; asks for a scavenge each SCAVENGE_EVERY_BYTES. */
export function chunkPassed(bytes: number): void {
  sinceLast += bytes;
  if (sinceLast < SCAVENGE_EVERY_BYTES) return;
  sinceLast = 0;
  minorGc?.();
}
