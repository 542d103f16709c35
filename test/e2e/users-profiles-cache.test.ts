// Tier: one process only (the users service's cacher read from the test's own broker).
/**
 * users.profiles keeps an answer only when it found every user asked for, so that a sign-up has no
 * cached miss to clean: cleaning one means a scan of every key on Redis (`cached` in shared/runtime).
 */
import { randomUUID } from "node:crypto";
import { call } from "../../shared/contracts";
import { startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const profilesKey = (ids: string[]) => sys.broker.cacher!.getCacheKey("users.profiles", { ids }, {}, ["ids"]);

describe("users.profiles cache", () => {
  it("when a lookup misses a user, then the miss is not kept, and once the user signs up, without any scan of the cache, the next lookup finds them", async () => {
    const { alice } = sys.manifest.users;
    const id = randomUUID();
    const before = await call(sys.broker, "users.profiles", { ids: [alice.id, id] });
    expect(Object.keys(before)).toEqual([alice.id]);
    expect(await sys.broker.cacher!.get(profilesKey([alice.id, id]))).toBeNull();

    const clean = jest.spyOn(sys.broker.cacher!, "clean");
    try {
      await call(sys.broker, "users.create", {
        id,
        phone: `+1${String(Date.now()).slice(-10)}`,
        username: `signup_${id.slice(0, 8)}`,
        first_name: "New",
        last_name: null,
      });
      expect(clean).not.toHaveBeenCalled();
    } finally {
      clean.mockRestore();
    }
    const after = await call(sys.broker, "users.profiles", { ids: [alice.id, id] });
    expect(Object.keys(after).sort()).toEqual([alice.id, id].sort());
    expect(after[id].first_name).toBe("New");
  });

  it("when every user is found, then the answer is kept and the next lookup is served from it", async () => {
    const { alice, bob } = sys.manifest.users;
    const ids = [alice.id, bob.id];
    const first = await call(sys.broker, "users.profiles", { ids });
    expect(await sys.broker.cacher!.get(profilesKey(ids))).toEqual(first);
    const kept = { [alice.id]: { ...first[alice.id], first_name: "from the cache" } };
    await sys.broker.cacher!.set(profilesKey(ids), kept);
    expect(await call(sys.broker, "users.profiles", { ids })).toEqual(kept);
  });

  it("when a user is removed, then kept answers holding them are dropped", async () => {
    const { alice } = sys.manifest.users;
    const doomed = (
      await call(sys.broker, "users.create", {
        phone: `+2${String(Date.now()).slice(-10)}`,
        username: `doomed_${Date.now()}`,
        first_name: "Doomed",
        last_name: null,
      })
    ).id;
    await call(sys.broker, "users.profiles", { ids: [doomed, alice.id] });
    expect(await sys.broker.cacher!.get(profilesKey([doomed, alice.id]))).not.toBeNull();
    await call(sys.broker, "users.remove", { id: doomed });
    expect(await sys.broker.cacher!.get(profilesKey([doomed, alice.id]))).toBeNull();
  });
});
