/** The app-version rule: numeric, part-by-part comparison and the update type it yields (§2.16). */
import { appSettings, compareVersions } from "../../../../services/settings/versions";
import type { PlatformVersions } from "../../../../shared/contracts/settings";

describe("compareVersions", () => {
  it.each([
    ["2", "2.0.0"],
    ["2.0", "2.0.0"],
    ["2.0.0", "2"],
    ["1.4", "1.4.0"],
    ["0", "0.0.0"],
    ["10.20.30", "10.20.30"],
    ["007.1", "7.1"],
  ])("when %s is compared with %s, then they are equal", (a, b) => {
    expect(compareVersions(a, b)).toBe(0);
  });

  it.each([
    ["1.10.0", "1.9.0"],
    ["1.0.10", "1.0.9"],
    ["2", "1.99.99"],
    ["1.2.1", "1.2"],
    ["10.0.0", "9.0.0"],
    ["0.0.1", "0"],
  ])("when %s is compared with %s, then it is newer (numeric, not textual)", (a, b) => {
    expect(compareVersions(a, b)).toBe(1);
    expect(compareVersions(b, a)).toBe(-1);
  });
});

describe("appSettings", () => {
  const android: PlatformVersions = { platform: "android", current_version: "2.4.0", min_version: "2.0.0" };

  it.each([
    ["1.9.9", "required"],
    ["1", "required"],
    ["2.0.0", "optional"], // exactly the minimum is still supported
    ["2", "optional"],
    ["2.3.99", "optional"],
    ["2.4.0", "none"], // exactly the current one
    ["2.4", "none"],
    ["2.4.1", "none"], // newer than current (a beta build)
    ["3", "none"],
  ])("when the app runs %s against min 2.0.0 and current 2.4.0, then the update is %s", (version, type) => {
    expect(appSettings(version, android).update_type).toBe(type);
  });

  it("when the app runs the current version, then the result echoes both versions and is_different is false", () => {
    expect(appSettings("2.4.0", android)).toEqual({
      platform: "android",
      your_version: "2.4.0",
      current_version: "2.4.0",
      is_different: false,
      update_type: "none",
    });
  });

  it("when the app sends '2.4' for current '2.4.0', then your_version is echoed as sent and it is not different", () => {
    const r = appSettings("2.4", android);
    expect(r.your_version).toBe("2.4");
    expect(r.current_version).toBe("2.4.0");
    expect(r.is_different).toBe(false);
  });

  it("when the app is newer than the current build, then is_different is true and no update is offered", () => {
    expect(appSettings("2.5.0", android)).toMatchObject({ is_different: true, update_type: "none" });
  });

  it("when the app is older than current but supported, then is_different is true and the update is optional", () => {
    expect(appSettings("2.1.7", android)).toMatchObject({ is_different: true, update_type: "optional" });
  });

  it("when the minimum equals the current version, then anything older is required and there is no optional band", () => {
    const ios: PlatformVersions = { platform: "ios", current_version: "3.0.0", min_version: "3.0.0" };
    expect(appSettings("2.9.9", ios)).toMatchObject({ platform: "ios", update_type: "required" });
    expect(appSettings("3", ios)).toMatchObject({ update_type: "none", is_different: false });
  });

  it("when versions differ only in a two-digit part, then they are compared as numbers", () => {
    const store: PlatformVersions = { platform: "ru_store", current_version: "1.10.0", min_version: "1.9.0" };
    expect(appSettings("1.9.5", store)).toMatchObject({ update_type: "optional", is_different: true });
    expect(appSettings("1.8", store)).toMatchObject({ update_type: "required" });
    expect(appSettings("1.10", store)).toMatchObject({ update_type: "none", is_different: false });
  });
});
