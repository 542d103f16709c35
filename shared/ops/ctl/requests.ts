/**
 * From a parsed command line to the requests that carry it out (./commands.ts), and from their results
 * to what the CLI prints. Done on the CLI's side whichever way the requests then run, so that a file to
 * import is read where the operator named it (their working directory), and sent in pages each well
 * within one request's size bound.
 */
import fs from "node:fs";
import { pagesOf } from "../../contracts/paging";
import type { ParsedCommand } from "./args";
import type { CommandRequest } from "./commands";

export interface CommandPlan {
  requests: CommandRequest[];
  /** What to print, from the requests' results (in order). */
  output(results: unknown[]): unknown;
}

/** Most devices in one request: users.importDevices' own bound (its pages are bounded in bytes too). */
const DEVICES_PER_REQUEST = 10_000;

/** The `<user_id> <token>` pairs of a device file; blank and malformed lines are skipped. */
export function readDevices(file: string): Array<{ user_id: string; token: string }> {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((parts) => parts.length === 2 && parts[0] !== "")
    .map(([user_id, token]) => ({ user_id, token }));
}

const one = (command: CommandRequest["command"], params: Record<string, unknown>): CommandPlan => ({
  requests: [{ command, params }],
  output: ([result]) => result,
});

export function planOf(cmd: ParsedCommand, read: typeof readDevices = readDevices): CommandPlan {
  const [first, second] = cmd.args;
  const flag = (name: string) =>
    typeof cmd.flags[name] === "string" ? (cmd.flags[name] as string) : undefined;
  switch (cmd.name) {
    case "seed":
      return one("seed", {});
    case "token":
      return one("token", { user_id: first });
    case "user add":
      return one("user add", {
        phone: flag("phone"),
        username: flag("username"),
        first_name: flag("first"),
        last_name: flag("last"),
        avatar_url: flag("avatar"),
      });
    case "user remove":
      return one("user remove", { user_id: first });
    case "friends add":
      return one("friends add", { a: first, b: second });
    case "apikey add":
      return one("apikey add", { scope: flag("scope"), label: flag("label") });
    case "apikey revoke":
      return one("apikey revoke", { key_id: first });
    case "app-version set":
      return one("app-version set", {
        platform: flag("platform"),
        current_version: flag("current"),
        min_version: flag("min"),
      });
    case "device add":
      return one("device add", { user_id: first, token: second });
    case "device import": {
      const devices = read(first);
      return {
        requests: pagesOf(devices, DEVICES_PER_REQUEST).map((page) => ({
          command: "device import" as const,
          params: { devices: page },
        })),
        output: (results) => ({
          read: devices.length,
          added: results.reduce((n: number, r) => n + (r as { added: number }).added, 0),
        }),
      };
    }
  }
}
