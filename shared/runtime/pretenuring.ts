/**
 * Turns off V8's allocation-site pretenuring in a server process, at start.
 *
 * V8 counts, for each object or array literal in the code, how many of the objects it made since the
 * last scavenge survived it; past 85% it allocates that literal's objects in the old generation from
 * then on, for the life of the process. In a server the count is taken on the first scavenges under
 * load, while the code is still cold and requests take long, so a literal made once per request can
 * cross 85% by a hair and be pretenured. Its objects then die in the old generation, where only a full
 * collection frees them, and until it runs they keep every young object they point to alive: the
 * requests' objects survive every scavenge and are copied into the old generation. Some processes,
 * chosen at random in their first seconds, started that way and served hot reads at a fraction of the
 * others' rate (docs/decisions/0060-node-24-production.md has the runs).
 *
 * V8's flag `--allocation-site-pretenuring` is not one Node documents or lets NODE_OPTIONS carry, so
 * it is set here through `v8.setFlagsFromString` (documented; V8 reads this flag at every scavenge) as
 * a guarded hook (shared/runtime/internals): for the Node versions it was measured on, and off with
 * INTERNALS_HOOKS_OFF=v8-pretenuring, where V8's own behaviour serves.
 */
import v8 from "node:v8";
import { useHook, type HookSettings, type InternalsHook } from "./internals";

export interface WithSetFlags {
  setFlagsFromString?: unknown;
}

/** V8's flag, as `v8.setFlagsFromString` takes it. */
export const PRETENURING_OFF = "--no-allocation-site-pretenuring";

const setFlags = (target: WithSetFlags, flag: string) =>
  (target.setFlagsFromString as (flags: string) => void)(flag);

export const pretenuringHook: InternalsHook<WithSetFlags> = {
  name: "v8-pretenuring",
  library: "node",
  versions: ">=20.0.0 <25.0.0",
  check: (target) => (typeof target.setFlagsFromString === "function" ? [] : ["v8.setFlagsFromString"]),
  apply: (target) => setFlags(target, PRETENURING_OFF),
  remove: (target) => setFlags(target, "--allocation-site-pretenuring"),
};

/** Applies the hook to this process (once; later calls only say whether it is in place). */
export const usePretenuringOff = (settings: HookSettings, target: WithSetFlags = v8): boolean =>
  useHook(pretenuringHook, target, settings);
