/**
 * Which reads the gateway may answer from its microcache (gateway/response-cache), and under which key:
 * a route marked `microcacheTag`, for a known user; the tag groups the answers an event drops at once.
 */
import type { ServerResponse } from "node:http";
import type { FreshnessMeta } from "../../shared/contracts/common";
import type { Keep, KeptJson, ResponseCache } from "./response-cache";
import { byteLengthOf, type JsonBody } from "./write-json";
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

/** Answers up to this size are kept as text (see keptForm). */
export const SHORT_ANSWER_BYTES = 16 * 1024;

/**
 * What is kept to answer again: a short answer as text. Node writes a text body together with its
 * headers in one write, where a body of bytes goes as a second buffer of a vectored write, which cost a
 * kept answer more than decoding it once (decision 0045); a long answer stays bytes.
 */
export function keptForm(json: JsonBody): JsonBody {
  if (typeof json === "string") return json;
  const parts = Buffer.isBuffer(json) ? [json] : json;
  let length = 0;
  for (const part of parts) length += part.length;
  if (length > SHORT_ANSWER_BYTES) return json;
  return parts.length === 1 ? parts[0].toString("utf8") : Buffer.concat(parts, length).toString("utf8");
}

/**
 * A microcached read's 200 is kept for the time its service allows (ctx.meta.$freshUntil). An answer
 * that counts down (`$countdown`, a round's seconds_to_end in its last part) is kept without that part,
 * for as long as the rest holds; the gateway writes the number when it answers (decision 0045).
 */
export function keepAnswer(
  responses: ResponseCache,
  slot: MicrocacheSlot | undefined,
  meta: FreshnessMeta | undefined,
  res: ServerResponse,
  json: JsonBody,
): void {
  const freshUntil = slot?.untilEvent ? null : meta?.$freshUntil;
  if (!slot || res.statusCode !== 200 || freshUntil === undefined) return;
  const others = slot.untilEvent ? undefined : meta?.$sameForAllBut;
  const except = others ? new Set(others) : undefined;
  const countdown = except ? meta?.$countdown : undefined;
  const head = countdown ? headOf(json, countdown.headBytes) : null;
  const when = { now: Date.now(), asked: slot.asked, ...(except && { except }) };
  const keep: Keep =
    countdown && head
      ? { ...when, json: keptForm(head), freshUntil: countdown.until ?? Infinity, countdownTo: countdown.to }
      : { ...when, json: keptForm(json), freshUntil: freshUntil ?? Infinity };
  responses.set(slot.tag, except ? slot.sharedKey : slot.key, keep);
}

/**
 * The answer's first `headBytes` bytes, up to and including `"seconds_to_end":` (a round's answer in
 * parts, or joined on its way over NATS); null when the answer is not so made.
 */
function headOf(json: JsonBody, headBytes: number): Buffer | null {
  if (typeof json === "string" || byteLengthOf(json) <= headBytes) return null;
  const first = Buffer.isBuffer(json) ? json : json[0];
  const whole = first.length >= headBytes ? first : Buffer.concat(json as readonly Buffer[]);
  if (whole[headBytes - 1] !== COLON) return null;
  // A copy: what came over NATS is a view of the whole packet, which keeping it would keep too.
  return Buffer.from(whole.subarray(0, headBytes));
}

const COLON = 0x3a;
