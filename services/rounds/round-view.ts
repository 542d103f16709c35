/**
 * Renders a Round (spec §2.1) from a snapshot for one caller at one instant. Everything computed lives
 * here: status, is_ended by time, seconds_to_end, the format_* strings, seller_type, in_favorites and the
 * caller-dependent masking of participants' phone numbers and of the item's meeting link and password.
 * See docs/decisions/0006 for each rule, 0019 for the meeting's.
 */
import type { Round, RoundItem, RoundParticipant } from "../../shared/contracts/round";
import type { ItemInfo } from "../../shared/contracts/stores";
import { formatEntryFee, formatMoney, secondsLeft, sellerType } from "../../shared/format";
import { isMember, type RoundSnapshot } from "./round-snapshot";

export type RoundStatus = "open" | "full" | "inactive" | "ended";

export function isEndedAt(snap: Pick<RoundSnapshot, "is_ended" | "end_time">, now: Date): boolean {
  return snap.is_ended || (snap.end_time !== null && Date.parse(snap.end_time) <= now.getTime());
}

export function roundStatus(snap: RoundSnapshot, now: Date): RoundStatus {
  if (isEndedAt(snap, now)) return "ended";
  if (!snap.is_active) return "inactive";
  if (snap.members_count >= snap.max_members_count) return "full";
  return "open";
}

export function formatStatus(status: RoundStatus, snap: RoundSnapshot): string {
  switch (status) {
    case "ended":
      return "Ended";
    case "inactive":
      return "Not active";
    case "full":
      return "Full";
    case "open": {
      const left = snap.max_members_count - snap.members_count;
      return `Open: ${left} of ${snap.max_members_count} ${snap.max_members_count === 1 ? "seat" : "seats"} left`;
    }
  }
}

/** Whole seconds until end_time, never negative; 0 when the round has no end time. */
export function secondsToEnd(endTime: string | null, now: Date): number {
  return endTime === null ? 0 : secondsLeft(Date.parse(endTime), now.getTime());
}

/**
 * Until when (epoch ms, exclusive) a rendered round stays exactly what a new render would give: its
 * clock-driven fields change when seconds_to_end ticks and when end_time passes. Null when nothing in
 * it moves with the clock (no end time, or already ended).
 */
export function renderedUntil(round: Pick<Round, "is_ended" | "end_time" | "seconds_to_end">): number | null {
  if (round.is_ended || !round.end_time) return null;
  return Date.parse(round.end_time) - round.seconds_to_end * 1000;
}

/** Keeps the first two and the last four characters: "+7******4567". */
export function maskPhone(phone: string): string {
  if (phone.length <= 6) return "*".repeat(phone.length);
  return phone.slice(0, 2) + "*".repeat(phone.length - 6) + phone.slice(-4);
}

/** Whether an item carries a meeting link or password, which only some callers see. */
export const hasMeeting = (item: Pick<ItemInfo, "meeting_link" | "meeting_password">): boolean =>
  (item.meeting_link ?? null) !== null || (item.meeting_password ?? null) !== null;

/** The store's managers (none when the item came from a stores process that did not say). */
export const managersOf = (item: Pick<ItemInfo, "store">): readonly string[] => item.store.manager_ids ?? [];

/**
 * Who sees the round's meeting link and password: its owner, its members and the managers of the
 * item's store; everyone else reads null (docs/decisions/0019).
 */
export function seesMeeting(snap: RoundSnapshot, callerId: string): boolean {
  return callerId === snap.owner_id || isMember(snap, callerId) || managersOf(snap.item).includes(callerId);
}

export function renderItem(item: ItemInfo, showMeeting = false): RoundItem {
  const { kind: _kind, store, ...rest } = item;
  return {
    ...rest,
    meeting_link: showMeeting ? rest.meeting_link : null,
    meeting_password: showMeeting ? rest.meeting_password : null,
    store: {
      id: store.id,
      name: store.name,
      logo_url: store.logo_url,
      is_blogger: store.is_blogger,
      seller_type: sellerType(store),
    },
    format_price: formatMoney(item.platform_price, store.currency),
  };
}

function renderParticipants(snap: RoundSnapshot, callerId: string): RoundParticipant[] {
  const seesPhones = callerId === snap.owner_id;
  const out: RoundParticipant[] = [];
  for (const m of snap.members) {
    const p = snap.profiles[m.user_id];
    if (!p || p.removed) continue;
    out.push({
      status: m.status,
      user: {
        id: p.id,
        phone: seesPhones || p.id === callerId ? p.phone : maskPhone(p.phone),
        username: p.username,
        first_name: p.first_name,
        last_name: p.last_name,
        avatar_url: p.avatar_url,
      },
    });
  }
  return out;
}

export function renderRound(snap: RoundSnapshot, callerId: string, now: Date): Round {
  const status = roundStatus(snap, now);
  const owner = snap.owner;
  return {
    id: snap.id,
    uniq_id: snap.uniq_id,
    status,
    entry_fee: snap.entry_fee,
    is_active: snap.is_active,
    is_private: snap.is_private,
    is_ended: status === "ended",
    is_event: snap.is_event,
    start_time: snap.start_time,
    end_time: snap.end_time,
    owner: {
      id: snap.owner_id,
      first_name: owner?.first_name ?? null,
      last_name: owner?.last_name ?? null,
      avatar_url: owner?.avatar_url ?? null,
    },
    members_count: snap.members_count,
    max_members_count: snap.max_members_count,
    variant: snap.variant,
    item: renderItem(snap.item, hasMeeting(snap.item) && seesMeeting(snap, callerId)),
    participant_statuses: renderParticipants(snap, callerId),
    in_favorites: snap.favorites.includes(callerId),
    question: {
      category_theme: {
        name: snap.question.theme,
        emoji: snap.question.emoji,
        category: { name: snap.question.category },
      },
    },
    certificate: snap.certificate,
    locations: snap.locations,
    seconds_to_end: secondsToEnd(snap.end_time, now),
    format_entry_fee: formatEntryFee(snap.entry_fee, snap.currency),
    format_status: formatStatus(status, snap),
  };
}
