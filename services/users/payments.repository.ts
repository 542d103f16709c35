/**
 * Payments, fed by `round.member.joined`. The id is derived from (user, round), so a redelivered event
 * or a repeated join meets a duplicate key instead of creating a second payment.
 */
import { createHash } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "../../shared/storage";

export interface PaymentDoc {
  _id: string;
  user_id: string;
  round_id: string;
  amount: string;
  currency: string;
  description: string;
  order_id: string;
  status: "pending";
  created_at: Date;
}

export function paymentIdentity(userId: string, roundId: string): { id: string; orderId: string } {
  const digest = createHash("sha256").update(`${userId}:${roundId}`).digest("hex");
  return { id: `pay_${digest.slice(0, 24)}`, orderId: `ORD-${digest.slice(24, 36).toUpperCase()}` };
}

export class PaymentsRepository {
  private readonly payments: Collection<PaymentDoc>;

  constructor(store: Store) {
    this.payments = store.collection<PaymentDoc>("payments");
  }

  async init(): Promise<void> {
    await this.payments.createIndex({ fields: ["user_id"] });
  }

  /** Resolves to false when the payment for this user and round exists already. */
  async createPending(p: Omit<PaymentDoc, "_id" | "order_id" | "status">): Promise<boolean> {
    const { id, orderId } = paymentIdentity(p.user_id, p.round_id);
    try {
      await this.payments.insertOne({ _id: id, order_id: orderId, status: "pending", ...p });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Newest first; ties by id so the order is stable. */
  listByUser(userId: string): Promise<PaymentDoc[]> {
    return this.payments.find({ user_id: userId }, { sort: { created_at: -1, _id: 1 } });
  }
}
