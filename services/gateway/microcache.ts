/**
 * Which reads the gateway may answer from its microcache (gateway/response-cache), and under which key:
 * a route marked `microcacheTag`, for a known user; the tag groups the answers an event drops at once.
 */
import type { ServerResponse } from "node:http";
import type { FreshnessMeta } from "../../shared/contracts/common";
import type { KeptJson, ResponseCache } from "./response-cache";
import type { JsonBody } from "./write-json";
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
  /** The caller, and where an answer the service says is everyone's (`$sameForAllBut`) is kept. */
  callerId: string;
  sharedKey: string;
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
  const query = JSON.stringify(params);
  return {
    tag,
    key: `${spec.action}\u0000${userId}\u0000${query}`,
    untilEvent,
    callerId: userId,
    // No user id is "*": the shared answer's key cannot meet a caller's own.
    sharedKey: `${spec.action}\u0000*\u0000${query}`,
  };
}

/** The caller's own kept answer, else one kept for every caller but some, if the caller is not one. */
export function keptAnswer(responses: ResponseCache, slot: MicrocacheSlot, now: number): KeptJson | null {
  return (
    responses.get(slot.tag, slot.key, now) ?? responses.get(slot.tag, slot.sharedKey, now, slot.callerId)
  );
}

/** Answers up to this size are kept as text (see keptForm). */
export const SHORT_ANSWER_BYTES = 16 * 1024;

/**
 * What is kept to answer again: a short answer as text. Node writes a text body together with its
 * headers in one write, where a body of bytes goes as a second buffer of a vectored write, which cost a
 * kept answer more than decoding it once (decision 0107); a long answer stays bytes.
 */
export function keptForm(json: JsonBody): JsonBody {
  if (typeof json === "string") return json;
  const parts = Buffer.isBuffer(json) ? [json] : json;
  let length = 0;
  for (const part of parts) length += part.length;
  if (length > SHORT_ANSWER_BYTES) return json;
  return parts.length === 1 ? parts[0].toString("utf8") : Buffer.concat(parts, length).toString("utf8");
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
  if (!slot || res.statusCode !== 200 || freshUntil === undefined) return;
  const until = freshUntil ?? Number.POSITIVE_INFINITY;
  const others = slot.untilEvent ? undefined : meta?.$sameForAllBut;
  const kept = keptForm(json);
  if (others) responses.set(slot.tag, slot.sharedKey, kept, until, Date.now(), new Set(others));
  else responses.set(slot.tag, slot.key, kept, until, Date.now());
}
