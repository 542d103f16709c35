import { UploadSlots, UPLOAD_RETRY_AFTER_SECONDS } from "../../../../services/gateway/upload-slots";
import { toHttpError } from "../../../../services/gateway/http-errors";

const refusal = async (take: Promise<unknown>) => {
  try {
    await take;
  } catch (err) {
    return toHttpError(err);
  }
  throw new Error("the slot was given");
};

const settled = async <T>(p: Promise<T>): Promise<"pending" | "granted" | "refused"> =>
  Promise.race([
    p.then(
      () => "granted" as const,
      () => "refused" as const,
    ),
    new Promise<"pending">((r) => setImmediate(() => r("pending"))),
  ]);

describe("UploadSlots", () => {
  it("when a caller has all its slots and there is no wait, then its next upload is refused with 503 and Retry-After, others still get one", async () => {
    const slots = new UploadSlots(10, 2);
    await slots.take("a");
    await slots.take("a");
    const answer = await refusal(slots.take("a"));
    expect(answer.status).toBe(503);
    expect(answer.headers).toEqual({ "Retry-After": String(UPLOAD_RETRY_AFTER_SECONDS) });
    expect(answer.body.detail).toMatch(/for this user \(at most 2\)/);
    await expect(slots.take("b")).resolves.toBeInstanceOf(Function);
    expect(slots.size).toBe(3);
  });

  it("when every slot is taken and there is no wait, then any caller is refused, and a released slot serves the next", async () => {
    const slots = new UploadSlots(2, 2);
    const release = await slots.take("a");
    await slots.take("b");
    expect((await refusal(slots.take("c"))).body.detail).toBe("Too many uploads in progress; retry later");
    release();
    await expect(slots.take("c")).resolves.toBeInstanceOf(Function);
  });

  it("when a release is called twice, then it gives back one slot only", async () => {
    const slots = new UploadSlots(1, 1);
    const release = await slots.take("a");
    release();
    release();
    await slots.take("b");
    expect(slots.size).toBe(1);
    await expect(slots.take("c")).rejects.toThrow();
  });

  it("when a caller's uploads exceed its slots within the wait, then each waits its turn, in order, and all are served", async () => {
    const slots = new UploadSlots(32, 4, 5_000);
    const releases = await Promise.all([1, 2, 3, 4].map(() => slots.take("a")));
    const fifth = slots.take("a");
    const sixth = slots.take("a");
    expect([await settled(fifth), await settled(sixth), slots.queued]).toEqual(["pending", "pending", 2]);
    releases[0]();
    expect([await settled(fifth), await settled(sixth)]).toEqual(["granted", "pending"]);
    releases[1]();
    expect(await settled(sixth)).toBe("granted");
    expect([slots.size, slots.queued]).toEqual([4, 0]);
  });

  it("when a waiting caller cannot fit, then another caller's upload behind it is served by a freed slot", async () => {
    const slots = new UploadSlots(2, 1, 5_000);
    const a = await slots.take("a");
    const b = await slots.take("b");
    const aAgain = slots.take("a");
    const c = slots.take("c");
    b();
    expect([await settled(aAgain), await settled(c)]).toEqual(["pending", "granted"]);
    a();
    expect(await settled(aAgain)).toBe("granted");
  });

  it("when the wait passes without a slot, then 503 with Retry-After, and the queue is left", async () => {
    jest.useFakeTimers();
    try {
      const slots = new UploadSlots(1, 1, 2_000);
      await slots.take("a");
      const waiting = refusal(slots.take("a"));
      jest.advanceTimersByTime(2_000);
      const answer = await waiting;
      expect([answer.status, answer.headers, slots.queued]).toEqual([
        503,
        { "Retry-After": String(UPLOAD_RETRY_AFTER_SECONDS) },
        0,
      ]);
    } finally {
      jest.useRealTimers();
    }
  });

  it("when the request's deadline is nearer than the wait, or as many wait as there are slots, or the client left, then it is refused without waiting longer", async () => {
    const slots = new UploadSlots(1, 1, 60_000);
    const release = await slots.take("a");
    await expect(slots.take("b", Date.now())).rejects.toThrow("retry later");
    const queued = slots.take("b");
    await expect(slots.take("c")).rejects.toThrow("retry later"); // one slot: one waiter
    const gone = new AbortController();
    gone.abort();
    await expect(slots.take("d", Infinity, gone.signal)).rejects.toThrow("retry later");
    release();
    await expect(queued).resolves.toBeInstanceOf(Function);

    const leaving = new AbortController();
    const left = slots.take("e", Infinity, leaving.signal);
    leaving.abort();
    await expect(left).rejects.toThrow("retry later");
    expect(slots.queued).toBe(0);
  });
});
