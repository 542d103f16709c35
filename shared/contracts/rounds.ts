/** Contracts of the rounds service: reading and joining rounds, and the `round.member.joined` event. */
import { createHash } from "node:crypto";
import { Type, type Static } from "@sinclair/typebox";
import { DateTime, Id, Nullable } from "./common";
import { RoundCertificate, RoundLocation } from "./round";

/** Path ids are free strings in the spec; anything that is not one of ours is simply not found. */
export const RoundIdParam = Type.String({ minLength: 1, maxLength: 200 });

export const GetRoundParams = Type.Object({ round_id: RoundIdParam });
export type GetRoundParams = Static<typeof GetRoundParams>;

/**
 * §4.1: `attributes` holds "integers or items of any type"; the schema accepts any entry and the join
 * rule decides which are choice ids of the round's item (a 422 per bad entry otherwise).
 */
export const JoinRoundParams = Type.Object({
  round_id: RoundIdParam,
  attributes: Type.Array(Type.Unknown(), { default: [], maxItems: 100 }),
});
export type JoinRoundParams = Static<typeof JoinRoundParams>;

export const RoundVariant = Type.Union([Type.Literal("standard"), Type.Literal("event")]);

export const CreateRoundParams = Type.Object({
  /** Set for rounds derived from something else (an event's round); random otherwise. */
  id: Type.Optional(Id),
  owner_id: Id,
  item_id: Id,
  entry_fee: Type.String({ pattern: "^\\d{1,9}(\\.\\d{1,2})?$" }),
  max_members_count: Type.Integer({ minimum: 1, maximum: 100_000 }),
  is_active: Type.Boolean({ default: true }),
  is_private: Type.Boolean({ default: false }),
  is_ended: Type.Boolean({ default: false }),
  is_event: Type.Boolean({ default: false }),
  variant: Type.Optional(RoundVariant),
  start_time: Type.Optional(Nullable(DateTime)),
  end_time: Type.Optional(Nullable(DateTime)),
  question: Type.Object({
    id: Type.Optional(Type.Integer()),
    theme: Type.String({ minLength: 1 }),
    emoji: Type.Optional(Nullable(Type.String())),
    category: Type.String({ minLength: 1 }),
  }),
  certificate: Type.Object({
    text: Type.String(),
    discount_percent: Type.Integer({ minimum: 0, maximum: 100 }),
  }),
  locations: Type.Array(RoundLocation, { default: [] }),
  /** Users already in the round at creation (seed fixtures). */
  member_ids: Type.Array(Id, { default: [] }),
  favorite_of: Type.Array(Id, { default: [] }),
});
export type CreateRoundParams = Static<typeof CreateRoundParams>;
export type CertificateInput = Static<typeof RoundCertificate>;

/** Event `round.member.joined`, emitted once per new membership. */
export const RoundMemberJoinedEvent = Type.Object({
  round_id: Type.String(),
  uniq_id: Type.String(),
  user_id: Type.String(),
  attributes: Type.Array(Type.Integer()),
  entry_fee: Type.String(),
  currency: Type.String(),
  joined_at: DateTime,
});
export type RoundMemberJoinedEvent = Static<typeof RoundMemberJoinedEvent>;

/**
 * The id of the round opened for a store event, derived from the event id so that the stores service
 * can report it at once and a redelivered `store.event.created` meets a duplicate key.
 */
export function eventRoundId(eventId: string): string {
  const h = createHash("sha256").update(`event-round:${eventId}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface QuestionInfo {
  id: number;
  theme: string;
  emoji: string | null;
  category: string;
}
