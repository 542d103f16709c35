/**
 * The notifier's jobs and batches, and the users service's devices, on every engine: idempotent creation,
 * delivery attempts, planning once, conditional batch completion under concurrency, final counts from
 * the batches, failing only unfinished jobs, the unfinished queue oldest first, device tokens.
 */
import type { SendMulticastParams } from "../../shared/contracts/notifier";
import { JobsRepository, type BatchDoc, type JobDoc } from "../../services/notifier/jobs.repository";
import { DevicesRepository } from "../../services/users/devices.repository";
import { describeEachEngine, uid } from "./engines";

const T0 = new Date("2034-01-01T00:00:00.000Z");
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

const params = (over: Partial<SendMulticastParams> = {}): SendMulticastParams => ({
  title: "Hello",
  desc: "World",
  user_ids: ["u1", "u2", "u3"],
  keys: { a: "1", n: 2, b: true },
  ...over,
});

/** Token batches of the given sizes, with tokens unique to `prefix`. */
const batchesOf = (prefix: string, ...sizes: number[]): string[][] =>
  sizes.map((n, b) => Array.from({ length: n }, (_, i) => `${prefix}-${b}-${i}`));

describeEachEngine("JobsRepository", (store) => {
  let repo: JobsRepository;

  beforeAll(async () => {
    repo = new JobsRepository(store());
    await repo.init();
    await repo.init(); // idempotent
  });

  const batchColl = () => store().collection<BatchDoc>("notification_batches");
  const jobColl = () => store().collection<JobDoc>("notification_jobs");

  async function newJob(over: Partial<SendMulticastParams> = {}, now = T0): Promise<JobDoc> {
    const { job, created } = await repo.create(uid("job"), params(over), "hash-1", now);
    expect(created).toBe(true);
    return job;
  }

  /** A job moved to sending and planned with `batches`. */
  async function plannedJob(batches: string[][]): Promise<JobDoc> {
    const job = await newJob();
    const started = await repo.startDelivery(job._id, T0);
    await repo.plan(started!, batches, {
      devices: batches.flat().length,
      users_without_devices: 1,
    });
    return (await repo.find(job._id))!;
  }

  it("when a job is created, then it is stored queued with zero counts and its request's fields", async () => {
    const id = uid("job");
    const { job, created } = await repo.create(id, params({ picture: "https://x.example/p.png" }), "h", T0);
    expect(created).toBe(true);
    const expected: JobDoc = {
      _id: id,
      status: "queued",
      request_hash: "h",
      title: "Hello",
      desc: "World",
      picture: "https://x.example/p.png",
      keys: { a: "1", n: 2, b: true },
      recipients: 3,
      planned: false,
      deliveries: 0,
      error: null,
      users_without_devices: 0,
      devices: 0,
      sent: 0,
      failed: 0,
      pruned: 0,
      created_at: T0,
      started_at: null,
      finished_at: null,
    };
    expect(job).toEqual(expected);
    expect(await repo.find(id)).toEqual(expected);
    // The user ids live apart from the job, which must stay small.
    expect(job).not.toHaveProperty("user_ids");
    await expect(repo.recipientsOf(id)).resolves.toEqual(["u1", "u2", "u3"]);
  });

  it("when the recipients of an unknown job are asked for, then the list is empty", async () => {
    await expect(repo.recipientsOf(uid("job"))).resolves.toEqual([]);
  });

  it("when a job is created with an id already taken, then created is false and the existing job comes back", async () => {
    const id = uid("job");
    await repo.create(id, params(), "hash-first", T0);
    const again = await repo.create(
      id,
      params({ title: "Second", user_ids: ["v1", "v2"] }),
      "hash-second",
      at(5),
    );
    expect(again.created).toBe(false);
    expect(again.job).toMatchObject({
      _id: id,
      title: "Hello",
      request_hash: "hash-first",
      recipients: 3,
      created_at: T0,
    });
    expect(await jobColl().count({ _id: id })).toBe(1);
    await expect(repo.recipientsOf(id)).resolves.toEqual(["u1", "u2", "u3"]);
  });

  it("when the same id is created concurrently, then exactly one creation wins and both see the same job", async () => {
    const id = uid("job");
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => repo.create(id, params({ title: `t${i}` }), `h${i}`, T0)),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const winner = results.find((r) => r.created)!.job;
    for (const r of results) expect(r.job.request_hash).toBe(winner.request_hash);
  });

  it("when delivery starts, then a queued job becomes sending and every start counts a delivery", async () => {
    const job = await newJob();
    const first = await repo.startDelivery(job._id, at(1));
    expect(first).toMatchObject({ status: "sending", deliveries: 1, started_at: at(1) });
    const second = await repo.startDelivery(job._id, at(2));
    expect(second).toMatchObject({ status: "sending", deliveries: 2, started_at: at(1) });
    expect(await repo.find(job._id)).toMatchObject({ deliveries: 2 });
  });

  it("when delivery starts for a done, failed or unknown job, then null comes back and nothing changes", async () => {
    const done = await plannedJob(batchesOf("d", 1));
    await repo.finish(done._id, at(3));
    const failed = await newJob();
    await repo.fail(failed._id, "broken", at(3));

    expect(await repo.startDelivery(done._id, at(4))).toBeNull();
    expect(await repo.startDelivery(failed._id, at(4))).toBeNull();
    expect(await repo.startDelivery(uid("job"), at(4))).toBeNull();
    expect(await repo.find(done._id)).toMatchObject({ status: "done", deliveries: 1 });
    expect(await repo.find(failed._id)).toMatchObject({ status: "failed", deliveries: 0 });
  });

  it("when a job reaches the delivery bound, then failing it ends it and no further start is possible", async () => {
    const maxDeliveries = 3;
    const job = await newJob();
    let current: JobDoc | null = null;
    for (let i = 0; i < maxDeliveries; i++) current = await repo.startDelivery(job._id, at(i));
    expect(current?.deliveries).toBe(maxDeliveries);
    // notifier.deliver: deliveries >= NOTIFIER_MAX_DELIVERIES → fail instead of another attempt.
    await repo.fail(job._id, `gave up after ${current!.deliveries} delivery attempts`, at(10));
    expect(await repo.find(job._id)).toMatchObject({
      status: "failed",
      deliveries: maxDeliveries,
      error: "gave up after 3 delivery attempts",
      finished_at: at(10),
    });
    expect(await repo.startDelivery(job._id, at(11))).toBeNull();
    expect((await repo.unfinished()).map((j) => j._id)).not.toContain(job._id);
  });

  it("when a job is planned, then its batches are pending in order and the job records its device counts", async () => {
    const batches = batchesOf("p", 3, 3, 2);
    const job = await plannedJob(batches);
    expect(job).toMatchObject({ planned: true, devices: 8, users_without_devices: 1 });
    const pending = await repo.pendingBatches(job._id);
    expect(pending).toEqual(
      batches.map((tokens, index) => ({
        _id: `${job._id}:${index}`,
        job_id: job._id,
        index,
        tokens,
        status: "pending",
        sent: 0,
        failed: 0,
        pruned: 0,
      })),
    );
  });

  it("when a planned job is planned again, then nothing new is written", async () => {
    const job = await plannedJob(batchesOf("q", 2, 1));
    const before = await batchColl().find({ job_id: job._id }, { sort: { index: 1 } });
    await repo.plan(job, batchesOf("other", 5, 5, 5), { devices: 15, users_without_devices: 0 });
    expect(await batchColl().find({ job_id: job._id }, { sort: { index: 1 } })).toEqual(before);
    expect(await repo.find(job._id)).toEqual(job);
  });

  it("when planning is repeated from a stale job (a crash before planned was set), then the new plan replaces the old whole", async () => {
    const job = await newJob();
    const stale = (await repo.startDelivery(job._id, T0))!;
    const first = batchesOf("first", 2, 2);
    await repo.plan(stale, first, { devices: 4, users_without_devices: 0 });
    expect(stale.planned).toBe(false);
    const second = batchesOf("second", 2, 2);
    await repo.plan(stale, second, { devices: 4, users_without_devices: 0 });
    const stored = await batchColl().find({ job_id: job._id }, { sort: { index: 1 } });
    // Nothing is sent before a job is planned, so two half plans never mix: the last one wins whole.
    expect(stored.map((b) => b.tokens)).toEqual(second);
  });

  it("when some batches are done, then pendingBatches lists the others by numeric index, for that job only", async () => {
    const job = await plannedJob(batchesOf("o", ...Array<number>(12).fill(1)));
    const other = await plannedJob(batchesOf("x", 1, 1));
    const all = await repo.pendingBatches(job._id);
    expect(all.map((b) => b.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    await repo.completeBatch(all[1], { sent: 1, failed: 0, pruned: 0 });
    await repo.completeBatch(all[10], { sent: 1, failed: 0, pruned: 0 });
    expect((await repo.pendingBatches(job._id)).map((b) => b.index)).toEqual([0, 2, 3, 4, 5, 6, 7, 8, 9, 11]);
    expect((await repo.pendingBatches(other._id)).map((b) => b._id)).toEqual([
      `${other._id}:0`,
      `${other._id}:1`,
    ]);
    expect(await repo.pendingBatches(uid("job"))).toEqual([]);
  });

  it("when a batch is completed, then it is done with its counts and the job's counts grow by them", async () => {
    const job = await plannedJob(batchesOf("c", 4, 4));
    const [b0] = await repo.pendingBatches(job._id);
    await expect(repo.completeBatch(b0, { sent: 2, failed: 2, pruned: 1 })).resolves.toBe(true);
    expect(await batchColl().findOne({ _id: b0._id })).toMatchObject({
      status: "done",
      sent: 2,
      failed: 2,
      pruned: 1,
    });
    expect(await repo.find(job._id)).toMatchObject({ sent: 2, failed: 2, pruned: 1 });
    await expect(repo.completeBatch(b0, { sent: 4, failed: 0, pruned: 0 })).resolves.toBe(false);
    expect(await batchColl().findOne({ _id: b0._id })).toMatchObject({ sent: 2, failed: 2 });
    expect(await repo.find(job._id)).toMatchObject({ sent: 2, failed: 2, pruned: 1 });
  });

  it("when 20 completions of one batch race, then exactly one succeeds and the job counts it once", async () => {
    const job = await plannedJob(batchesOf("r", 500));
    const [batch] = await repo.pendingBatches(job._id);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => repo.completeBatch(batch, { sent: 497, failed: 3, pruned: 2 })),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await repo.find(job._id)).toMatchObject({ sent: 497, failed: 3, pruned: 2 });
    expect(await repo.pendingBatches(job._id)).toEqual([]);
  });

  it("when a job is finished, then its counts are the sums of its batches, whatever the job said before", async () => {
    const job = await plannedJob(batchesOf("f", 3, 3, 2));
    const [b0, b1, b2] = await repo.pendingBatches(job._id);
    await repo.completeBatch(b0, { sent: 3, failed: 0, pruned: 0 });
    await repo.completeBatch(b1, { sent: 1, failed: 2, pruned: 2 });
    await repo.completeBatch(b2, { sent: 0, failed: 2, pruned: 1 });
    // A crash between a batch's completion and the job's progress update leaves the job's counts behind.
    await jobColl().updateOne({ _id: job._id }, { $set: { sent: 1, failed: 0, pruned: 0 } });

    await repo.finish(job._id, at(9));
    expect(await repo.find(job._id)).toMatchObject({
      status: "done",
      finished_at: at(9),
      devices: 8,
      sent: 4,
      failed: 4,
      pruned: 3,
    });
  });

  it("when a job with no batches is finished, then it is done with zero counts", async () => {
    const job = await plannedJob([]);
    await repo.finish(job._id, at(2));
    expect(await repo.find(job._id)).toMatchObject({ status: "done", devices: 0, sent: 0, failed: 0 });
  });

  it("when an unfinished job is failed, then it is failed with the error and a finish date", async () => {
    const queued = await newJob();
    const sending = await newJob();
    await repo.startDelivery(sending._id, T0);
    await repo.fail(queued._id, "no luck", at(7));
    await repo.fail(sending._id, "no luck either", at(8));
    expect(await repo.find(queued._id)).toMatchObject({
      status: "failed",
      error: "no luck",
      finished_at: at(7),
    });
    expect(await repo.find(sending._id)).toMatchObject({
      status: "failed",
      error: "no luck either",
      finished_at: at(8),
    });
    await repo.fail(queued._id, "again", at(9));
    expect(await repo.find(queued._id)).toMatchObject({ error: "no luck", finished_at: at(7) });
  });

  it("when a done job is failed, then it stays done", async () => {
    const job = await plannedJob(batchesOf("z", 1));
    await repo.finish(job._id, at(4));
    await repo.fail(job._id, "late failure", at(5));
    expect(await repo.find(job._id)).toMatchObject({ status: "done", error: null, finished_at: at(4) });
  });
});

