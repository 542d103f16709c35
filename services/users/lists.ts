/** The two per-user lists of the users service, in the spec's shapes (§2.13, §2.14). */
import type { Friend, Payment } from "../../shared/contracts/users";
import type { PaymentDoc } from "./payments.repository";
import type { UserDoc } from "./users.repository";

/**
 * Friends, alphabetical by first name, last name, then username (case-insensitive); removed users are
 * left out. The spec types every field as a string, so an empty name or avatar is "" rather than null.
 */
export function toFriends(users: UserDoc[]): Friend[] {
  const fields = (u: UserDoc) =>
    [u.first_name ?? "", u.last_name ?? "", u.username].map((f) => f.toLowerCase());
  // Field by field: joining them into one string would let "Al Zed" sort after "Alb Ann".
  const byName = (a: UserDoc, b: UserDoc): number => {
    const fa = fields(a);
    const fb = fields(b);
    for (let i = 0; i < fa.length; i++) {
      const d = fa[i].localeCompare(fb[i]);
      if (d !== 0) return d;
    }
    return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
  };
  return users
    .filter((u) => u.removed_at === null)
    .sort(byName)
    .map((u) => ({
      id: u._id,
      phone: u.phone,
      first_name: u.first_name ?? "",
      last_name: u.last_name ?? "",
      username: u.username,
      avatar_url: u.avatar_url ?? "",
    }));
}

export const toPayment = (p: PaymentDoc): Payment => ({
  id: p._id,
  amount: p.amount,
  description: p.description,
  order_id: p.order_id,
  status: p.status,
  round_id: p.round_id,
});
