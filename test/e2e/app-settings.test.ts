import { call } from "../../shared/contracts";
import { AppSettingsResult } from "../../shared/contracts/settings";
import { check } from "../../shared/validation";
import { api, startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const settings = (query: string, apiKey?: string) => api(sys, "GET", `/app-settings${query}`, { apiKey });
const appKey = () => sys.manifest.api_keys.app;

describe("GET /app-settings", () => {
  it.each([
    ["2.4.1", false, "none"],
    ["2.4.1.", null, null],
    ["2.2", true, "optional"],
    ["2.1.0", true, "optional"],
    ["2.0.9", true, "required"],
    ["1", true, "required"],
    ["3.0", true, "none"],
  ])(
    "when ios version %s asks, then is_different %s and update_type %s",
    async (version, isDifferent, updateType) => {
      const res = await settings(`?version=${version}&platform=ios`, appKey());
      if (isDifferent === null) {
        expect(res.status).toBe(422);
        return;
      }
      expect(res.status).toBe(200);
      expect(check(AppSettingsResult, res.body)).toBe(true);
      expect(res.body).toEqual({
        platform: "ios",
        your_version: version,
        current_version: "2.4.1",
        is_different: isDifferent,
        update_type: updateType,
      });
    },
  );

  it("when the platform's versions change, then the next answer uses them (cache cleaned)", async () => {
    expect((await settings("?version=2.4.0&platform=android", appKey())).body.update_type).toBe("none");
    await call(sys.broker, "settings.setVersions", {
      platform: "android",
      current_version: "2.5.0",
      min_version: "2.4.5",
    });
    const res = await settings("?version=2.4.0&platform=android", appKey());
    expect(res.body).toEqual(expect.objectContaining({ current_version: "2.5.0", update_type: "required" }));
  });

  it("when version is missing, then 422 missing at query.version with input null", async () => {
    const res = await settings("?platform=ios", appKey());
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ type: "missing", loc: ["query", "version"], msg: "Field required", input: null }],
    });
  });

  it("when both are missing, then both are reported", async () => {
    const res = await settings("", appKey());
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => d.loc)).toEqual(
      expect.arrayContaining([
        ["query", "version"],
        ["query", "platform"],
      ]),
    );
  });

  it("when the platform is not one of the three, then 422 with FastAPI's enum message", async () => {
    const res = await settings("?version=1.0.0&platform=windows", appKey());
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          type: "enum",
          loc: ["query", "platform"],
          msg: "Input should be 'android', 'ios' or 'ru_store'",
          input: "windows",
        },
      ],
    });
  });

  it("when the version is not a version string, then 422 at query.version", async () => {
    const res = await settings("?version=latest&platform=ios", appKey());
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({
        type: "string_pattern_mismatch",
        loc: ["query", "version"],
        input: "latest",
      }),
    ]);
  });
});

describe("API keys", () => {
  it("when no x-api-key is sent, then 401 Not authenticated", async () => {
    const res = await settings("?version=1.0.0&platform=ios");
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
  });

  it("when the key is not one of ours, then 401 Invalid API key", async () => {
    for (const key of [
      "nope",
      "ak.0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      `${appKey()}x`,
    ]) {
      const res = await settings("?version=1.0.0&platform=ios", key);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: "Invalid API key" });
    }
  });

  it("when the key has another scope, then 403", async () => {
    const res = await settings("?version=1.0.0&platform=ios", sys.manifest.api_keys.notifications);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: "API key not allowed for this operation" });
  });

  it("when a key is revoked after use, then it is refused with 401 API key revoked", async () => {
    const key = await call(sys.broker, "auth.createApiKey", { scope: "app" });
    expect((await settings("?version=1.0.0&platform=ios", key.key)).status).toBe(200);
    await call(sys.broker, "auth.revokeApiKey", { id: key.id });
    // Gateways forget the key on auth's `api-key.revoked` event: across processes, once it arrives.
    await sys.settle();
    const res = await settings("?version=1.0.0&platform=ios", key.key);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "API key revoked" });
  });

  it("when the API key is bad and the query is bad too, then the key error comes first", async () => {
    const res = await settings("?platform=windows", "nope");
    expect(res.status).toBe(401);
  });
});
