/** Contracts of the settings service: app versions per platform (GET /app-settings, §2.16, §4.7). */
import { Type, type Static } from "@sinclair/typebox";

export const platforms = ["android", "ios", "ru_store"] as const;
export type Platform = (typeof platforms)[number];

/** A JSON Schema `enum`, so a wrong value reads as FastAPI's: "Input should be 'android', 'ios' or 'ru_store'". */
export const PlatformSchema = Type.Unsafe<Platform>({ type: "string", enum: [...platforms] });

/** One to three dot-separated numbers ("2", "2.4", "2.4.1"); missing parts count as 0. */
export const VersionString = Type.String({ pattern: "^\\d{1,6}(\\.\\d{1,6}){0,2}$", maxLength: 20 });

export const AppSettingsParams = Type.Object({ version: VersionString, platform: PlatformSchema });
export type AppSettingsParams = Static<typeof AppSettingsParams>;

export const UpdateType = Type.Unsafe<"none" | "optional" | "required">({
  type: "string",
  enum: ["none", "optional", "required"],
});

/** §2.16. */
export const AppSettingsResult = Type.Object({
  platform: Type.String(),
  your_version: Type.String(),
  current_version: Type.String(),
  is_different: Type.Boolean(),
  update_type: UpdateType,
});
export type AppSettingsResult = Static<typeof AppSettingsResult>;

export const SetVersionsParams = Type.Object({
  platform: PlatformSchema,
  current_version: VersionString,
  min_version: VersionString,
});
export type SetVersionsParams = Static<typeof SetVersionsParams>;

export interface PlatformVersions {
  platform: Platform;
  current_version: string;
  min_version: string;
}
