/**
 * Outbox leftovers on every engine (docs/decisions/0041-durable-facts.md): entries no
 * channel took within the retention are dropped from their documents, each one reported once, the
 * younger ones and the documents themselves kept; the sparse outbox index forgets a document whose last
 * entry went.
 */
import {
  DocumentOutbox,
  outboxEntry,
  outboxExpiryTask,
  outboxOnInsert,
  type OutboxFields,
  type PendingEntry,
} from "../../shared/outbox";
import type { Collection } from "../../shared/storage";
import { describeEachEngine, uid } from "./engines";

interface Doc extends OutboxFields {
  _id: string;
  name: string;
}

const HOUR = 3_600_000;
const NOW = new Date("2030-06-01T12:00:00.000Z");
const ago = (ms: number) => new Date(NOW.getTime() - ms);

describeEachEngine("DocumentOutbox leftovers", (store) => {
  let docs: Collection<Doc>;
  let outbox: DocumentOutbox<Doc>;

  beforeEach(async () => {
    docs = store().collection<Doc>(uid("outbox_expiry"));
    outbox = new DocumentOutbox(docs);
    await outbox.init();
  });

  it("when entries are older than the retention, then they are dropped and reported once each; younger ones and the documents stay", async () => {
    const stale = outboxEntry(
      "round.member.joined",
      "r1:u1",
      { round_id: "r1", user_id: "u1" },
      ago(200 * HOUR),
    );
    const fresh = outboxEntry("round.member.joined", "r1:u2", { round_id: "r1", user_id: "u2" }, ago(HOUR));
    const alone = outboxEntry("store.event.created", "e1", { event_id: "e1" }, ago(169 * HOUR));
    await docs.insertOne({ _id: "r1", name: "mixed", ...outboxOnInsert([stale, fresh]) });
    await docs.insertOne({ _id: "e1", name: "only stale", ...outboxOnInsert([alone]) });
    await docs.insertOne({ _id: "n1", name: "none" });

    const dropped: PendingEntry[] = [];
    const n = await outbox.dropOlderThan(ago(168 * HOUR), (p) => dropped.push(p));

    expect(n).toBe(2);
    expect(dropped.map((p) => [p.docId, p.entry.id]).sort()).toEqual(
      [
        ["e1", alone.id],
        ["r1", stale.id],
      ].sort(),
    );
    const r1 = await docs.findOne({ _id: "r1" });
    expect(Object.keys(r1?.outbox ?? {})).toEqual([fresh.id]);
    expect(r1?.outbox_size).toBe(1);
    const e1 = await docs.findOne({ _id: "e1" });
    expect(e1).toMatchObject({ _id: "e1", name: "only stale" });
    expect(e1?.outbox_size).toBeUndefined();
    expect((await outbox.pending(10)).map((p) => p.entry.id)).toEqual([fresh.id]);
    expect(await outbox.backlog()).toEqual({ documents: 1, oldest: fresh.recorded_at });

    // A second sweep finds nothing more to drop, and reports nothing.
    const again: PendingEntry[] = [];
    await expect(outbox.dropOlderThan(ago(168 * HOUR), (p) => again.push(p))).resolves.toBe(0);
    expect(again).toEqual([]);
  });

  it("when more documents hold stale entries than one page, then every one of them is swept", async () => {
    const many = Array.from({ length: 1_203 }, (_, i) => {
      const id = `d${String(i).padStart(5, "0")}`;
      return { _id: id, name: id, ...outboxOnInsert([outboxEntry("c", id, { i }, ago(300 * HOUR))]) };
    });
    await docs.insertMany(many);
    let reported = 0;
    await expect(outbox.dropOlderThan(ago(168 * HOUR), () => reported++)).resolves.toBe(1_203);
    expect(reported).toBe(1_203);
    expect(await docs.count({ outbox_size: { $gt: 0 } })).toBe(0);
    expect(await docs.count({})).toBe(1_203);
  });

  it("when the sweep task runs, then it drops what is older than the retention at its now, and logs which fact is lost", async () => {
    const payload = { round_id: "r9", user_id: "u9", entry_fee: "150.00" };
    const stale = outboxEntry("round.member.joined", "r9:u9", payload, ago(169 * HOUR));
    await docs.insertOne({ _id: "r9", name: "r9", ...outboxOnInsert([stale]) });
    const lines: string[] = [];
    const task = outboxExpiryTask("rounds outbox leftovers", outbox, 168 * HOUR, (line) => lines.push(line));

    await expect(task.run(ago(2 * HOUR))).resolves.toBe(0); // 167 h old then: kept
    await expect(task.run(NOW)).resolves.toBe(1);
    expect(lines).toHaveLength(1);
    for (const part of [
      "round.member.joined",
      stale.id,
      "document r9",
      ago(169 * HOUR).toISOString(),
      "168 h",
      JSON.stringify(payload),
    ])
      expect(lines[0]).toContain(part);
  });
});
