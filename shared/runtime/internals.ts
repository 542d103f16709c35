/**
 * Hooks into what another library does not document (a prototype method, a private field), in the
 * manner of an OpenTelemetry instrumentation: each hook names its library and the versions it was
 * written for, says what it needs (`check`), and can be applied and removed (`apply`, `remove`, which
 * wrap and unwrap the library's own function, shimmer-style: the original is called or kept, never
 * copied). `useHook` applies a hook only when the installed version is in its range, its check finds
 * everything it touches, and INTERNALS_HOOKS_OFF does not name it. Otherwise the library keeps its
 * own behaviour and one warning names the hook and the reason. It never throws.
 *
 * Every hook, its supported versions and why it is there are listed in docs/architecture.md ("Hooks
 * into other libraries' internals"; a unit test keeps that table's versions equal to the hooks'); what
 * each gains, measured: docs/decisions/0103-internals-hooks-guard.md.
 */
import fs from "node:fs";
import path from "node:path";
import semver from "semver";

/** Every hook's name (INTERNALS_HOOKS_OFF is checked against this list): a new hook adds its own. */
export const HOOK_NAMES = ["nats-abandoned-dials"] as const;

/**
 * Hooks removed since INTERNALS_HOOKS_OFF took their names, and why: an operator's setting that still
 * names one is ignored with a warning at start (shared/config's retiredSettingsIn), since forcing off a
 * hook that no longer exists asks for what already holds.
 */
export const RETIRED_HOOKS: Readonly<Record<string, string>> = {
  "upload-scavenge":
    "no process forces a scavenge any more; an upload's chunks are freed at V8's own pace (docs/decisions/0025-upload-chunks.md)",
  "nats-batching":
    "the NATS transporter subclass publishes a turn's packets together itself (docs/decisions/0042-nats-outage.md)",
  liveness:
    "a NATS reconnect is handled by the transporter subclass, a dead peer found by heartbeats (docs/decisions/0042-nats-outage.md)",
  "nedb-index-update": "the embedded store uses NeDB's documented API only (shared/storage/nedb.ts)",
  "nedb-group-commit": "the embedded store uses NeDB's documented API only (shared/storage/nedb.ts)",
  "nedb-read-by-id": "the embedded store uses NeDB's documented API only (shared/storage/nedb.ts)",
  "nedb-serialize": "the embedded store uses NeDB's documented API only (shared/storage/nedb.ts)",
  "http-acceptors": "the gateway listens on one socket of its port (docs/decisions/0073-slow-clients.md)",
  "gateway-fast-answers": "the gateway answers through moleculer-web's own lifecycle (docs/architecture.md)",
  "v8-pretenuring":
    "V8's flag is on the command line (--no-allocation-site-pretenuring; docs/decisions/0060-node-24-production.md)",
};

export type HookName = (typeof HOOK_NAMES)[number];

export interface InternalsHook<T> {
  name: HookName;
  /** The npm package hooked into, or "node" for Node's own modules. */
  library: string;
  /** Versions the hook was written for: comparators joined by spaces, e.g. ">=2.29.0 <3.0.0". */
  versions: string;
  /** What the hook touches that is missing or not as expected in `target` (empty: all there). */
  check(target: T): string[];
  apply(target: T): void;
  remove(target: T): void;
}

export interface HookSettings {
  /** Hook names forced off, or "all" (INTERNALS_HOOKS_OFF). */
  off: readonly string[];
  /** Where the one warning per hook goes (default: a process warning). */
  warn?: (message: string) => void;
}

const defaultWarn = (message: string) => process.emitWarning(message, { code: "INTERNALS_HOOK" });

/**
 * Whether `version` satisfies `range` (semver's ranges: comparators joined by spaces, e.g.
 * ">=2.29.0 <3.0.0"). A range left empty, an unreadable range or version, or a pre-release is "not in
 * range", so the hook stays off.
 */
export function inRange(version: string, range: string): boolean {
  if (range.trim() === "" || semver.validRange(range) === null) return false;
  return semver.satisfies(version, range);
}

/** The installed version of `library` ("node": Node's own), or null when it cannot be read. */
export function installedVersion(library: string): string | null {
  if (library === "node") return process.versions.node;
  try {
    // Some packages do not export their package.json: walk up from their entry point instead.
    let dir = path.dirname(require.resolve(library));
    for (;;) {
      const file = path.join(dir, "package.json");
      if (fs.existsSync(file)) {
        const pkg = JSON.parse(fs.readFileSync(file, "utf8")) as { name?: string; version?: string };
        if (pkg.name === library && typeof pkg.version === "string") return pkg.version;
      }
      const parent = path.dirname(dir);
      if (parent === dir) return null;
      dir = parent;
    }
  } catch {
    return null;
  }
}

/** Whether INTERNALS_HOOKS_OFF (parsed: "all" or names) forces the hook named `name` off. */
export const forcedOff = (name: HookName, off: readonly string[]): boolean =>
  off.includes("all") || off.includes(name);

