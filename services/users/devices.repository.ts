/** Device registration tokens of users (push). One document per token: a token belongs to one user. */
import type { Collection, Store } from "../../shared/storage";
import { pagesOf } from "../../shared/contracts/paging";
import { DEVICE_TOKENS_PAGE_MAX } from "../../shared/contracts/users";

interface DeviceDoc {
  _id: string; // the registration token
  user_id: string;
  created_at: Date;
}

export class DevicesRepository {
  private readonly devices: Collection<DeviceDoc>;

  constructor(store: Store) {
    this.devices = store.collection<DeviceDoc>("devices");
  }

  async init(): Promise<void> {
    await this.devices.createIndex({ fields: ["user_id"] });
  }

  /** Registers (or moves) a token to a user. */
  async add(userId: string, token: string, now: Date): Promise<void> {
    await this.devices.updateOne(
      { _id: token },
      { $set: { user_id: userId, created_at: now } },
      { upsert: true },
    );
  }

  /** Inserts many at once; tokens already registered are left as they are. Resolves to the number added. */
  async import(devices: { user_id: string; token: string }[], now: Date): Promise<number> {
    const existing = new Set(
      (await this.devices.find({ _id: { $in: devices.map((d) => d.token) } })).map((d) => d._id),
    );
    const fresh = new Map(devices.filter((d) => !existing.has(d.token)).map((d) => [d.token, d.user_id]));
    await this.devices.insertMany(
      [...fresh].map(([token, userId]) => ({ _id: token, user_id: userId, created_at: now })),
    );
    return fresh.size;
  }

  /**
   * The users' tokens in sorted order, a page at a time (at most DEVICE_TOKENS_PAGE_MAX tokens and
   * 256 KiB: an answer is one packet), from the first token after `after`; `next` names where the
   * next page starts, null after the last.
   */
  async tokensOf(
    userIds: string[],
    after?: string,
  ): Promise<{ tokens: string[]; usersWithDevices: number; next: string | null }> {
    if (userIds.length === 0) return { tokens: [], usersWithDevices: 0, next: null };
    const docs = await this.devices.find({ user_id: { $in: userIds } });
    const all = docs.map((d) => d._id).sort();
    const rest = after === undefined ? all : all.filter((t) => t > after);
    const tokens = pagesOf(rest, DEVICE_TOKENS_PAGE_MAX)[0] ?? [];
    const next = tokens.length < rest.length ? tokens[tokens.length - 1] : null;
    return { tokens, usersWithDevices: new Set(docs.map((d) => d.user_id)).size, next };
  }

  prune(tokens: string[]): Promise<number> {
    return tokens.length === 0 ? Promise.resolve(0) : this.devices.deleteMany({ _id: { $in: tokens } });
  }
}
