/**
 * The state behind holding calls across a NATS reconnect (shared/runtime/reconnect-hold), without a
 * broker: which calls wait, which go out, which fail and with what.
 */
import { ReconnectHold } from "../../../../shared/runtime/reconnect-hold";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

function call(hold: ReconnectHold, nodeID: string, deadlineMs = 10_000) {
  const outcome = { sent: false, error: null as string | null };
  hold
    .wait(
      nodeID,
      deadlineMs,
      () => new Error("expired"),
      () => new Error("gone"),
    )
    .then(
      () => (outcome.sent = true),
      (err: Error) => (outcome.error = err.message),
    );
  return outcome;
}

describe("holding calls across a NATS reconnect", () => {
  it("when the connection is up and no outage is being recovered from, then nothing is held", async () => {
    const hold = new ReconnectHold({ confirmWithinMs: 1000, marginMs: 10 });
    const c = call(hold, "auth-1");
    await wait(0);
    expect(c.sent).toBe(true);
    expect(hold.holds("auth-1")).toBe(false);
  });

  it("when the connection comes back, then calls to nodes heard from go out, and calls to the others wait for their announcement", async () => {
    const hold = new ReconnectHold({ confirmWithinMs: 1000, marginMs: 10 });
    hold.lost(["auth-1", "rounds-1"]);
    const toAuth = call(hold, "auth-1");
    const toRounds = call(hold, "rounds-1");
    const toNew = call(hold, "users-1");
    hold.heard("auth-1");
    await wait(5);
    // Heard from while this node was still down: nothing goes out before the connection is back.
    expect([toAuth.sent, toRounds.sent, toNew.sent]).toEqual([false, false, false]);
    hold.back();
    await wait(5);
    expect([toAuth.sent, toRounds.sent, toNew.sent]).toEqual([true, false, true]);
    hold.heard("rounds-1");
    await wait(5);
    expect(toRounds.sent).toBe(true);
    expect(hold.held).toBe(0);
  });

  it("when a node does not announce itself within the window after the reconnect, then its calls go out anyway", async () => {
    const hold = new ReconnectHold({ confirmWithinMs: 50, marginMs: 10 });
    hold.lost(["auth-1"]);
    hold.back();
    const c = call(hold, "auth-1");
    await wait(20);
    expect(c.sent).toBe(false);
    await wait(60);
    expect(c.sent).toBe(true);
    expect(hold.holds("auth-1")).toBe(false);
  });

  it("when a held call's deadline comes first, then it fails with the expiry error the margin before it", async () => {
    jest.useFakeTimers();
    try {
      const hold = new ReconnectHold({ confirmWithinMs: 1000, marginMs: 40 });
      hold.lost([]);
      const c = call(hold, "auth-1", 100);
      await jest.advanceTimersByTimeAsync(59);
      expect(c.error).toBeNull();
      await jest.advanceTimersByTimeAsync(1);
      expect(c.error).toBe("expired");
      expect(c.sent).toBe(false);
      expect(hold.held).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it("when a node leaves the registry, then its held calls fail with the gone error and the others keep waiting", async () => {
    const hold = new ReconnectHold({ confirmWithinMs: 1000, marginMs: 10 });
    hold.lost(["auth-1", "rounds-1"]);
    const toAuth = call(hold, "auth-1");
    const toRounds = call(hold, "rounds-1");
    hold.gone("auth-1");
    await wait(5);
    expect(toAuth.error).toBe("gone");
    expect(toRounds.error).toBeNull();
    expect(toRounds.sent).toBe(false);
    hold.releaseAll();
    await wait(5);
    expect(toRounds.sent).toBe(true);
  });

  it("when the connection drops again before every node was heard from, then the nodes still awaited stay awaited", () => {
    const hold = new ReconnectHold({ confirmWithinMs: 1000, marginMs: 10 });
    hold.lost(["auth-1"]);
    hold.back();
    hold.lost(["rounds-1"]);
    hold.back();
    expect(hold.awaiting("auth-1")).toBe(true);
    expect(hold.awaiting("rounds-1")).toBe(true);
    hold.releaseAll();
  });
});
