/**
 * A small country table for event locations: the form gives a country name only, a round's location
 * needs its code, phone code and currency. Unknown countries keep their name with empty codes and the
 * default currency (see docs/decisions/0023-store-event-form.md).
 */
export interface CountryInfo {
  code: string;
  name: string;
  phone_code: string;
  currency: string;
}

const countries: CountryInfo[] = [
  { code: "RU", name: "Russia", phone_code: "+7", currency: "RUB" },
  { code: "KZ", name: "Kazakhstan", phone_code: "+7", currency: "KZT" },
  { code: "BY", name: "Belarus", phone_code: "+375", currency: "BYN" },
  { code: "AM", name: "Armenia", phone_code: "+374", currency: "AMD" },
  { code: "GE", name: "Georgia", phone_code: "+995", currency: "GEL" },
  { code: "UZ", name: "Uzbekistan", phone_code: "+998", currency: "UZS" },
  { code: "TR", name: "Turkey", phone_code: "+90", currency: "TRY" },
  { code: "AE", name: "United Arab Emirates", phone_code: "+971", currency: "AED" },
  { code: "DE", name: "Germany", phone_code: "+49", currency: "EUR" },
  { code: "GB", name: "United Kingdom", phone_code: "+44", currency: "GBP" },
  { code: "US", name: "United States", phone_code: "+1", currency: "USD" },
];

export function lookupCountry(name: string | null, defaultCurrency: string): CountryInfo {
  const key = (name ?? "").trim().toLowerCase();
  const found = countries.find((c) => c.name.toLowerCase() === key || c.code.toLowerCase() === key);
  return found ?? { code: "", name: name ?? "", phone_code: "", currency: defaultCurrency };
}
