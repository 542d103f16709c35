/**
 * An event round whose item has a meeting link and password, made as a client makes one: a store with
 * managers (the first of them posts the event, so owns the round), then the round the event opens.
 */
import { call } from "../../shared/contracts";
import { api, newUser, type System } from "./system";
import type { ManifestUser } from "../../shared/ops/seed";
import { eventFields, eventForm, pngBytes } from "./upload";

export const MEETING = { meeting_link: "https://meet.example.com/secret-room", meeting_password: "s3cret" };

export interface MeetingRound {
  roundId: string;
  owner: ManifestUser;
  /** Another manager of the store, neither owner nor member. */
  manager: ManifestUser;
}

export async function meetingRound(sys: System): Promise<MeetingRound> {
  const [owner, manager] = [await newUser(sys.broker, "mgr"), await newUser(sys.broker, "mgr")];
  const store = await call(sys.broker, "stores.createStore", {
    name: "Meeting Shop",
    is_blogger: false,
    manager_ids: [owner.id, manager.id],
  });
  const fields = eventFields({
    event_type: "online",
    city: undefined,
    address: undefined,
    latitude: undefined,
    longitude: undefined,
    country: undefined,
    postal_code: undefined,
    meeting_platform: "Zoom",
    ...MEETING,
  });
  const res = await fetch(`${sys.baseUrl}/stores/${store.id}/events`, {
    method: "POST",
    body: eventForm(fields, pngBytes()),
    headers: { authorization: `Bearer ${owner.access_token}` },
  });
  const event = (await res.json()) as { round_id?: string; detail?: unknown };
  if (res.status !== 200 || !event.round_id) throw new Error(`event not made: ${JSON.stringify(event)}`);
  // The round is opened from the event's fact, shortly after the answer.
  const deadline = Date.now() + 15_000;
  while ((await api(sys, "GET", `/rounds/${event.round_id}`, { token: owner.access_token })).status !== 200) {
    if (Date.now() > deadline) throw new Error(`round ${event.round_id} never opened`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { roundId: event.round_id, owner, manager };
}

/** The meeting fields of a round as `user` reads it (status and the two fields). */
export async function meetingAsSeenBy(sys: System, roundId: string, user: ManifestUser) {
  const res = await api(sys, "GET", `/rounds/${roundId}`, { token: user.access_token });
  if (res.status !== 200) throw new Error(`GET /rounds/${roundId} answered ${res.status}`);
  const { meeting_link, meeting_password } = res.body.item as Record<string, unknown>;
  return { meeting_link, meeting_password };
}
