import { AddressLimits } from "../../../../services/gateway/address-limits";
import { RateLimitedError } from "../../../../services/gateway/rate-limit";

const T = Date.UTC(2030, 0, 1, 0, 0, 45);
const limits = (requestsPerMinute: number, failuresPerMinute: number, maxAddresses = 1000) =>
  new AddressLimits({ requestsPerMinute, failuresPerMinute, maxAddresses });
const refusal = (fn: () => void): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return null;
};

describe("AddressLimits requests", () => {
  it("when an address passes the limit within a minute, then 429 with the seconds until the minute ends", () => {
    const l = limits(2, 0);
    l.request("a", T);
    l.request("a", T);
    const err = refusal(() => l.request("a", T + 500));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({ code: 429, retryAfterSeconds: 15 });
    expect(refusal(() => l.request("b", T))).toBeNull();
    expect(refusal(() => l.request("a", T + 15_000))).toBeNull();
  });

  it("when the limit is 0, then nothing is counted or refused", () => {
    const l = limits(0, 0);
    for (let i = 0; i < 100; i++) l.request("a", T);
    expect(l.sizes).toEqual([0, 0]);
  });

  it("when the minute's table is full, then new addresses go uncounted and that is told once", () => {
    const l = limits(1, 0, 2);
    l.request("a", T);
    l.request("b", T);
    expect(refusal(() => l.request("c", T))).toBeNull();
    expect(refusal(() => l.request("c", T))).toBeNull();
    expect(refusal(() => l.request("a", T))).toBeInstanceOf(RateLimitedError);
    expect(l.tellFull()).toBe(true);
    expect(l.tellFull()).toBe(false);
    l.request("c", T + 60_000);
    expect(l.sizes).toEqual([1, 0]);
  });
});

describe("AddressLimits failed authentications", () => {
  it("when an address's refused credentials reach the limit, then it may not ask auth until the minute ends", () => {
    const l = limits(0, 3);
    for (let i = 0; i < 3; i++) {
      expect(refusal(() => l.mayAskAuth("a", T))).toBeNull();
      l.failed("a", T);
    }
    expect(refusal(() => l.mayAskAuth("a", T))).toMatchObject({ code: 429, retryAfterSeconds: 15 });
    expect(refusal(() => l.mayAskAuth("b", T))).toBeNull();
    expect(refusal(() => l.mayAskAuth("a", T + 15_000))).toBeNull();
  });

  it("when the failure limit is 0, then failures are not counted", () => {
    const l = limits(0, 0);
    for (let i = 0; i < 10; i++) l.failed("a", T);
    expect(refusal(() => l.mayAskAuth("a", T))).toBeNull();
    expect(l.sizes).toEqual([0, 0]);
  });
});
