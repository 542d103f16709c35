/**
 * The outbox relay: what the channel takes is acknowledged, what it refuses stays for the next run, and
 * embedded (no NATS) a publication is handled by the process's own consumers before it counts.
 */
import { ServiceBroker } from "moleculer";
import {
  DocumentOutbox,
  outboxEntry,
  outboxOnInsert,
  OutboxRelay,
  type OutboxEntry,
  type OutboxFields,
  type OutboxSource,
  type PendingEntry,
} from "../../../../shared/outbox";
import { channelPublisher } from "../../../../shared/runtime/channels";
import { NedbStore } from "../../../../shared/storage";

const NOW = new Date("2030-01-01T00:00:00Z");

function memorySource(entries: PendingEntry[]): OutboxSource & { left: PendingEntry[] } {
  const left = [...entries];
  return {
    left,
    pending: async (limit) => left.slice(0, limit),
    acknowledge: async (p) => {
      const i = left.findIndex((x) => x.entry.id === p.entry.id);
      if (i >= 0) left.splice(i, 1);
    },
  };
}

/** `waiting` is still pending after a turn of the event loop, and settles once `release` is called. */
async function expectHeldUntil(waiting: Promise<unknown>, release: () => void): Promise<void> {
  let settled = false;
  const done = waiting.then(() => (settled = true));
  await new Promise((r) => setImmediate(r));
  expect(settled).toBe(false);
  release();
  await done;
}

const pending = (key: string): PendingEntry => ({
  docId: key,
  entry: outboxEntry("round.member.joined", key, { key }, NOW),
});

describe("outboxEntry", () => {
  it("when the same fact is recorded twice, then both entries have the same id (the channel drops the second)", () => {
    expect(outboxEntry("c", "round:user", {}, NOW).id).toBe(outboxEntry("c", "round:user", {}, NOW).id);
    expect(outboxEntry("c", "round:user", {}, NOW).id).not.toBe(outboxEntry("c", "round:other", {}, NOW).id);
    expect(outboxEntry("c", "round:user", {}, NOW).id).not.toBe(outboxEntry("d", "round:user", {}, NOW).id);
  });
});

