/**
 * Whether this test run forced a hook into a library's internals off (INTERNALS_HOOKS_OFF, "all" or a
 * comma list of names, as `.ci/run` and `INTERNALS_HOOKS_OFF=all npm test` do). A test of a guarantee
 * that only a hook gives asserts the library's own, weaker one in such a run: the system still serves
 * correctly, as the fallback promises, just not as well.
 */
import type { HookName } from "../../shared/runtime/internals";

export function hookForcedOff(name: HookName, env: NodeJS.ProcessEnv = process.env): boolean {
  const off = (env.INTERNALS_HOOKS_OFF ?? "").split(",").map((s) => s.trim());
  return off.includes("all") || off.includes(name);
}
