/**
 * The notifier's jobs, recipient pages and batches, and the users service's devices, on every engine:
 * idempotent creation, recipient sets staged page by page, delivery attempts, planning each page once,
 * conditional batch completion under concurrency, final counts from the batches, failing only unfinished
 * jobs, the unfinished queue oldest first, retention, device tokens in pages.
 */
import { RECIPIENT_PAGE_MAX, type SendMulticastParams } from "../../shared/contracts/notifier";
import {
  JobsRepository,
  keyPairsOf,
  type BatchDoc,
  type JobDoc,
  type RecipientPageDoc,
  type Retention,
} from "../../services/notifier/jobs.repository";
import { DevicesRepository } from "../../services/users/devices.repository";
import { PAGE_BYTES } from "../../shared/contracts/paging";
import { DEVICE_TOKENS_PAGE_MAX } from "../../shared/contracts/users";
import { describeEachEngine, uid } from "./engines";
import { recordJob } from "../support/notifier-jobs";

const T0 = new Date("2034-01-01T00:00:00.000Z");
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

const HOUR = 3600_000;
const RETENTION: Retention = { jobMs: 720 * HOUR, batchesMs: 24 * HOUR, recipientsMs: 24 * HOUR };

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
    const { job, created } = await recordJob(repo, uid("job"), params(over), "hash-1", now);
    expect(created).toBe(true);
    return job;
  }

  /** A job moved to sending and planned with `batches`. */
  async function plannedJob(batches: string[][]): Promise<JobDoc> {
    const job = await newJob();
    const started = await repo.startDelivery(job._id, T0);
    await repo.planPage(
      started!,
      0,
      batches,
      { devices: batches.flat().length, users_without_devices: 1 },
      T0,
    );
    return (await repo.find(job._id))!;
  }

  it("when a job is created, then it is stored queued with zero counts and its request's fields", async () => {
    const id = uid("job");
    const { job, created } = await recordJob(
      repo,
      id,
      params({ picture: "https://x.example/p.png" }),
      "h",
      T0,
    );
    expect(created).toBe(true);
    const expected: JobDoc = {
      _id: id,
      status: "queued",
      request_hash: "h",
      title: "Hello",
      desc: "World",
      picture: "https://x.example/p.png",
      key_pairs: [
        ["a", "1"],
        ["n", 2],
        ["b", true],
      ],
      created_by: "key-test",
      recipients: 3,
      recipient_set: expect.stringMatching(new RegExp(`^${id}\\.[0-9a-f]{16}$`)) as unknown as string,
      recipient_pages: 1,
      planned: false,
      planned_pages: 0,
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
      recipients_expire_at: null,
      batches_expire_at: null,
      retain_until: null,
      expires_at: null,
    };
    expect(job).toEqual(expected);
    expect(await repo.find(id)).toEqual(expected);
    // The user ids live apart from the job, which must stay small.
    expect(job).not.toHaveProperty("user_ids");
    await expect(repo.recipientsOf(id)).resolves.toEqual(["u1", "u2", "u3"]);
  });

  it("when keys have names with . $ __proto__ constructor prototype, then they are stored and read back intact", async () => {
    // As JSON.parse gives them: `__proto__` an own entry, not the object's prototype.
    const keys = JSON.parse(
      '{"a.b":"1","$x":"2","y$":3,"__proto__":"4","constructor":"5","prototype":true,"$":"6",".":"7"}',
    ) as Record<string, string | number | boolean>;
    const id = uid("job");
    const { created } = await recordJob(repo, id, params({ keys }), "h", T0);
    expect(created).toBe(true);
    const found = await repo.find(id);
    expect(found?.key_pairs).toEqual([
      ["a.b", "1"],
      ["$x", "2"],
      ["y$", 3],
      ["__proto__", "4"],
      ["constructor", "5"],
      ["prototype", true],
      ["$", "6"],
      [".", "7"],
    ]);
    expect(keyPairsOf(found!)).toEqual(Object.entries(keys));
    // Nothing of the names reached the document's own shape or any prototype.
    expect(Object.getPrototypeOf(found)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).constructor).toBe(Object);
  });

  it("when a job was recorded before key pairs, then its keys object is read as pairs", async () => {
    const id = uid("job");
    const { job } = await recordJob(repo, id, params(), "h", T0);
    await jobColl().updateOne(
      { _id: id },
      { $set: { keys: { promo: "X1", n: 3 } }, $unset: { key_pairs: "", created_by: "" } },
    );
    const legacy = await repo.find(job._id);
    expect(legacy?.created_by).toBeUndefined();
    expect(keyPairsOf(legacy!)).toEqual([
      ["promo", "X1"],
      ["n", 3],
    ]);
  });

  it("when the recipients of an unknown job are asked for, then the list is empty", async () => {
    await expect(repo.recipientsOf(uid("job"))).resolves.toEqual([]);
  });

  it("when a job is created with an id already taken, then created is false and the existing job comes back", async () => {
    const id = uid("job");
    await recordJob(repo, id, params(), "hash-first", T0);
    const again = await recordJob(
      repo,
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
      Array.from({ length: 10 }, (_, i) => recordJob(repo, id, params({ title: `t${i}` }), `h${i}`, T0)),
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
    await repo.finish(done._id, at(3), RETENTION);
    const failed = await newJob();
    await repo.fail(failed._id, "broken", at(3), RETENTION);

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
    // notifier.deliver: deliveries >= MAX_DELIVERIES → fail instead of another attempt.
    await repo.fail(job._id, `gave up after ${current!.deliveries} delivery attempts`, at(10), RETENTION);
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
    expect(job).toMatchObject({ planned: true, planned_pages: 1, devices: 8, users_without_devices: 1 });
    const pending = await repo.pendingBatches(job._id);
    expect(pending).toEqual(
      batches.map((tokens, index) => ({
        _id: `${job._id}:0:${index}`,
        job_id: job._id,
        page: 0,
        index,
        tokens,
        status: "pending",
        sent: 0,
        failed: 0,
        pruned: 0,
        planned_at: T0,
      })),
    );
    expect(await repo.pendingBatches(job._id, 0)).toEqual(pending);
    expect(await repo.pendingBatches(job._id, 1)).toEqual([]);
  });

  it("when a planned job is planned again, then nothing new is written", async () => {
    const job = await plannedJob(batchesOf("q", 2, 1));
    const before = await batchColl().find({ job_id: job._id }, { sort: { index: 1 } });
    await expect(
      repo.planPage(job, 0, batchesOf("other", 5, 5, 5), { devices: 15, users_without_devices: 0 }, T0),
    ).resolves.toBe(false);
    expect(await batchColl().find({ job_id: job._id }, { sort: { index: 1 } })).toEqual(before);
    expect(await repo.find(job._id)).toEqual(job);
  });

  it("when planning is repeated from a stale job (a crash before planned was set), then the new plan replaces the old whole", async () => {
    const job = await newJob();
    const stale = (await repo.startDelivery(job._id, T0))!;
    const first = batchesOf("first", 2, 2);
    await repo.planPage(stale, 0, first, { devices: 4, users_without_devices: 0 }, T0);
    expect(stale.planned).toBe(false);
    const second = batchesOf("second", 2, 2);
    await repo.planPage(stale, 0, second, { devices: 4, users_without_devices: 0 }, T0);
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
      `${other._id}:0:0`,
      `${other._id}:0:1`,
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

    await repo.finish(job._id, at(9), RETENTION);
    expect(await repo.find(job._id)).toMatchObject({
      status: "done",
      finished_at: at(9),
      recipients_expire_at: new Date(at(9).getTime() + RETENTION.recipientsMs),
      batches_expire_at: new Date(at(9).getTime() + RETENTION.batchesMs),
      retain_until: new Date(at(9).getTime() + RETENTION.jobMs),
      expires_at: null,
      devices: 8,
      sent: 4,
      failed: 4,
      pruned: 3,
    });
  });

  it("when a job with no batches is finished, then it is done with zero counts", async () => {
    const job = await plannedJob([]);
    await repo.finish(job._id, at(2), RETENTION);
    expect(await repo.find(job._id)).toMatchObject({ status: "done", devices: 0, sent: 0, failed: 0 });
  });

  it("when an unfinished job is failed, then it is failed with the error and a finish date", async () => {
    const queued = await newJob();
    const sending = await newJob();
    await repo.startDelivery(sending._id, T0);
    await repo.fail(queued._id, "no luck", at(7), RETENTION);
    await repo.fail(sending._id, "no luck either", at(8), RETENTION);
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
    await repo.fail(queued._id, "again", at(9), RETENTION);
    expect(await repo.find(queued._id)).toMatchObject({ error: "no luck", finished_at: at(7) });
  });

  it("when a done job is failed, then it stays done", async () => {
    const job = await plannedJob(batchesOf("z", 1));
    await repo.finish(job._id, at(4), RETENTION);
    await repo.fail(job._id, "late failure", at(5), RETENTION);
    expect(await repo.find(job._id)).toMatchObject({ status: "done", error: null, finished_at: at(4) });
  });
});