/** Why `hook` must not be applied to `target` now, or null when it may. Never throws. */
export function reasonNotToApply<T>(
  hook: InternalsHook<T>,
  target: T,
  off: readonly string[],
): string | null {
  if (forcedOff(hook.name, off)) return "forced off by INTERNALS_HOOKS_OFF";
  const version = installedVersion(hook.library);
  if (version === null) return `the installed version of ${hook.library} cannot be read`;
  if (!inRange(version, hook.versions)) {
    return `${hook.library} ${version} is outside the versions it was written for (${hook.versions})`;
  }
  let missing: string[];
  try {
    missing = hook.check(target);
  } catch (err) {
    missing = [`its check failed: ${(err as Error).message}`];
  }
  return missing.length > 0 ? `${hook.library} ${version} lacks ${missing.join(", ")}` : null;
}

/**
 * Set by a process that must print nothing of the kind: the operations CLI, whose output is the command's
 * answer; the hooks' warnings belong in the log of a server, which runs the same hooks.
 */
let silenced = false;

/** From now on, no hook warns in this process (the hooks themselves still apply or not as usual). */
export function silenceHookWarnings(): void {
  silenced = true;
}

/** Hooks already warned about, by the function warned with (one warning per hook and process). */
const warned = new WeakMap<object, Set<HookName>>();
const applied = new WeakMap<object, Set<HookName>>();

function warnOnce(
  hook: { name: HookName; library: string },
  reason: string,
  settings: HookSettings,
  what = "not applied",
): void {
  if (silenced) return;
  const warn = settings.warn ?? defaultWarn;
  const names = warned.get(warn) ?? new Set<HookName>();
  if (names.has(hook.name)) return;
  names.add(hook.name);
  warned.set(warn, names);
  const message = `Internals hook '${hook.name}' ${what} (${reason}): ${hook.library}'s own behaviour is used.`;
  try {
    warn(message);
  } catch {
    // A warning that cannot be written must not stop the start.
  }
}

/**
 * Applies `hook` to `target` when it may (see reasonNotToApply); otherwise, or if applying fails,
 * leaves the library as it is and warns once. Applying twice to one target does nothing more.
 * Returns whether the hook is in place. Never throws.
 */
export function useHook<T extends object>(
  hook: InternalsHook<T>,
  target: T,
  settings: HookSettings,
): boolean {
  if (applied.get(target)?.has(hook.name)) return true;
  const reason = reasonNotToApply(hook, target, settings.off);
  if (reason !== null) {
    warnOnce(hook, reason, settings);
    return false;
  }
  try {
    hook.apply(target);
  } catch (err) {
    try {
      hook.remove(target);
    } catch {
      // Best effort: what was not applied needs no removal.
    }
    warnOnce(hook, `applying it failed: ${(err as Error).message}`, settings);
    return false;
  }
  const names = applied.get(target) ?? new Set<HookName>();
  names.add(hook.name);
  applied.set(target, names);
  return true;
}

/**
 * For a hook that finds, once applied, that the library is not what it checked (a hook that works on
 * the library's state while the process runs): it has removed itself, and this warns once.
 */
export function warnHookStopped(
  hook: { name: HookName; library: string },
  reason: string,
  settings: HookSettings,
): void {
  warnOnce(hook, reason, settings, "stopped");
}

/** Removes `hook` from `target` if useHook applied it (tests; a process never needs to). */
export function removeHook<T extends object>(hook: InternalsHook<T>, target: T): void {
  if (!applied.get(target)?.delete(hook.name)) return;
  hook.remove(target);
}

const ORIGINAL = Symbol("internals.original");

type Fn = (...args: never[]) => unknown;

/**
 * Replaces `owner[key]` with `wrapper(original)`; the original stays reachable for `unwrap`. The
 * wrapper decides when to call the original; it must never be a copy of it.
 */
export function wrap<O extends object, K extends keyof O>(
  owner: O,
  key: K,
  wrapper: (original: O[K] & Fn) => O[K] & Fn,
): void {
  const original = owner[key];
  if (typeof original !== "function") throw new Error(`${String(key)} is not a function`);
  const wrapped = wrapper(original as O[K] & Fn);
  Object.defineProperty(wrapped, ORIGINAL, { value: original });
  owner[key] = wrapped;
}

/** Puts back what `wrap` replaced (nothing if `owner[key]` is not a wrapper). */
export function unwrap<O extends object, K extends keyof O>(owner: O, key: K): void {
  const current = owner[key] as unknown as { [ORIGINAL]?: O[K] } | undefined;
  const original = current?.[ORIGINAL];
  if (original !== undefined) owner[key] = original;
}

/** What `wrap` replaced, if `fn` is one of its wrappers; else `fn` itself. */
export const originalOf = <F>(fn: F): F =>
  typeof fn === "function" && ORIGINAL in fn ? (fn as unknown as { [ORIGINAL]: F })[ORIGINAL] : fn;

/** Whether `fn` is a wrapper made by `wrap`. */
export const isWrapped = (fn: unknown): boolean => typeof fn === "function" && ORIGINAL in fn;

/** Checks helpers: the name of each listed member of `obj` that is not a function. */
export function missingFunctions(obj: unknown, what: string, names: readonly string[]): string[] {
  const o = obj as Record<string, unknown> | null | undefined;
  if (o === null || o === undefined) return [what];
  return names.filter((n) => typeof o[n] !== "function").map((n) => `${what}.${n}()`);
}
