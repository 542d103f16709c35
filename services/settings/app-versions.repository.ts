/** The app_versions collection: one document per platform. */
import type { Collection, Store } from "../../shared/storage";
import type { Platform, PlatformVersions } from "../../shared/contracts/settings";

interface AppVersionDoc {
  _id: Platform;
  current_version: string;
  min_version: string;
  updated_at: Date;
}

export class AppVersionsRepository {
  private readonly versions: Collection<AppVersionDoc>;

  constructor(store: Store) {
    this.versions = store.collection<AppVersionDoc>("app_versions");
  }

  async find(platform: Platform): Promise<PlatformVersions | null> {
    const doc = await this.versions.findOne({ _id: platform });
    return doc
      ? { platform: doc._id, current_version: doc.current_version, min_version: doc.min_version }
      : null;
  }

  async set(v: PlatformVersions, now: Date): Promise<void> {
    await this.versions.updateOne(
      { _id: v.platform },
      { $set: { current_version: v.current_version, min_version: v.min_version, updated_at: now } },
      { upsert: true },
    );
  }
}
