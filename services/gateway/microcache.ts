/**
 * Which reads the gateway may answer from its microcache (gateway/response-cache), and under which key:
 * a route marked `microcacheTag`, for a known user; the tag groups the answers an event drops at once.
 */
import type { ServerResponse } from "node:http";
import type { FreshnessMeta } from "../../shared/contracts/common";
import type { JsonBody, ResponseCache } from "./response-cache";
import { CALLER_TAG, callerTag, type RouteSpec } from "./routes";

/** Where a microcached read's answer is kept: its tag (e.g. the round) and the caller with the params. */
export interface MicrocacheSlot {
  tag: string;
  key: string;
  /**
   * A caller's own list stays right until an event about it (only the cap applies); a round read says
   * itself until when it is right (its clock-driven fields), in `ctx.meta.$freshUntil`.
   */
  untilEvent: boolean;
}

export function microcacheSlot(
  responses: ResponseCache,
  spec: RouteSpec | undefined,
  userId: string | undefined,
  params: Record<string, unknown>,
): MicrocacheSlot | null {
  if (!responses.enabled || !spec?.microcacheTag || !userId) return null;
  const untilEvent = spec.microcacheTag === CALLER_TAG;
  const tag = untilEvent ? callerTag(userId) : params[spec.microcacheTag];
  if (typeof tag !== "string") return null;
  return { tag, key: `${spec.action}\u0000${userId}\u0000${JSON.stringify(params)}`, untilEvent };
}

/** A microcached read's 200 is kept for the time its service allows (ctx.meta.$freshUntil). */
export function keepAnswer(
  responses: ResponseCache,
  slot: MicrocacheSlot | undefined,
  meta: FreshnessMeta | undefined,
  res: ServerResponse,
  json: JsonBody,
): void {
  const freshUntil = slot?.untilEvent ? null : meta?.$freshUntil;
  if (slot && res.statusCode === 200 && freshUntil !== undefined) {
    responses.set(slot.tag, slot.key, json, freshUntil ?? Number.POSITIVE_INFINITY, Date.now());
  }
}