describeEachEngine("JobsRepository.unfinished", (store) => {
  it("when jobs are in every state, then unfinished lists the queued and sending ones, oldest first", async () => {
    const repo = new JobsRepository(store());
    await repo.init();
    const make = async (name: string, seconds: number) => {
      await repo.create(name, params(), "h", at(seconds));
      return name;
    };
    const newest = await make("job-newest", 30);
    const oldestSending = await make("job-oldest", 10);
    const middle = await make("job-middle", 20);
    const done = await make("job-done", 5);
    const failed = await make("job-failed", 1);

    await repo.startDelivery(oldestSending, at(40));
    await repo.startDelivery(done, at(40));
    await repo.plan((await repo.find(done))!, [], { devices: 0, users_without_devices: 3 });
    await repo.finish(done, at(41));
    await repo.fail(failed, "x", at(41));

    const unfinished = await repo.unfinished();
    expect(unfinished.map((j) => j._id)).toEqual([oldestSending, middle, newest]);
    expect(unfinished.map((j) => j.status)).toEqual(["sending", "queued", "queued"]);
  });
});

describeEachEngine("DevicesRepository", (store) => {
  let repo: DevicesRepository;

  beforeAll(async () => {
    repo = new DevicesRepository(store());
    await repo.init();
  });

  it("when devices are added, then tokensOf answers the users' tokens sorted and how many users have one", async () => {
    const [alice, bob, carol] = [uid("alice"), uid("bob"), uid("carol")];
    const tag = uid("t");
    await repo.add(alice, `${tag}-zz`, T0);
    await repo.add(alice, `${tag}-aa`, T0);
    await repo.add(bob, `${tag}-mm`, T0);
    await expect(repo.tokensOf([alice, bob, carol])).resolves.toEqual({
      tokens: [`${tag}-aa`, `${tag}-mm`, `${tag}-zz`],
      usersWithDevices: 2,
    });
    await expect(repo.tokensOf([carol])).resolves.toEqual({ tokens: [], usersWithDevices: 0 });
    await expect(repo.tokensOf([])).resolves.toEqual({ tokens: [], usersWithDevices: 0 });
  });

  it("when the same token is added twice for a user, then it is held once", async () => {
    const user = uid("user");
    const token = uid("tok");
    await repo.add(user, token, T0);
    await repo.add(user, token, at(1));
    await expect(repo.tokensOf([user])).resolves.toEqual({ tokens: [token], usersWithDevices: 1 });
  });

  it("when a token is added for another user, then it moves to that user", async () => {
    const [from, to] = [uid("from"), uid("to")];
    const token = uid("tok");
    const kept = uid("kept");
    await repo.add(from, token, T0);
    await repo.add(from, kept, T0);
    await repo.add(to, token, at(1));
    await expect(repo.tokensOf([from])).resolves.toEqual({ tokens: [kept], usersWithDevices: 1 });
    await expect(repo.tokensOf([to])).resolves.toEqual({ tokens: [token], usersWithDevices: 1 });
    expect((await repo.tokensOf([from, to])).tokens).toHaveLength(2);
  });

  it("when tokens are pruned, then they are gone and the count removed comes back", async () => {
    const user = uid("user");
    const [a, b, c] = [uid("a"), uid("b"), uid("c")];
    for (const t of [a, b, c]) await repo.add(user, t, T0);
    await expect(repo.prune([a, c, uid("never-added")])).resolves.toBe(2);
    await expect(repo.tokensOf([user])).resolves.toEqual({ tokens: [b], usersWithDevices: 1 });
    await expect(repo.prune([a])).resolves.toBe(0);
    await expect(repo.prune([])).resolves.toBe(0);
    await expect(repo.prune([b])).resolves.toBe(1);
    await expect(repo.tokensOf([user])).resolves.toEqual({ tokens: [], usersWithDevices: 0 });
  });
});
