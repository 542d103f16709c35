import { UploadSlots, UPLOAD_RETRY_AFTER_SECONDS } from "../../services/gateway/upload-slots";
import { toHttpError } from "../../services/gateway/http-errors";

const refusal = (take: () => unknown) => {
  try {
    take();
  } catch (err) {
    return toHttpError(err);
  }
  throw new Error("the slot was given");
};

describe("UploadSlots", () => {
  it("when a caller has all its slots, then its next upload is refused with 503 and Retry-After, others still get one", () => {
    const slots = new UploadSlots(10, 2);
    slots.take("a");
    slots.take("a");
    const answer = refusal(() => slots.take("a"));
    expect(answer.status).toBe(503);
    expect(answer.headers).toEqual({ "Retry-After": String(UPLOAD_RETRY_AFTER_SECONDS) });
    expect(answer.body.detail).toMatch(/for this user \(at most 2\)/);
    expect(() => slots.take("b")).not.toThrow();
    expect(slots.size).toBe(3);
  });

  it("when every slot is taken, then any caller is refused, and a released slot serves the next", () => {
    const slots = new UploadSlots(2, 2);
    const release = slots.take("a");
    slots.take("b");
    expect(refusal(() => slots.take("c")).body.detail).toBe("Too many uploads in progress; retry later");
    release();
    expect(() => slots.take("c")).not.toThrow();
  });

  it("when a release is called twice, then it gives back one slot only", () => {
    const slots = new UploadSlots(1, 1);
    const release = slots.take("a");
    release();
    release();
    slots.take("b");
    expect(slots.size).toBe(1);
    expect(() => slots.take("c")).toThrow();
  });
});