describe("OutboxRelay", () => {
  it("when the channel takes every entry, then a run publishes them oldest first and acknowledges each", async () => {
    const source = memorySource([pending("a"), pending("b")]);
    const published: string[] = [];
    const relay = new OutboxRelay(source, async (e) => void published.push(e.id), jest.fn());
    await relay.run();
    expect(published).toEqual([pending("a").entry.id, pending("b").entry.id]);
    expect(source.left).toEqual([]);
  });

  it("when the channel refuses, then the entry stays, the run stops there, one warning is logged, and a later run publishes it", async () => {
    const source = memorySource([pending("a"), pending("b")]);
    const warn = jest.fn();
    let down = true;
    const publish = jest.fn(async () => {
      if (down) throw new Error("no responders");
    });
    const relay = new OutboxRelay(source, publish, warn);
    await relay.run();
    await relay.run();
    expect(source.left).toHaveLength(2);
    expect(publish).toHaveBeenCalledTimes(2); // the first entry only, once per run
    expect(warn).toHaveBeenCalledTimes(1);
    down = false;
    await relay.run();
    expect(source.left).toEqual([]);
  });

  it("when deliver is given an entry and the channel hangs, then it returns after its bound and leaves the entry", async () => {
    const source = memorySource([pending("a")]);
    const relay = new OutboxRelay(source, () => new Promise(() => undefined), jest.fn(), {
      deliverTimeoutMs: 50,
    });
    const started = Date.now();
    await relay.deliver(source.left[0]);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(source.left).toHaveLength(1);
  });

  it("when deliver's entry is taken, then it resolves without waiting for the removal, and stop waits for the removal", async () => {
    const left = [pending("a")];
    let removed!: () => void;
    const source: OutboxSource = {
      pending: async () => left,
      acknowledge: () =>
        new Promise<void>((resolve) => {
          removed = () => {
            left.length = 0;
            resolve();
          };
        }),
    };
    const published: string[] = [];
    const relay = new OutboxRelay(source, async (e) => void published.push(e.id), jest.fn());
    await relay.deliver(left[0]);
    expect(published).toEqual([pending("a").entry.id]);
    expect(left).toHaveLength(1);
    await expectHeldUntil(relay.stop(), removed);
    expect(left).toEqual([]);
  });

  it("when an entry is handed over, then the caller goes on at once, and idle waits for its publication and removal", async () => {
    const source = memorySource([pending("a")]);
    let take!: () => void;
    const taken = new Promise<void>((resolve) => (take = resolve));
    const relay = new OutboxRelay(source, () => taken, jest.fn());
    relay.handOver(source.left[0]);
    expect(source.left).toHaveLength(1);
    await expectHeldUntil(relay.idle(), take);
    expect(source.left).toEqual([]);
  });

  it("when the relay stops with a hand-over under way, then stop waits for it", async () => {
    const source = memorySource([pending("a")]);
    let take!: () => void;
    const relay = new OutboxRelay(source, () => new Promise<void>((resolve) => (take = resolve)), jest.fn());
    relay.handOver(source.left[0]);
    await expectHeldUntil(relay.stop(), () => take());
    expect(source.left).toEqual([]);
  });

  it("when a delivered entry's removal fails, then deliver still resolves, a warning names it, and the entry stays for the sweep", async () => {
    const entries = [pending("a")];
    const source: OutboxSource = {
      pending: async () => entries,
      acknowledge: async () => {
        throw new Error("store down");
      },
    };
    const warn = jest.fn();
    const publish = jest.fn(async () => undefined);
    const relay = new OutboxRelay(source, publish, warn);
    await relay.deliver(entries[0]);
    await relay.stop();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining(pending("a").entry.id), expect.any(Error));
    expect(entries).toHaveLength(1);
  });

  it("when started, then it publishes what an earlier process left, and keeps sweeping until stopped", async () => {
    jest.useFakeTimers();
    try {
      const source = memorySource([pending("left-by-a-crash")]);
      const publish = jest.fn(async () => undefined);
      const relay = new OutboxRelay(source, publish, jest.fn(), { sweepMs: 1000 });
      relay.start();
      await jest.advanceTimersByTimeAsync(0);
      expect(source.left).toEqual([]);
      source.left.push(pending("recorded-later"));
      await jest.advanceTimersByTimeAsync(1000);
      expect(source.left).toEqual([]);
      await relay.stop();
      source.left.push(pending("after-stop"));
      await jest.advanceTimersByTimeAsync(5000);
      expect(source.left).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe("DocumentOutbox with the embedded channel", () => {
  interface Doc extends OutboxFields {
    _id: string;
  }

  it("when the local consumer fails, then the fact stays in the outbox and the next run delivers it once", async () => {
    const broker = new ServiceBroker({ logger: false });
    const handled: unknown[] = [];
    let failNext = true;
    broker.createService({
      name: "consumer",
      channels: {
        "round.member.joined": {
          async handler(payload: unknown) {
            if (failNext) {
              failNext = false;
              throw new Error("store down");
            }
            handled.push(payload);
          },
        },
      },
    } as never);
    await broker.start();
    const store = new NedbStore(null);
    try {
      const docs = store.collection<Doc>("docs");
      const outbox = new DocumentOutbox(docs);
      await outbox.init();
      const entry: OutboxEntry = outboxEntry("round.member.joined", "r1:u1", { user_id: "u1" }, NOW);
      await docs.insertOne({ _id: "r1", ...outboxOnInsert([entry]) });
      const relay = new OutboxRelay(outbox, channelPublisher(broker), jest.fn());

      await relay.run();
      expect(handled).toEqual([]);
      expect(await outbox.pending(10)).toHaveLength(1);

      await relay.run();
      expect(handled).toEqual([{ user_id: "u1" }]);
      expect(await outbox.pending(10)).toEqual([]);
      expect(await docs.findOne({ _id: "r1" })).toEqual({ _id: "r1", outbox: {} });
    } finally {
      await store.close();
      await broker.stop();
    }
  });
});

describe("DocumentOutbox removals", () => {
  interface Doc extends OutboxFields {
    _id: string;
  }

  it("when entries of one document are acknowledged in one turn, then one write removes them all", async () => {
    const store = new NedbStore(null);
    try {
      const docs = store.collection<Doc>("docs");
      const outbox = new DocumentOutbox(docs);
      const entries = ["a", "b", "c"].map((k) => outboxEntry("c", `r1:${k}`, { k }, NOW));
      const other = outboxEntry("c", "r2:a", { k: "a" }, NOW);
      await docs.insertOne({ _id: "r1", ...outboxOnInsert(entries) });
      await docs.insertOne({ _id: "r2", ...outboxOnInsert([other]) });
      const writes = jest.spyOn(docs, "updateOne");
      await Promise.all([
        ...entries.map((entry) => outbox.acknowledge({ docId: "r1", entry })),
        outbox.acknowledge({ docId: "r2", entry: other }),
      ]);
      expect(writes).toHaveBeenCalledTimes(2); // one per document
      expect(await docs.find({}, { sort: { _id: 1 } })).toEqual([
        { _id: "r1", outbox: {} },
        { _id: "r2", outbox: {} },
      ]);
    } finally {
      await store.close();
    }
  });

  it("when a document's removal is being written, then removals asked for meanwhile wait for it and go in the next write", async () => {
    const store = new NedbStore(null);
    try {
      const docs = store.collection<Doc>("docs");
      const outbox = new DocumentOutbox(docs);
      const [a, b, c] = ["a", "b", "c"].map((k) => outboxEntry("c", `r1:${k}`, { k }, NOW));
      await docs.insertOne({ _id: "r1", ...outboxOnInsert([a, b, c]) });
      const writes = jest.spyOn(docs, "updateOne");
      const first = outbox.acknowledge({ docId: "r1", entry: a });
      await new Promise((r) => setImmediate(r)); // the first write is under way
      await Promise.all([
        first,
        outbox.acknowledge({ docId: "r1", entry: b }),
        outbox.acknowledge({ docId: "r1", entry: c }),
      ]);
      // a alone (tried as the last entry, then as one of several), then b and c together (the last two).
      const removed = writes.mock.calls.map(([, update]) =>
        Object.keys((update as { $unset: object }).$unset)
          .filter((k) => k.startsWith("outbox."))
          .map((k) => k.slice("outbox.".length)),
      );
      expect(removed).toEqual([[a.id], [a.id], [b.id, c.id]]);
      expect(await docs.findOne({ _id: "r1" })).toEqual({ _id: "r1", outbox: {} });
    } finally {
      await store.close();
    }
  });
});

describe("the outbox backlog", () => {
  interface Doc extends OutboxFields {
    _id: string;
  }

  it("when facts wait in some documents, then the backlog counts those documents and names the oldest fact's time; none waiting, zero and none", async () => {
    const store = new NedbStore(null);
    try {
      const docs = store.collection<Doc>("docs");
      const outbox = new DocumentOutbox(docs);
      await outbox.init();
      expect(await outbox.backlog()).toEqual({ documents: 0, oldest: null });
      const older = new Date(NOW.getTime() - 60_000);
      await docs.insertOne({
        _id: "r1",
        ...outboxOnInsert([outboxEntry("c", "r1:a", {}, NOW), outboxEntry("c", "r1:b", {}, older)]),
      });
      await docs.insertOne({ _id: "r2", ...outboxOnInsert([outboxEntry("c", "r2:a", {}, NOW)]) });
      await docs.insertOne({ _id: "r3" });
      expect(await outbox.backlog()).toEqual({ documents: 2, oldest: older });
    } finally {
      await store.close();
    }
  });

  it("when the channel refuses, then after each sweep the relay reports what is left; once it takes them, an empty backlog", async () => {
    jest.useFakeTimers();
    try {
      const memory = memorySource([pending("a"), pending("b")]);
      const source: OutboxSource = {
        ...memory,
        backlog: async () => ({ documents: memory.left.length, oldest: memory.left.length > 0 ? NOW : null }),
      };
      const reports: unknown[] = [];
      let up = false;
      const relay = new OutboxRelay(
        source,
        async () => {
          if (!up) throw new Error("channel down");
        },
        jest.fn(),
        { sweepMs: 1000, onBacklog: (b) => reports.push(b) },
      );
      relay.start();
      await jest.advanceTimersByTimeAsync(1000);
      expect(reports).toEqual([{ documents: 2, oldest: NOW }]);
      up = true;
      await jest.advanceTimersByTimeAsync(1000);
      expect(reports.at(-1)).toEqual({ documents: 0, oldest: null });
      await relay.stop();
    } finally {
      jest.useRealTimers();
    }
  });
});
