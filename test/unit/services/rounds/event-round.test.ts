/** How a store event becomes its round: the mapping of store.event.created onto CreateRoundParams. */
import { eventRoundParams } from "../../../../services/rounds/event-round";
import { DEFAULT_CURRENCY, lookupCountry } from "../../../../services/stores/countries";
import { CreateRoundParams, eventRoundId, type QuestionInfo } from "../../../../shared/contracts/rounds";
import type { StoreEventCreatedEvent } from "../../../../shared/contracts/stores";
import { check } from "../../../../shared/validation";
import { jazzClubPlace } from "../../support/fixtures";

const QUESTION: QuestionInfo = { id: 3, theme: "World capitals", emoji: "🌍", category: "Geography" };

const created = (overrides: Partial<StoreEventCreatedEvent> = {}): StoreEventCreatedEvent => ({
  event_id: "0b6f3c55-8a8e-4c1e-9d0f-2f3e4a5b6c7d",
  round_id: eventRoundId("0b6f3c55-8a8e-4c1e-9d0f-2f3e4a5b6c7d"),
  store_id: 7,
  owner_id: "manager-1",
  price: 1500.5,
  currency: "RUB",
  start_time: "2030-02-01T15:30:00.000Z",
  end_time: "2030-02-01T17:00:00.000Z",
  participants_limit: 40,
  discount_percent: 15,
  question_id: QUESTION.id,
  is_active: true,
  store_name: "Jazz Club",
  location: jazzClubPlace,
  ...overrides,
});

describe("eventRoundParams", () => {
  it("when an offline event is mapped, then the round is the event's, with every field carried over", () => {
    const params = eventRoundParams(created(), QUESTION);
    expect(check(CreateRoundParams, params)).toBe(true);
    expect(params).toEqual({
      id: eventRoundId("0b6f3c55-8a8e-4c1e-9d0f-2f3e4a5b6c7d"),
      owner_id: "manager-1",
      item_id: "0b6f3c55-8a8e-4c1e-9d0f-2f3e4a5b6c7d",
      entry_fee: "1500.50",
      max_members_count: 40,
      is_active: true,
      is_private: false,
      is_ended: false,
      is_event: true,
      variant: "event",
      start_time: "2030-02-01T15:30:00.000Z",
      end_time: "2030-02-01T17:00:00.000Z",
      question: { id: 3, theme: "World capitals", emoji: "🌍", category: "Geography" },
      certificate: { text: "15% off at Jazz Club", discount_percent: 15 },
      locations: [
        {
          city: {
            name: "Moscow",
            district: null,
            subject: "Moscow",
            timezone: null,
            lat: 55.7558,
            lon: 37.6173,
            country: { code: "RU", name: "Russia", phone_code: "+7", currency: "RUB" },
          },
          address: "Tverskaya 1",
          lat: 55.7558,
          lon: 37.6173,
          postal_code: "125009",
        },
      ],
      member_ids: [],
      favorite_of: [],
    });
  });

  it("when the round id is mapped, then it is the event's derived round id, so a redelivery collides", () => {
    const e = created();
    expect(eventRoundParams(e, QUESTION).id).toBe(e.round_id);
    expect(eventRoundParams(e, QUESTION).id).toBe(eventRoundParams(e, QUESTION).id);
  });

  it.each([
    [0, "0.00"],
    [10, "10.00"],
    [99.999, "100.00"],
    [0.1 + 0.2, "0.30"],
    [100_000_000, "100000000.00"],
  ])("when the price is %p, then entry_fee is %p (two decimals)", (price, fee) => {
    const params = eventRoundParams(created({ price }), QUESTION);
    expect(params.entry_fee).toBe(fee);
    expect(check(CreateRoundParams, params)).toBe(true);
  });

  it.each([
    [12.4, 12],
    [12.5, 13],
    [0, 0],
    [100, 100],
    [99.6, 100],
  ])("when discount_percent is %p, then the certificate discount is the integer %p", (discount, expected) => {
    const params = eventRoundParams(created({ discount_percent: discount }), QUESTION);
    expect(params.certificate.discount_percent).toBe(expected);
    expect(params.certificate.text).toBe(`${expected}% off at Jazz Club`);
    expect(check(CreateRoundParams, params)).toBe(true);
  });

  it("when participants_limit is 1, then max_members_count is 1", () => {
    expect(eventRoundParams(created({ participants_limit: 1 }), QUESTION).max_members_count).toBe(1);
  });

  it("when the event is inactive, then so is its round", () => {
    expect(eventRoundParams(created({ is_active: false }), QUESTION).is_active).toBe(false);
  });

  it("when the question has no emoji, then the round's question carries null", () => {
    const q: QuestionInfo = { id: 9, theme: "Space", emoji: null, category: "Science" };
    expect(eventRoundParams(created(), q).question).toEqual({
      id: 9,
      theme: "Space",
      emoji: null,
      category: "Science",
    });
  });

  it("when the event has no location (online), then the round has no locations", () => {
    const params = eventRoundParams(created({ location: null }), QUESTION);
    expect(params.locations).toEqual([]);
    expect(check(CreateRoundParams, params)).toBe(true);
  });

  it("when the country is unknown, then it keeps its name with empty codes and the default currency", () => {
    const e = created({ location: { ...created().location!, country: "Atlantis" } });
    const params = eventRoundParams(e, QUESTION);
    expect(params.locations[0].city.country).toEqual({
      code: "",
      name: "Atlantis",
      phone_code: "",
      currency: DEFAULT_CURRENCY,
    });
    expect(check(CreateRoundParams, params)).toBe(true);
  });

  it("when city, country and postal code are null, then they become empty strings with the default currency", () => {
    const e = created({
      location: {
        address: "Somewhere 1",
        city: null,
        country: null,
        postal_code: null,
        latitude: -33.9,
        longitude: 151.2,
      },
    });
    const [loc] = eventRoundParams(e, QUESTION).locations;
    expect(loc).toEqual({
      city: {
        name: "",
        district: null,
        subject: "",
        timezone: null,
        lat: -33.9,
        lon: 151.2,
        country: { code: "", name: "", phone_code: "", currency: DEFAULT_CURRENCY },
      },
      address: "Somewhere 1",
      lat: -33.9,
      lon: 151.2,
      postal_code: "",
    });
  });
});

