import { ApiKeyCache } from "../../../../services/gateway/api-key-cache";
import type { VerifyApiKeyResult } from "../../../../shared/contracts/auth";
import { ForbiddenError } from "../../../../shared/errors";
import { InvalidApiKeyError } from "../../../../services/auth/api-keys";

const TTL_MS = 60_000;
/** A request's time (ms since the epoch). */
const T0 = 1_700_000_000_000;
const APP_KEY = "ak.0123456789abcdef.secret-of-the-app-key-0001";

/** An auth that accepts APP_KEY for the app scope alone and counts what it is asked. */
function auth() {
  const asked: string[] = [];
  let revoked = false;
  const ask = async (key: string, scope: VerifyApiKeyResult["scope"]): Promise<VerifyApiKeyResult> => {
    asked.push(`${scope} ${key}`);
    if (key !== APP_KEY || revoked) throw new InvalidApiKeyError();
    if (scope !== "app") throw new ForbiddenError("API key not allowed for this operation");
    return { key_id: "0123456789abcdef", scope };
  };
  return { ask, asked, revoke: () => (revoked = true) };
}

describe("ApiKeyCache", () => {
  it("when a key auth accepted comes again within the time to live, then auth is not asked again", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    expect(await cache.keyIdOf(APP_KEY, "app", a.ask, T0)).toBe("0123456789abcdef");
    expect(await cache.keyIdOf(APP_KEY, "app", a.ask, T0 + TTL_MS)).toBe("0123456789abcdef");
    expect(a.asked).toHaveLength(1);
  });

  it("when the time to live has passed, then auth is asked again", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0);
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0 + TTL_MS + 1);
    expect(a.asked).toHaveLength(2);
  });

  it("when an accepted key comes for another scope, then auth is asked and its refusal stands", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0);
    await expect(cache.keyIdOf(APP_KEY, "notifications", a.ask, 1)).rejects.toBeInstanceOf(ForbiddenError);
    await expect(cache.keyIdOf(APP_KEY, "notifications", a.ask, 2)).rejects.toBeInstanceOf(ForbiddenError);
    expect(a.asked).toEqual([`app ${APP_KEY}`, `notifications ${APP_KEY}`, `notifications ${APP_KEY}`]);
  });

  it("when auth refuses a key, then the refusal is not kept and the next request asks again", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    for (const now of [0, 1]) {
      await expect(cache.keyIdOf(`${APP_KEY}x`, "app", a.ask, now)).rejects.toBeInstanceOf(
        InvalidApiKeyError,
      );
    }
    expect(a.asked).toHaveLength(2);
    expect(cache.size).toBe(0);
  });

  it("when the key is forgotten (revoked), then auth is asked again and refuses it", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0);
    a.revoke();
    cache.forget("0123456789abcdef");
    await expect(cache.keyIdOf(APP_KEY, "app", a.ask, 1)).rejects.toBeInstanceOf(InvalidApiKeyError);
  });

  it("when another key is forgotten, then this one stays known", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0);
    cache.forget("fedcba9876543210");
    await cache.keyIdOf(APP_KEY, "app", a.ask, 1);
    expect(a.asked).toHaveLength(1);
  });

  it("when the key is revoked while auth's acceptance is on its way, then that acceptance is not kept", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    let answer: (r: VerifyApiKeyResult) => void = () => undefined;
    const slow = () => new Promise<VerifyApiKeyResult>((resolve) => (answer = resolve));
    const first = cache.keyIdOf(APP_KEY, "app", slow, T0);
    cache.forget("0123456789abcdef");
    answer({ key_id: "0123456789abcdef", scope: "app" });
    expect(await first).toBe("0123456789abcdef");
    a.revoke();
    await expect(cache.keyIdOf(APP_KEY, "app", a.ask, 1)).rejects.toBeInstanceOf(InvalidApiKeyError);
  });

  it("when everything is cleared (a reconnection), then every key is asked again", async () => {
    const cache = new ApiKeyCache(TTL_MS, 100);
    const a = auth();
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0);
    cache.clear();
    await cache.keyIdOf(APP_KEY, "app", a.ask, 1);
    expect(a.asked).toHaveLength(2);
  });

  it("when the time to live is 0, then nothing is kept", async () => {
    const cache = new ApiKeyCache(0, 100);
    const a = auth();
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0);
    await cache.keyIdOf(APP_KEY, "app", a.ask, T0);
    expect(a.asked).toHaveLength(2);
  });
});
