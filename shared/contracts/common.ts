import { Type, type TSchema } from "@sinclair/typebox";

/** A value that may be null; the key itself is still present in responses. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Ids of documents this system creates: URL-safe, and safe as keys of stored maps (no "." or "$"). */
export const Id = Type.String({ minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9_-]+$" });

export const DateTime = Type.String({ format: "date-time" });

/** The caller, as the gateway puts it in `ctx.meta.user` after authentication. */
export interface Caller {
  id: string;
  token_id: string;
}

/**
 * Set by a read that the gateway may serve again for a moment (routes with `microcacheTag`): until when
 * (epoch ms) its answer stays right, or null when only the gateway's own cap applies.
 */
export interface FreshnessMeta {
  $freshUntil?: number | null;
  /**
   * Set when the answer is every caller's but these (e.g. a public round's owner, members and those
   * who favourited it): the gateway may serve it to any other caller too, for as long as it holds.
   */
  $sameForAllBut?: string[];
  /**
   * Set with `$sameForAllBut` when the answer is a round whose `seconds_to_end` counts down: the rest
   * holds until `until` (null: no end), so the gateway may keep that long what it encoded of the rest
   * and write the number itself (decision 0045).
   */
  $countdown?: Countdown;
}

/** A `seconds_to_end` counting down to `to` (epoch ms, `secondsLeft` in shared/format). */
export interface Countdown {
  to: number;
  /** Until when (epoch ms) the rest of the answer holds; null: until the round changes. */
  until: number | null;
}

/** Meta every authenticated action call carries. */
export interface AuthMeta {
  user?: Caller | null;
}
