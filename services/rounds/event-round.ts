/** How a store event becomes its round (docs/decisions/0023-store-event-form.md). */
import type { CreateRoundParams, QuestionInfo } from "../../shared/contracts/rounds";
import type { StoreEventCreatedEvent } from "../../shared/contracts/stores";
import type { RoundLocation } from "../../shared/contracts/round";
import { lookupCountry } from "../stores/countries";

export function eventRoundParams(e: StoreEventCreatedEvent, question: QuestionInfo): CreateRoundParams {
  const discount = Math.round(e.discount_percent);
  const locations: RoundLocation[] = e.location
    ? [
        {
          city: {
            name: e.location.city ?? "",
            district: null,
            subject: e.location.city ?? "",
            timezone: null,
            lat: e.location.latitude,
            lon: e.location.longitude,
            country: lookupCountry(e.location.country),
          },
          address: e.location.address,
          lat: e.location.latitude,
          lon: e.location.longitude,
          postal_code: e.location.postal_code ?? "",
        },
      ]
    : [];
  return {
    id: e.round_id,
    owner_id: e.owner_id,
    item_id: e.event_id,
    entry_fee: e.price.toFixed(2),
    max_members_count: e.participants_limit,
    is_active: e.is_active,
    is_private: false,
    is_ended: false,
    is_event: true,
    variant: "event",
    start_time: e.start_time,
    end_time: e.end_time,
    question: { id: question.id, theme: question.theme, emoji: question.emoji, category: question.category },
    certificate: { text: `${discount}% off at ${e.store_name}`, discount_percent: discount },
    locations,
    member_ids: [],
    favorite_of: [],
  };
}
