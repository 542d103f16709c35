/** The api_keys collection of the auth service. */
import type { Collection, Store } from "../../shared/storage";
import type { ApiKeyDoc, ApiKeyScope } from "./api-keys";

export class ApiKeysRepository {
  private readonly keys: Collection<ApiKeyDoc>;

  constructor(store: Store) {
    this.keys = store.collection<ApiKeyDoc>("api_keys");
  }

  create(input: { id: string; scope: ApiKeyScope; secretHash: string; label: string | null }, now: Date) {
    return this.keys.insertOne({
      _id: input.id,
      scope: input.scope,
      secret_hash: input.secretHash,
      label: input.label,
      created_at: now,
      revoked_at: null,
    });
  }

  findById(id: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ _id: id });
  }

  /** Resolves to false when there is no such live key. */
  async revoke(id: string, now: Date): Promise<boolean> {
    return (await this.keys.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: now } })) === 1;
  }
}
