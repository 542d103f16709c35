/**
 * What each operations command does: the services' actions it calls. The one code path for both ways
 * a command runs: in the CLI's own broker (server stopped, or a cluster), and in a running embedded
 * server that received it on its admin socket (./server.ts). A request is plain JSON, so it is checked
 * here as untrusted: each command takes only the fields it names, as text, and the actions' own
 * validators check the values.
 */
import type { ServiceBroker } from "moleculer";
import { call } from "../../contracts";
import { seed } from "../seed";
import type { CommandName } from "./args";

/** One command to run: its name (as the CLI spells it) and its parameters. */
export interface CommandRequest {
  command: CommandName;
  params: Record<string, unknown>;
}

/** A request's fault (unknown command, missing or mistyped field): answered as an error, never thrown on. */
export class BadRequestError extends Error {
  readonly code = 400;
  readonly type = "BAD_REQUEST";
}

/** What a command may know of the process running it. */
export interface CommandContext {
  /** The API's base URL for the demo manifest's links (null: unknown, relative). */
  baseUrl: string | null;
}

type Params = Record<string, unknown>;

const text = (p: Params, key: string): string => {
  const value = p[key];
  if (typeof value !== "string" || value === "")
    throw new BadRequestError(`${key} must be a non-empty string`);
  return value;
};

const optionalText = (p: Params, key: string): string | null => (p[key] === undefined ? null : text(p, key));

/** The items of `devices`, each reduced to its two fields (the action checks their values). */
function devicesOf(p: Params): Array<{ user_id: string; token: string }> {
  if (!Array.isArray(p.devices)) throw new BadRequestError("devices must be an array");
  return p.devices.map((d: unknown) => {
    const item = (d ?? {}) as Params;
    return { user_id: item.user_id as string, token: item.token as string };
  });
}

const handlers: Record<CommandName, (b: ServiceBroker, p: Params, ctx: CommandContext) => Promise<unknown>> =
  {
    seed: (b, _p, ctx) => seed(b, ctx.baseUrl),
    token: (b, p) => call(b, "auth.issueTokens", { user_id: text(p, "user_id") }),
    "user add": (b, p) =>
      call(b, "users.create", {
        phone: text(p, "phone"),
        username: text(p, "username"),
        first_name: optionalText(p, "first_name"),
        last_name: optionalText(p, "last_name"),
        avatar_url: optionalText(p, "avatar_url"),
      }),
    "user remove": (b, p) => call(b, "users.remove", { id: text(p, "user_id") }),
    "friends add": (b, p) => call(b, "users.addFriends", { a: text(p, "a"), b: text(p, "b") }),
    "apikey add": (b, p) => {
      const label = optionalText(p, "label");
      return call(b, "auth.createApiKey", {
        scope: text(p, "scope") as "app" | "notifications",
        ...(label === null ? {} : { label }),
      });
    },
    "apikey revoke": (b, p) => call(b, "auth.revokeApiKey", { id: text(p, "key_id") }),
    "app-version set": (b, p) =>
      call(b, "settings.setVersions", {
        platform: text(p, "platform") as "android" | "ios" | "ru_store",
        current_version: text(p, "current_version"),
        min_version: text(p, "min_version"),
      }),
    "device add": (b, p) =>
      call(b, "users.addDevice", { user_id: text(p, "user_id"), token: text(p, "token") }),
    // One page of a file (the CLI reads and pages it): the action bounds a page's length.
    "device import": (b, p) => call(b, "users.importDevices", { devices: devicesOf(p) }),
  };

/** The request in `value` (anything a client sent), or a BadRequestError saying what is wrong with it. */
export function requestOf(value: unknown): CommandRequest {
  const req = value as { command?: unknown; params?: unknown } | null;
  if (typeof req !== "object" || req === null || Array.isArray(req)) {
    throw new BadRequestError('a request is an object: {"command": …, "params": {…}}');
  }
  if (typeof req.command !== "string" || !Object.hasOwn(handlers, req.command)) {
    throw new BadRequestError(`unknown command ${JSON.stringify(req.command)}`);
  }
  const params = req.params ?? {};
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw new BadRequestError("params must be an object");
  }
  return { command: req.command as CommandName, params: params as Params };
}

/** Runs one command through the services' actions; resolves to what the CLI prints. */
export async function runCommand(
  broker: ServiceBroker,
  request: CommandRequest,
  ctx: CommandContext,
): Promise<unknown> {
  return await handlers[request.command](broker, request.params, ctx);
}
