/**
 * A round's location needs its country's code, phone code and currency; the event form gives the
 * country by name or ISO 3166-1 alpha-2 code. Every country countries-list knows is found by its
 * English name, a former or short name it lists (Turkey, USA), its native name or its code. A
 * country it does not know keeps its name with empty codes and the default currency (see
 * docs/decisions/0023-store-event-form.md).
 */
import { countries, type ICountry, type TCountryCode } from "countries-list";

export interface CountryInfo {
  code: string;
  name: string;
  phone_code: string;
  currency: string;
}

/**
 * The currency of a round or store whose country is not given or not known, or has none of its own
 * (Antarctica): the rubles of the first market. Every known country carries its own, so this is only the
 * fallback a form without a country gets, and one value keeps such amounts comparable across nodes.
 */
export const DEFAULT_CURRENCY = "RUB";

let byKey: Map<string, CountryInfo> | null = null;

const keyOf = (name: string) => name.trim().toLowerCase();

/** A country's location fields: its first calling code and first currency, as the package orders them. */
function infoOf(code: string, c: ICountry): CountryInfo {
  return {
    code,
    name: c.name,
    phone_code: c.phone.length > 0 ? `+${c.phone[0]}` : "",
    currency: c.currency[0] ?? "",
  };
}

/** Every name and code (lower case) → the country's fields; built on the first lookup. */
function index(): Map<string, CountryInfo> {
  if (byKey) return byKey;
  byKey = new Map();
  // Names first, then codes: a code never hides a name, nor an alias a country's own name.
  const entries = Object.entries(countries) as [TCountryCode, ICountry][];
  for (const pass of [
    (c: ICountry) => [c.name],
    (c: ICountry) => [...(c.alias ?? []), c.native],
    (_: ICountry, code: string) => [code],
  ]) {
    for (const [code, c] of entries) {
      for (const key of pass(c, code)) {
        if (!byKey.has(keyOf(key))) byKey.set(keyOf(key), infoOf(code, c));
      }
    }
  }
  return byKey;
}

export function lookupCountry(name: string | null): CountryInfo {
  const found = index().get(keyOf(name ?? ""));
  if (!found) return { code: "", name: name ?? "", phone_code: "", currency: DEFAULT_CURRENCY };
  return found.currency === "" ? { ...found, currency: DEFAULT_CURRENCY } : { ...found };
}
