/**
 * A round with everything needed to render it (owner and member profiles, item with its store), in a
 * JSON-safe form so it can live in any cacher (memory or Redis). Per-caller and time-dependent fields
 * are never part of it: `renderRound` adds them on every response.
 */
import type { ItemInfo } from "../../shared/contracts/stores";
import type { UserProfile } from "../../shared/contracts/users";
import type { RoundDoc, RoundRead } from "./round-doc";

export interface SnapshotMember {
  user_id: string;
  status: string;
  joined_at: string;
}

export interface RoundSnapshot {
  id: string;
  uniq_id: string;
  owner_id: string;
  entry_fee: string;
  currency: string;
  variant: string;
  is_active: boolean;
  is_private: boolean;
  is_ended: boolean;
  is_event: boolean;
  start_time: string | null;
  end_time: string | null;
  max_members_count: number;
  members_count: number;
  /** In joining order. */
  members: SnapshotMember[];
  favorites: string[];
  question: RoundDoc["question"];
  certificate: RoundDoc["certificate"];
  locations: RoundDoc["locations"];
  owner: UserProfile | null;
  profiles: Record<string, UserProfile>;
  item: ItemInfo;
  /**
   * When the profiles and item were read (ms since the epoch). A snapshot derived from an earlier one
   * keeps its time, so nothing in it is ever older than one cache lifetime (`deriveSnapshot`).
   */
  assembled_at: number;
}

const iso = (d: Date | null): string | null => (d ? new Date(d).toISOString() : null);

export function buildSnapshot(
  doc: RoundRead,
  profiles: Record<string, UserProfile>,
  item: ItemInfo,
  assembledAt: number,
): RoundSnapshot {
  const members = Object.entries(doc.members ?? {})
    .map(([user_id, m]) => ({ user_id, status: m.status, joined_at: new Date(m.joined_at).toISOString() }))
    .sort((a, b) =>
      a.joined_at < b.joined_at ? -1 : a.joined_at > b.joined_at ? 1 : a.user_id < b.user_id ? -1 : 1,
    );
  return {
    id: doc._id,
    uniq_id: doc.uniq_id,
    owner_id: doc.owner_id,
    entry_fee: doc.entry_fee,
    currency: doc.currency,
    variant: doc.variant,
    is_active: doc.is_active,
    is_private: doc.is_private,
    is_ended: doc.is_ended,
    is_event: doc.is_event,
    start_time: iso(doc.start_time),
    end_time: iso(doc.end_time),
    max_members_count: doc.max_members_count,
    members_count: doc.members_count,
    members,
    favorites: Object.keys(doc.favorites ?? {}),
    question: doc.question,
    certificate: doc.certificate,
    locations: [...doc.locations],
    owner: profiles[doc.owner_id] ?? null,
    profiles,
    item,
    assembled_at: assembledAt,
  };
}

/**
 * A derived snapshot must still have at least this share of a cache lifetime ahead of it; an older base
 * is assembled afresh, so a round joined every few seconds still reads its profiles once a lifetime.
 */
const LEAST_LIFE_LEFT = 0.25;

/**
 * The snapshot of `doc` built from `base`, a snapshot of an earlier revision of the same round (a join
 * changes the members only): the item and the profiles `base` has are reused, and `fetch` reads only
 * the profiles it lacks (the newcomer's). Null when `base` cannot serve: another item, no assembly time
 * (written by an older release), or too little of its lifetime (`ttlMs`) left at `now`.
 */
export async function deriveSnapshot(
  base: RoundSnapshot,
  doc: RoundRead,
  now: number,
  ttlMs: number,
  fetch: (ids: string[]) => Promise<Record<string, UserProfile>>,
): Promise<RoundSnapshot | null> {
  if (base.item.id !== doc.item_id || typeof base.assembled_at !== "number") return null;
  if (base.assembled_at + ttlMs - now < ttlMs * LEAST_LIFE_LEFT) return null;
  const ids = profileIdsOf(doc);
  const missing = ids.filter((id) => !Object.hasOwn(base.profiles, id));
  const fetched = missing.length > 0 ? await fetch(missing) : {};
  const profiles: Record<string, UserProfile> = {};
  for (const id of ids) {
    const profile = Object.hasOwn(base.profiles, id) ? base.profiles[id] : fetched[id];
    if (profile) profiles[id] = profile;
  }
  return buildSnapshot(doc, profiles, base.item, base.assembled_at);
}

/** Ids whose profiles a snapshot needs: the owner and every member. */
export const profileIdsOf = (doc: RoundRead): string[] => [
  ...new Set([doc.owner_id, ...Object.keys(doc.members ?? {})]),
];

export const isMember = (snap: RoundSnapshot, userId: string): boolean =>
  snap.members.some((m) => m.user_id === userId);
