/** Realistic demo data for the seed: places, items with attribute groups, questions. */
import type { GroupedAttributeValue, RoundLocation } from "../contracts/round";

export const moscow: RoundLocation = {
  city: {
    name: "Moscow",
    district: "Tverskoy",
    subject: "Moscow",
    timezone: "Europe/Moscow",
    lat: 55.7558,
    lon: 37.6173,
    country: { code: "RU", name: "Russia", phone_code: "+7", currency: "RUB" },
  },
  address: "Tverskaya St, 7",
  lat: 55.7601,
  lon: 37.6143,
  postal_code: "125009",
};

export const headphoneAttributes: GroupedAttributeValue[] = [
  {
    id: 10,
    key_name: "color",
    name: "Color",
    type: "color",
    need_to_choose: true,
    choices: [
      { id: 101, value: "Black", value_hex: "#000000" },
      { id: 102, value: "White", value_hex: "#FFFFFF" },
      { id: 103, value: "Blue", value_hex: "#1E3A8A" },
    ],
  },
  {
    id: 20,
    key_name: "engraving",
    name: "Engraving",
    type: "text",
    need_to_choose: false,
    choices: [{ id: 201, value: "With engraving", value_hex: null }],
  },
];

export const questions = [
  { theme: "Cinema", emoji: "🎬", category: "Entertainment" },
  { theme: "Football", emoji: "⚽", category: "Sport" },
  { theme: "World capitals", emoji: "🌍", category: "Geography" },
];

export const demoPhone = (n: number): string => `+7900${String(n).padStart(7, "0")}`;