describeEachEngine("JobsRepository.unfinished", (store) => {
  it("when jobs are in every state, then unfinished lists the queued and sending ones, oldest first", async () => {
    const repo = new JobsRepository(store());
    await repo.init();
    const make = async (name: string, seconds: number) => {
      await recordJob(repo, name, params(), "h", at(seconds));
      return name;
    };
    const newest = await make("job-newest", 30);
    const oldestSending = await make("job-oldest", 10);
    const middle = await make("job-middle", 20);
    const done = await make("job-done", 5);
    const failed = await make("job-failed", 1);

    await repo.startDelivery(oldestSending, at(40));
    await repo.startDelivery(done, at(40));
    await repo.planPage((await repo.find(done))!, 0, [], { devices: 0, users_without_devices: 3 }, at(40));
    await repo.finish(done, at(41), RETENTION);
    await repo.fail(failed, "x", at(41), RETENTION);

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
      next: null,
    });
    await expect(repo.tokensOf([carol])).resolves.toEqual({ tokens: [], usersWithDevices: 0, next: null });
    await expect(repo.tokensOf([])).resolves.toEqual({ tokens: [], usersWithDevices: 0, next: null });
  });

  it("when the same token is added twice for a user, then it is held once", async () => {
    const user = uid("user");
    const token = uid("tok");
    await repo.add(user, token, T0);
    await repo.add(user, token, at(1));
    await expect(repo.tokensOf([user])).resolves.toEqual({
      tokens: [token],
      usersWithDevices: 1,
      next: null,
    });
  });

  it("when a token is added for another user, then it moves to that user", async () => {
    const [from, to] = [uid("from"), uid("to")];
    const token = uid("tok");
    const kept = uid("kept");
    await repo.add(from, token, T0);
    await repo.add(from, kept, T0);
    await repo.add(to, token, at(1));
    await expect(repo.tokensOf([from])).resolves.toEqual({ tokens: [kept], usersWithDevices: 1, next: null });
    await expect(repo.tokensOf([to])).resolves.toEqual({ tokens: [token], usersWithDevices: 1, next: null });
    expect((await repo.tokensOf([from, to])).tokens).toHaveLength(2);
  });

  it("when tokens are pruned, then they are gone and the count removed comes back", async () => {
    const user = uid("user");
    const [a, b, c] = [uid("a"), uid("b"), uid("c")];
    for (const t of [a, b, c]) await repo.add(user, t, T0);
    await expect(repo.prune([a, c, uid("never-added")])).resolves.toBe(2);
    await expect(repo.tokensOf([user])).resolves.toEqual({ tokens: [b], usersWithDevices: 1, next: null });
    await expect(repo.prune([a])).resolves.toBe(0);
    await expect(repo.prune([])).resolves.toBe(0);
    await expect(repo.prune([b])).resolves.toBe(1);
    await expect(repo.tokensOf([user])).resolves.toEqual({ tokens: [], usersWithDevices: 0, next: null });
  });

  it("when the users have more tokens than one answer takes, then the pages follow each other by cursor, each within its bounds", async () => {
    const users = Array.from({ length: 40 }, () => uid("many"));
    const tag = uid("pg");
    // 40 users × 200 tokens of ~60 bytes: 8,000 tokens, more than a page holds by count or by bytes.
    const devices = users.flatMap((u, i) =>
      Array.from({ length: 200 }, (_, k) => ({
        user_id: u,
        token: `${tag}-${String(i * 200 + k).padStart(5, "0")}-${"x".repeat(40)}`,
      })),
    );
    await repo.import(devices, T0);
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = await repo.tokensOf(users, after);
      pages++;
      expect(page.usersWithDevices).toBe(40);
      expect(page.tokens.length).toBeLessThanOrEqual(DEVICE_TOKENS_PAGE_MAX);
      expect(Buffer.byteLength(JSON.stringify(page.tokens))).toBeLessThanOrEqual(PAGE_BYTES);
      seen.push(...page.tokens);
      after = page.next ?? undefined;
    } while (after !== undefined);
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual(devices.map((d) => d.token).sort());
  });
});

