/**
 * Frees an upload's chunks as the upload goes, in the processes it crosses (the gateway, the stores).
 *
 * A chunk is a Buffer whose memory lives outside V8's heap, and the few JavaScript objects each chunk
 * makes fill the young generation so slowly that no scavenge runs during an upload. V8 then frees the
 * chunks only when the memory it tracks outside its heap has grown by its soft limit (V8's 64 MB) since
 * the last full collection, so a gateway with a large heap cap grew by about that much for any picture.
 * A scavenge, which frees young Buffers no longer referenced, every SCAVENGE_EVERY_BYTES of chunks keeps
 * the growth to a few chunks' worth, at the cost of a young-generation collection (the figures:
 * docs/decisions/0025-upload-chunks.md). A process busy with other work scavenges often on its
 * own, and then each scavenge asked for is one more pause for its requests: so none is asked for when V8
 * ran one since the last SCAVENGE_EVERY_BYTES (perf_hooks' gc entries tell), which frees the same chunks.
 *
 * Asking for a scavenge needs Node's `gc` function (`--expose-gc`, set in the gateway's and the stores'
 * NODE_OPTIONS and by `npm start`) and V8's `{ type: "minor" }` option to it, which Node does not
 * document: the upload-scavenge hook (shared/runtime/internals). Without it V8 keeps its own pace, with
 * one warning.
 */
import {
  PerformanceObserver,
  constants,
  type PerformanceEntry,
  type PerformanceObserverEntryList,
} from "node:perf_hooks";
import { useHook, type HookSettings, type InternalsHook } from "./internals";

/** Bytes of chunks between two scavenges. */
export const SCAVENGE_EVERY_BYTES = 4 * 1024 * 1024;

export interface WithGc {
  gc?: unknown;
}

let minorGc: (() => void) | null = null;
let sinceLast = 0;
/** One process running both the gateway and the stores sees each chunk twice: it counts once. */
let lastCounted: WeakRef<Buffer> | null = null;
/** Whether V8 ran a scavenge of its own since the last SCAVENGE_EVERY_BYTES (perf_hooks tells). */
let scavengedOnItsOwn = false;
let observer: PerformanceObserver | null = null;

/** A perf_hooks `gc` entry of a scavenge V8 ran on its own: not forced, as `gc()` calls are. */
export function isOwnScavenge(entry: PerformanceEntry): boolean {
  const detail = (entry as { detail?: { kind?: number; flags?: number } }).detail;
  return (
    detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR &&
    ((detail.flags ?? 0) & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) === 0
  );
}

function noteOwnScavenges(list: PerformanceObserverEntryList): void {
  if (list.getEntries().some(isOwnScavenge)) scavengedOnItsOwn = true;
}

export const uploadScavengeHook: InternalsHook<WithGc> = {
  name: "upload-scavenge",
  library: "node",
  versions: ">=20.0.0 <25.0.0",
  check: (target) =>
    typeof target.gc === "function" ? [] : ["the gc function (the process was started without --expose-gc)"],
  apply(target) {
    const gc = target.gc as (options: { type: "minor" }) => void;
    observer = new PerformanceObserver(noteOwnScavenges);
    observer.observe({ entryTypes: ["gc"] });
    minorGc = () => gc({ type: "minor" });
  },
  remove() {
    observer?.disconnect();
    observer = null;
    minorGc = null;
    sinceLast = 0;
    scavengedOnItsOwn = false;
    lastCounted = null;
  },
};

/** Applies the hook to this process (once; later calls only say whether it is in place). */
export const useUploadScavenge = (settings: HookSettings, target: WithGc = globalThis): boolean =>
  useHook(uploadScavengeHook, target, settings);

/**
 * Counts a chunk passed on; each SCAVENGE_EVERY_BYTES, asks for a scavenge unless V8 ran one of its own
 * since the last time.
 */
export function chunkPassed(chunk: Buffer): void {
  if (!minorGc || lastCounted?.deref() === chunk) return;
  lastCounted = new WeakRef(chunk);
  sinceLast += chunk.length;
  if (sinceLast < SCAVENGE_EVERY_BYTES) return;
  sinceLast = 0;
  if (scavengedOnItsOwn) scavengedOnItsOwn = false;
  else minorGc();
}
