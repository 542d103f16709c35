/**
 * Which reads the gateway may answer from its microcache (gateway/response-cache), and under which key:
 * a route marked `microcacheTag`, for a known user; the tag groups the answers an event drops at once.
 */
import type { ServerResponse } from "node:http";
import type { FreshnessMeta } from "../../shared/contracts/common";
import type { Keep, KeptJson, ResponseCache } from "./response-cache";
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
  /** The cache's version when the call was made (ResponseCache's `Keep.asked`). */
  asked: number;
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
    asked: responses.version,
  };
}

/** The caller's own kept answer, else one kept for every caller but some, if the caller is not one. */
export function keptAnswer(responses: ResponseCache, slot: MicrocacheSlot, now: number): KeptJson | null {
  return (
    responses.get(slot.tag, slot.key, now) ?? responses.get(slot.tag, slot.sharedKey, now, slot.callerId)
  );
}

/**
 * moleculer-web's `encodeResponse` for the gateway: the answer's JSON, and a microcached read's 200 kept
 * for the time its service allows (ctx.meta.$freshUntil). An answer every caller's but some that counts
 * down (`$countdown`, a round's seconds_to_end) is encoded with that number last and kept without it,
 * for as long as the rest holds; the gateway writes the number when it answers (decision 0045).
 */
export function encodeAnswer(
  responses: ResponseCache,
  slot: MicrocacheSlot | undefined,
  meta: FreshnessMeta | undefined,
  res: ServerResponse,
  data: unknown,
): string {
  const freshUntil = slot?.untilEvent ? null : meta?.$freshUntil;
  if (!slot || res.statusCode !== 200 || freshUntil === undefined) return JSON.stringify(data);
  const others = slot.untilEvent ? undefined : meta?.$sameForAllBut;
  const except = others ? new Set(others) : undefined;
  const countdown = except ? meta?.$countdown : undefined;
  const head = countdown ? countdownHead(data) : null;
  const when = { now: Date.now(), asked: slot.asked, ...(except && { except }) };
  let json: string;
  let keep: Keep;
  if (countdown && head) {
    json = `${head}${(data as Countdowned).seconds_to_end}}`;
    keep = { ...when, json: head, freshUntil: countdown.until ?? Infinity, countdownTo: countdown.to };
  } else {
    json = JSON.stringify(data);
    keep = { ...when, json, freshUntil: freshUntil ?? Infinity };
  }
  responses.set(slot.tag, except ? slot.sharedKey : slot.key, keep);
  return json;
}

type Countdowned = Record<string, unknown> & { seconds_to_end: number };

/** A round's JSON without its seconds_to_end, up to and including `"seconds_to_end":`; null if none. */
function countdownHead(data: unknown): string | null {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return null;
  const { seconds_to_end: seconds, ...rest } = data as Record<string, unknown>;
  if (typeof seconds !== "number") return null;
  const json = JSON.stringify(rest);
  return json === "{}" ? null : `${json.slice(0, -1)},"seconds_to_end":`;
}