describeEachEngine("JobsRepository recipient sets", (store) => {
  let repo: JobsRepository;
  const pagesColl = () => store().collection<RecipientPageDoc>("notification_recipients");

  beforeAll(async () => {
    repo = new JobsRepository(store());
    await repo.init();
  });

  it("when a long list is stored whole, then it lies in pages within their bounds, in order, and the job's header is gone once it takes the set", async () => {
    const id = `job_${uid("x").slice(-12).padStart(24, "0")}`;
    const userIds = Array.from(
      { length: 25_000 },
      (_, i) => `user-${String(i).padStart(8, "0")}-${"u".repeat(22)}`,
    );
    const { job } = await recordJob(repo, id, params({ user_ids: userIds }), "h", T0);
    const docs = await pagesColl().find({ set_id: job.recipient_set }, { sort: { index: 1 } });
    const pages = docs.filter((d) => d.index >= 0);
    expect(docs.some((d) => d.index === -1)).toBe(false);
    expect(pages.length).toBe(job.recipient_pages);
    expect(pages.length).toBeGreaterThan(1);
    for (const page of pages) {
      expect(page.user_ids.length).toBeLessThanOrEqual(RECIPIENT_PAGE_MAX);
      expect(Buffer.byteLength(JSON.stringify(page.user_ids))).toBeLessThanOrEqual(PAGE_BYTES);
    }
    expect(job).toMatchObject({ recipients: 25_000, planned_pages: 0 });
    await expect(repo.recipientsOf(id)).resolves.toEqual(userIds);
    await expect(repo.recipientsPage(job, 1)).resolves.toEqual(pages[1].user_ids);
  });

  it("when pages are staged one by one (one of them twice) and a job takes the set, then each page reads back as staged", async () => {
    const jobId = `job_${"a".repeat(12)}${uid("s").slice(-12)}`;
    const setId = await repo.openSet(jobId, T0);
    expect(setId).toMatch(new RegExp(`^${jobId}\\.[0-9a-f]{16}$`));
    await repo.stagePage(setId, 0, ["a", "b"], T0);
    await repo.stagePage(setId, 1, ["c"], T0);
    await repo.stagePage(setId, 1, ["c"], at(1));
    await repo.stagePage(setId, 2, ["d", "e"], T0);
    expect(await repo.page(setId, 1)).toEqual(["c"]);
    expect(await repo.page(setId, 3)).toBeNull();
    expect(await pagesColl().count({ set_id: setId, index: -1 })).toBe(1);
    const fields = { title: "t", desc: null, picture: null, keys: null };
    const { job, created } = await repo.create(jobId, fields, { setId, pages: 3, count: 5 }, "h", T0, "k1");
    expect(created).toBe(true);
    expect(await pagesColl().count({ set_id: setId, index: -1 })).toBe(0);
    await expect(repo.recipientsOf(job._id)).resolves.toEqual(["a", "b", "c", "d", "e"]);
  });

  it("when a set is dropped, then its pages and header are gone and other sets stay", async () => {
    const a = await repo.openSet(`job_${"b".repeat(24)}`, T0);
    const b = await repo.openSet(`job_${"c".repeat(24)}`, T0);
    await repo.stagePage(a, 0, ["x"], T0);
    await repo.stagePage(b, 0, ["y"], T0);
    await expect(repo.dropSet(a)).resolves.toBe(2);
    expect(await pagesColl().count({ set_id: a })).toBe(0);
    expect(await repo.page(b, 0)).toEqual(["y"]);
  });

  it("when a job was recorded before recipients came in pages, then its one list document is read as pages", async () => {
    const id = uid("legacy");
    const userIds = Array.from({ length: RECIPIENT_PAGE_MAX + 5 }, (_, i) => `old-${i}`);
    await store()
      .collection<{ _id: string; user_ids: string[] }>("notification_recipients")
      .insertOne({ _id: id, user_ids: userIds });
    const legacy = {
      ...(await recordJob(repo, uid("tmpl"), params(), "h", T0)).job,
      _id: id,
      recipients: userIds.length,
    };
    delete legacy.recipient_set;
    delete legacy.recipient_pages;
    delete legacy.planned_pages;
    await store().collection<JobDoc>("notification_jobs").insertOne(legacy);
    expect(repo.pageCount(legacy)).toBe(2);
    await expect(repo.recipientsPage(legacy, 1)).resolves.toEqual(userIds.slice(RECIPIENT_PAGE_MAX));
    await expect(repo.recipientsOf(id)).resolves.toEqual(userIds);
    // Its first delivery plans it page by page.
    expect(await repo.startDelivery(id, at(1))).toMatchObject({ status: "sending", planned_pages: 0 });
  });
});