describe("lookupCountry", () => {
  it.each(["Russia", "russia", "  RUSSIA ", "RU", "ru"])(
    "when the country is given as %p, then it is Russia with RU, +7 and RUB",
    (name) => {
      expect(lookupCountry(name)).toEqual({
        code: "RU",
        name: "Russia",
        phone_code: "+7",
        currency: "RUB",
      });
    },
  );

  it("when the country is Germany, then its currency is EUR, not the default", () => {
    expect(lookupCountry("Germany")).toEqual({
      code: "DE",
      name: "Germany",
      phone_code: "+49",
      currency: "EUR",
    });
  });

  it.each([
    ["Japan", { code: "JP", name: "Japan", phone_code: "+81", currency: "JPY" }],
    ["jp", { code: "JP", name: "Japan", phone_code: "+81", currency: "JPY" }],
    ["Brazil", { code: "BR", name: "Brazil", phone_code: "+55", currency: "BRL" }],
    ["KE", { code: "KE", name: "Kenya", phone_code: "+254", currency: "KES" }],
    ["Turkey", { code: "TR", name: "Türkiye", phone_code: "+90", currency: "TRY" }],
    ["USA", { code: "US", name: "United States", phone_code: "+1", currency: "USD" }],
    ["Deutschland", { code: "DE", name: "Germany", phone_code: "+49", currency: "EUR" }],
  ])("when the country is given as %p, then it gets its ISO code, phone code and currency", (name, info) => {
    expect(lookupCountry(name)).toEqual(info);
  });

  it("when a country has no currency of its own (Antarctica), then it gets the default currency", () => {
    expect(lookupCountry("AQ")).toEqual({
      code: "AQ",
      name: "Antarctica",
      phone_code: "+672",
      currency: DEFAULT_CURRENCY,
    });
  });

  it("when the country is unknown, then its name is kept with empty codes and the default currency", () => {
    expect(lookupCountry("Narnia")).toEqual({
      code: "",
      name: "Narnia",
      phone_code: "",
      currency: DEFAULT_CURRENCY,
    });
  });

  it("when the country is null, then it is an empty name with the default currency", () => {
    expect(lookupCountry(null)).toEqual({
      code: "",
      name: "",
      phone_code: "",
      currency: DEFAULT_CURRENCY,
    });
  });
});
