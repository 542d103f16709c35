/**
 * The Idempotency-Keys of store events (collection `event_keys`; docs/decisions/0023). One record per
 * (user, key), made when the key is first used: it names the id the key's event will have (drawn
 * then, before the body is read) and who holds the key now (a lease). The record does not say whether
 * the event exists: the event item with that id does, inserted in one write with its announcement, so
 * a crash at any point leaves either no event (a retry creates it) or the event (a retry replays it).
 * The lease only tells a retry that the first attempt is still running; a dead holder's lease runs
 * out by itself. A record is deleted once it expires (EVENT_KEY_TTL_MS after its first use):
 * hourly by the stores service's sweep, and on MongoDB by a TTL index as well.
 */
import { createHash, randomUUID } from "node:crypto";
import type { Config } from "../../shared/config";
import { DuplicateKeyError, type Collection, type Store } from "../../shared/storage";
import { UPLOAD_TIMEOUT_MS } from "../../shared/contracts/stores";

export interface EventKeyDoc {
  /** `eventKeyId(user, key)`: the key itself is not stored. */
  _id: string;
  /** The id of the event item this key creates (or created). */
  event_id: string;
  /** The request holding the key (drawn by the gateway), and until when. */
  lease_owner: string;
  lease_until: Date;
  created_at: Date;
  /** Never before `lease_until`, so no key goes while a request holds it. */
  expires_at: Date;
}

/**
 * How long a store event's key is remembered from its first use: 24 hours, the span clients and
 * payment APIs commonly give an Idempotency-Key, far beyond any retry of an upload (each bounded by
 * UPLOAD_TIMEOUT_MS), and a record is a few hundred bytes per event.
 */
export const EVENT_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * How long a request holds its key: the longest an upload may take (UPLOAD_TIMEOUT_MS), plus the
 * longest its `createEvent` call may still run after that (REQUEST_TIMEOUT_MS). A holder that died
 * (kill -9 of the gateway) frees the key after this; one that lived gives it back as it answers.
 */
export const keyLeaseMs = (config: Pick<Config, "requestTimeoutMs">): number =>
  UPLOAD_TIMEOUT_MS + config.requestTimeoutMs;

export type Claim = { claimed: true; eventId: string } | { claimed: false };

/** A key is scoped to the user who sent it: another user's same key is another record. */
export const eventKeyId = (userId: string, key: string): string =>
  createHash("sha256").update(`store-event\u0000${userId}\u0000${key}`).digest("hex");

const later = (a: Date, b: Date): Date => (a.getTime() >= b.getTime() ? a : b);

export class EventKeysRepository {
  private readonly keys: Collection<EventKeyDoc>;

  constructor(store: Store) {
    this.keys = store.collection<EventKeyDoc>("event_keys");
  }

  async init(): Promise<void> {
    // The sweep's range, and on MongoDB the deletion of expired keys even when no stores process runs.
    await this.keys.createIndex({ fields: ["expires_at"], expireAfterSeconds: 0 });
  }

  /**
   * Takes the key for the request `owner` until `now + leaseMs`: a new key (or an expired one, which
   * counts as new) gets a record and a fresh event id; a known key is taken over when its lease is over
   * (or is this owner's already: a repeated call). Refused while another request holds it.
   */
  async claim(id: string, owner: string, now: Date, leaseMs: number, ttlMs: number): Promise<Claim> {
    const leaseUntil = new Date(now.getTime() + leaseMs);
    // Twice at most: a record found expired (or swept meanwhile) is replaced by a new one once.
    for (let attempt = 0; attempt < 2; attempt++) {
      const eventId = randomUUID();
      try {
        await this.keys.insertOne({
          _id: id,
          event_id: eventId,
          lease_owner: owner,
          lease_until: leaseUntil,
          created_at: now,
          expires_at: later(new Date(now.getTime() + ttlMs), leaseUntil),
        });
        return { claimed: true, eventId };
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      const doc = await this.keys.findOne({ _id: id });
      if (!doc) continue;
      if (doc.expires_at.getTime() <= now.getTime()) {
        await this.keys.deleteOne({ _id: id, lease_owner: doc.lease_owner });
        continue;
      }
      if (doc.lease_owner !== owner && doc.lease_until.getTime() > now.getTime()) return { claimed: false };
      // Compare-and-set on the holder read: of two retries taking over at once, one wins.
      const taken = await this.keys.updateOne(
        { _id: id, lease_owner: doc.lease_owner },
        {
          $set: {
            lease_owner: owner,
            lease_until: leaseUntil,
            expires_at: later(doc.expires_at, leaseUntil),
          },
        },
      );
      return taken === 1 ? { claimed: true, eventId: doc.event_id } : { claimed: false };
    }
    return { claimed: false };
  }

  /** The event id of a key that has not expired, or null. */
  async eventIdOf(id: string, now: Date): Promise<string | null> {
    const doc = await this.keys.findOne({ _id: id });
    return doc && doc.expires_at.getTime() > now.getTime() ? doc.event_id : null;
  }

  /** Ends `owner`'s lease (a no-op when another request holds the key now); the record stays until it expires. */
  async release(id: string, owner: string, now: Date): Promise<boolean> {
    return (await this.keys.updateOne({ _id: id, lease_owner: owner }, { $set: { lease_until: now } })) === 1;
  }

  /** Deletes the keys that expired by `now`; resolves to how many. */
  deleteExpired(now: Date): Promise<number> {
    return this.keys.deleteMany({ expires_at: { $lte: now, $ne: null } });
  }
}