describeEachEngine("JobsRepository retention", (store) => {
  let repo: JobsRepository;
  const pagesColl = () => store().collection<RecipientPageDoc>("notification_recipients");
  const batchColl = () => store().collection<BatchDoc>("notification_batches");
  const jobColl = () => store().collection<JobDoc>("notification_jobs");

  beforeAll(async () => {
    repo = new JobsRepository(store());
    await repo.init();
  });

  /** A job planned with two batches and sent, ended at `ended`. */
  async function endedJob(ended: Date, how: "done" | "failed" = "done"): Promise<JobDoc> {
    const { job } = await recordJob(repo, uid("job"), params(), "h", T0);
    const started = (await repo.startDelivery(job._id, T0))!;
    await repo.planPage(started, 0, batchesOf(job._id, 2, 1), { devices: 3, users_without_devices: 0 }, T0);
    if (how === "done") await repo.finish(job._id, ended, RETENTION);
    else await repo.fail(job._id, "gave up", ended, RETENTION);
    return (await repo.find(job._id))!;
  }

  const counts = async (job: JobDoc) => ({
    pages: await pagesColl().count({ set_id: job.recipient_set }),
    batches: await batchColl().count({ job_id: job._id }),
    job: await jobColl().count({ _id: job._id }),
  });

  it("when an ended job's retentions pass, then its recipients and batches go first, then the job itself, each at its time", async () => {
    const t = at(100_000);
    const done = await endedJob(t);
    const failed = await endedJob(t, "failed");
    const unfinished = (await recordJob(repo, uid("job"), params(), "h", T0)).job;
    expect(await counts(done)).toEqual({ pages: 1, batches: 2, job: 1 });

    const sweep = async (now: Date) => {
      await repo.purgeRecipients(now);
      await repo.purgeBatches(now);
      await repo.settleExpiries();
      await repo.purgeJobs(now);
    };
    await sweep(new Date(t.getTime() + RETENTION.recipientsMs - 1));
    expect(await counts(done)).toEqual({ pages: 1, batches: 2, job: 1 });

    await sweep(new Date(t.getTime() + RETENTION.recipientsMs + 1));
    expect(await counts(done)).toEqual({ pages: 0, batches: 0, job: 1 });
    expect(await counts(failed)).toEqual({ pages: 0, batches: 0, job: 1 });
    // Only now does the job have the date it goes at (what MongoDB's TTL index reads).
    expect(await repo.find(done._id)).toMatchObject({
      status: "done",
      sent: 0,
      recipients_expire_at: null,
      batches_expire_at: null,
      expires_at: new Date(t.getTime() + RETENTION.jobMs),
    });

    await sweep(new Date(t.getTime() + RETENTION.jobMs + 1));
    expect(await counts(done)).toEqual({ pages: 0, batches: 0, job: 0 });
    expect(await counts(failed)).toEqual({ pages: 0, batches: 0, job: 0 });
    // An unfinished job is never swept.
    expect(await counts(unfinished)).toEqual({ pages: 1, batches: 0, job: 1 });
  });

  it("when a job ended before retention existed, then it is dated from its end and swept like the others", async () => {
    const job = await endedJob(at(200_000));
    await jobColl().updateOne(
      { _id: job._id },
      { $unset: { recipients_expire_at: 1, batches_expire_at: 1, retain_until: 1, expires_at: 1 } },
    );
    await expect(repo.dateOldJobs(RETENTION)).resolves.toBe(1);
    expect(await repo.find(job._id)).toMatchObject({
      recipients_expire_at: new Date(at(200_000).getTime() + RETENTION.recipientsMs),
      retain_until: new Date(at(200_000).getTime() + RETENTION.jobMs),
      expires_at: null,
    });
    await expect(repo.dateOldJobs(RETENTION)).resolves.toBe(0);
  });

  it("when a recipient set was opened over an hour ago and no job took it, then it is dropped; a taken one keeps its pages", async () => {
    const hour = 3600_000;
    const now = at(300_000);
    const abandoned = await repo.openSet(`job_${"d".repeat(24)}`, new Date(now.getTime() - 2 * hour));
    await repo.stagePage(abandoned, 0, ["a"], new Date(now.getTime() - 2 * hour));
    const recent = await repo.openSet(`job_${"e".repeat(24)}`, new Date(now.getTime() - hour / 2));
    await repo.stagePage(recent, 0, ["b"], new Date(now.getTime() - hour / 2));
    // A job that took its set, but whose header a crash left behind.
    const { job } = await recordJob(repo, uid("job"), params(), "h", new Date(now.getTime() - 2 * hour));
    await pagesColl().insertOne({
      _id: `${job.recipient_set}:open`,
      set_id: job.recipient_set!,
      index: -1,
      user_ids: [],
      staged_at: new Date(now.getTime() - 2 * hour),
    });

    await expect(repo.dropAbandonedSets(now, hour)).resolves.toBe(3);
    expect(await pagesColl().count({ set_id: abandoned })).toBe(0);
    expect(await pagesColl().count({ set_id: recent })).toBe(2);
    expect(await pagesColl().count({ set_id: job.recipient_set })).toBe(1);
    await expect(repo.recipientsOf(job._id)).resolves.toEqual(["u1", "u2", "u3"]);
  });
});
