/**
 * The app-version rule (see docs/decisions/0020-friends.md): compare numerically, part by part.
 *   your < min_version              → required (the app must update)
 *   min_version ≤ your < current    → optional (an update exists)
 *   your ≥ current                  → none
 * is_different is true whenever your version is not the current one (also a newer, e.g. beta, build).
 */
import type { AppSettingsResult, PlatformVersions } from "../../shared/contracts/settings";

export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

export function appSettings(yourVersion: string, v: PlatformVersions): AppSettingsResult {
  const vsCurrent = compareVersions(yourVersion, v.current_version);
  const updateType =
    compareVersions(yourVersion, v.min_version) < 0 ? "required" : vsCurrent < 0 ? "optional" : "none";
  return {
    platform: v.platform,
    your_version: yourVersion,
    current_version: v.current_version,
    is_different: vsCurrent !== 0,
    update_type: updateType,
  };
}
