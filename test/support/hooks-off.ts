/**
 * Whether this test run forced a hook into a library's internals off (INTERNALS_HOOKS_OFF, "all" or a
 * comma list of names, as `.ci/run` and `INTERNALS_HOOKS_OFF=all npm test` do). A test of a guarantee
 * that only a hook gives asserts the library's own, weaker one in such a run: the system still serves
 * correctly, as the fallback promises, just not as well.
 */
import { loadSetting } from "../../shared/config";
import { forcedOff, type HookName } from "../../shared/runtime/internals";

export const hookForcedOff = (name: HookName, env: NodeJS.ProcessEnv = process.env): boolean =>
  forcedOff(name, loadSetting("internalsHooksOff", env));
