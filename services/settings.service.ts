/** settings: app versions per platform, and the version check of GET /app-settings. */
import type { Context, Service, ServiceSchema } from "moleculer";
import { ReadinessMixin } from "../shared/runtime/readiness";
import type { ParamsOf, ResultOf } from "../shared/contracts";
import { AppSettingsParams, SetVersionsParams, type PlatformVersions } from "../shared/contracts/settings";
import { NotFoundError, RequestValidationError } from "../shared/errors";
import { cleanCache, serviceStore } from "../shared/runtime";
import { AppVersionsRepository } from "./settings/app-versions.repository";
import { appSettings, compareVersions } from "./settings/versions";

interface SettingsService extends Service {
  repo: AppVersionsRepository;
}

const SettingsServiceSchema: ServiceSchema<Record<string, never>, SettingsService> = {
  name: "settings",

  mixins: [ReadinessMixin],

  actions: {
    /** GET /app-settings?version=…&platform=… */
    appSettings: {
      params: AppSettingsParams,
      async handler(
        this: SettingsService,
        ctx: Context<ParamsOf<"settings.appSettings">>,
      ): Promise<ResultOf<"settings.appSettings">> {
        const versions: PlatformVersions | null = await ctx.call("settings.versions", {
          platform: ctx.params.platform,
        });
        if (!versions)
          throw new NotFoundError(`No app version is configured for platform '${ctx.params.platform}'`);
        return appSettings(ctx.params.version, versions);
      },
    },

    /** The configured versions of a platform (cached; `setVersions` cleans the entry). */
    versions: {
      visibility: "public",
      cache: { keys: ["platform"] },
      handler(this: SettingsService, ctx: Context<{ platform: PlatformVersions["platform"] }>) {
        return this.repo.find(ctx.params.platform);
      },
    },

    setVersions: {
      visibility: "public",
      params: SetVersionsParams,
      async handler(
        this: SettingsService,
        ctx: Context<ParamsOf<"settings.setVersions">>,
      ): Promise<ResultOf<"settings.setVersions">> {
        const { platform, current_version, min_version } = ctx.params;
        if (compareVersions(min_version, current_version) > 0) {
          throw new RequestValidationError([
            {
              type: "value_error",
              loc: ["min_version"],
              msg: "Value error, min_version is above current_version",
              input: min_version,
            },
          ]);
        }
        await this.repo.set({ platform, current_version, min_version }, new Date());
        await cleanCache(this, `settings.versions:${platform}`);
        return { platform, current_version, min_version };
      },
    },
  },

  async started(this: SettingsService) {
    this.repo = new AppVersionsRepository(await serviceStore(this));
  },
};

export default SettingsServiceSchema;
