/** Presentation rules shared by every service that renders prices and sellers (docs/decisions/0006). */

/** "150.00 RUB"; amounts are decimal major units, shown with two decimals. */
export function formatMoney(amount: number | string, currency: string): string {
  return `${Number(amount).toFixed(2)} ${currency}`;
}

/** An entry fee of zero reads "Free". */
export function formatEntryFee(fee: string, currency: string): string {
  return Number(fee) === 0 ? "Free" : formatMoney(fee, currency);
}

export function sellerType(store: { is_blogger: boolean }): "blogger" | "store" {
  return store.is_blogger ? "blogger" : "store";
}

/**
 * A round's `seconds_to_end` at `nowMs`: whole seconds left until `endsAtMs`, never below 0. The rounds
 * service renders it, and the gateway writes it into an answer it keeps (decision 0045), so both count
 * alike.
 */
export function secondsLeft(endsAtMs: number, nowMs: number): number {
  return Math.max(0, Math.floor((endsAtMs - nowMs) / 1000));
}
