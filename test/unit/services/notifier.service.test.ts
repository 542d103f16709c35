/**
 * The notifier service's `deliver` method and its jobs channel handler without a broker (called with a
 * stand-in `this`): the bound on attempts (MAX_DELIVERIES) at one job, the job view GET
 * /notifications/{id} answers, and what a stop does to a job on the channel.
 */
import { NedbStore } from "../../../shared/storage";
import type { DeliverDeps } from "../../../services/notifier/deliver";
import { JobsRepository } from "../../../services/notifier/jobs.repository";
import type { TokenResult } from "../../../services/notifier/transport";
import { recordJob } from "../../support/notifier-jobs";
import NotifierServiceSchema, { readableBy, toJobView } from "../../../services/notifier.service";

const NOW = new Date("2033-04-05T06:07:08.000Z");
const RETENTION = { jobMs: 3_600_000, batchesMs: 3_600_000, recipientsMs: 3_600_000 };

type Deliver = (this: unknown, jobId: string) => Promise<void>;
const deliverMethod = NotifierServiceSchema.methods!.deliver as unknown as Deliver;

function harness(maxDeliveries: number, transportFails = false) {
  const jobs = new JobsRepository(new NedbStore(null));
  const sends: string[][] = [];
  const deps: DeliverDeps = {
    jobs,
    deviceTokens: async ({ user_ids: ids }) => ({
      tokens: ids.map((id) => `tok-${id}`).sort(),
      users_with_devices: ids.length,
      next: null,
    }),
    prune: async () => 0,
    retention: RETENTION,
    transport: {
      name: "fake",
      send: async (_m, tokens): Promise<TokenResult[]> => {
        sends.push(tokens);
        if (transportFails) throw new Error("FCM unreachable");
        return tokens.map(() => ({ success: true }));
      },
      close: async () => undefined,
    },
    concurrency: 2,
    maxRetries: 0,
    retryBaseMs: 1,
    sleep: async () => undefined,
    now: () => NOW,
    stopping: () => false,
  };
  const service = {
    jobs,
    maxDeliveries,
    retention: RETENTION,
    deliverDeps: () => deps,
  };
  const deliver = (jobId: string) => deliverMethod.call(service, jobId);
  return { jobs, sends, deliver };
}

async function createJob(jobs: JobsRepository, id = "job_1"): Promise<string> {
  await recordJob(jobs, id, { title: "Hi", user_ids: ["a", "b"] }, "hash", NOW);
  return id;
}

describe("notifier.deliver", () => {
  it("when a job is below the delivery bound, then it is delivered to the end", async () => {
    const h = harness(3);
    const id = await createJob(h.jobs);
    await h.deliver(id);
    expect(h.sends).toEqual([["tok-a", "tok-b"]]);
    expect(await h.jobs.find(id)).toMatchObject({ status: "done", deliveries: 1, sent: 2, error: null });
  });

  it("when every attempt fails, then the job is attempted maxDeliveries times and the last failure marks it failed", async () => {
    const h = harness(3, true);
    const id = await createJob(h.jobs);
    for (let attempt = 1; attempt <= 2; attempt++) {
      await expect(h.deliver(id)).rejects.toThrow("FCM unreachable");
      expect(await h.jobs.find(id)).toMatchObject({ status: "sending", deliveries: attempt });
    }
    // The third (last allowed) attempt fails too: the job is failed then, and the error still goes to
    // the channel, which dead-letters the message.
    await expect(h.deliver(id)).rejects.toThrow("FCM unreachable");
    expect(h.sends).toHaveLength(3);
    const job = await h.jobs.find(id);
    expect(job).toMatchObject({
      status: "failed",
      deliveries: 3,
      error: "gave up after 3 delivery attempts: FCM unreachable",
    });
    expect(job?.finished_at).toBeInstanceOf(Date);
    expect(await h.jobs.unfinished()).toEqual([]);

    // A failed job stays failed: a late redelivery sends nothing.
    await h.deliver(id);
    expect(h.sends).toHaveLength(3);
    expect((await h.jobs.find(id))?.status).toBe("failed");
  });

  it("when a done job or an unknown id is delivered, then nothing is sent", async () => {
    const h = harness(1);
    const id = await createJob(h.jobs);
    await h.deliver(id);
    const done = await h.jobs.find(id);
    await h.deliver(id);
    await h.deliver("job_missing");
    expect(h.sends).toHaveLength(1);
    expect(await h.jobs.find(id)).toEqual(done);
  });
});

describe("notifier.job", () => {
  type JobHandler = (this: unknown, ctx: unknown) => Promise<unknown>;
  const jobAction = NotifierServiceSchema.actions!.job as { handler: JobHandler };
  const read = (jobs: JobsRepository, jobId: string, keyId?: string) =>
    jobAction.handler.call(
      { jobs },
      { params: { job_id: jobId }, meta: keyId ? { apiKey: { key_id: keyId } } : {} },
    );

  it("when the key that made a job reads it, then its view comes back", async () => {
    const jobs = new JobsRepository(new NedbStore(null));
    await recordJob(jobs, "job_own", { title: "Hi", user_ids: ["a"] }, "h", NOW, "key-a");
    await expect(read(jobs, "job_own", "key-a")).resolves.toMatchObject({ id: "job_own", status: "queued" });
  });

  it("when another key, or none, reads a job, then the same 404 as an unknown job", async () => {
    const jobs = new JobsRepository(new NedbStore(null));
    await recordJob(jobs, "job_own", { title: "Hi", user_ids: ["a"] }, "h", NOW, "key-a");
    const unknown = await read(jobs, "job_none", "key-a").catch((e: Error) => e);
    for (const other of [read(jobs, "job_own", "key-b"), read(jobs, "job_own")]) {
      const err = await other.catch((e: Error) => e);
      expect(err).toEqual(unknown);
      expect(err).toMatchObject({ message: "Notification job not found", code: 404 });
    }
  });

  it("when a job names no maker (recorded before makers were kept), then no key may read it", () => {
    expect(readableBy({}, "key-a")).toBe(false);
    expect(readableBy({ created_by: "key-a" }, undefined)).toBe(false);
    expect(readableBy({ created_by: "key-a" }, "key-a")).toBe(true);
    expect(readableBy({ created_by: "" }, "")).toBe(false);
  });
});

describe("toJobView", () => {
  it("when a job is viewed, then dates become ISO strings, nulls stay null and internals are left out", async () => {
    const jobs = new JobsRepository(new NedbStore(null));
    const { job } = await recordJob(jobs, "job_v", { title: "t", user_ids: ["a"], keys: { k: 1 } }, "h", NOW);
    expect(toJobView(job)).toEqual({
      id: "job_v",
      status: "queued",
      recipients: 1,
      users_without_devices: 0,
      devices: 0,
      sent: 0,
      failed: 0,
      pruned: 0,
      created_at: "2033-04-05T06:07:08.000Z",
      started_at: null,
      finished_at: null,
      error: null,
    });
    const started = await jobs.startDelivery("job_v", new Date("2033-04-05T06:07:09.500Z"));
    expect(toJobView(started!)).toMatchObject({ status: "sending", started_at: "2033-04-05T06:07:09.500Z" });
  });
});

describe("the notifier.jobs channel handler during a stop", () => {
  type Handler = (this: unknown, msg: { job_id: string }, raw?: unknown) => Promise<void>;
  const channel = NotifierServiceSchema.channels!["notifier.jobs"] as unknown as { handler: Handler };
  const unfinished = NotifierServiceSchema.methods!.unfinished as unknown as (
    this: unknown,
    id: string,
  ) => Promise<boolean>;

  /** A stand-in service whose one job has two batches; `stopAfterFirstSend` begins the stop mid-job. */
  async function stoppable(stopAfterFirstSend: boolean) {
    const jobs = new JobsRepository(new NedbStore(null));
    const userIds = Array.from({ length: 600 }, (_, i) => `u${String(i).padStart(3, "0")}`);
    await recordJob(jobs, "job_s", { title: "Hi", user_ids: userIds }, "hash", NOW);
    const sends: number[] = [];
    const service: Record<string, unknown> = {
      jobs,
      stopping: false,
      maxDeliveries: 5,
      retention: RETENTION,
    };
    const deps: DeliverDeps = {
      jobs,
      deviceTokens: async ({ user_ids: ids }) => ({
        tokens: ids.map((id) => `tok-${id}`),
        users_with_devices: ids.length,
        next: null,
      }),
      prune: async () => 0,
      retention: RETENTION,
      transport: {
        name: "fake",
        send: async (_m, tokens): Promise<TokenResult[]> => {
          sends.push(tokens.length);
          if (stopAfterFirstSend) service.stopping = true;
          return tokens.map(() => ({ success: true }));
        },
        close: async () => undefined,
      },
      concurrency: 1,
      maxRetries: 0,
      retryBaseMs: 1,
      sleep: async () => undefined,
      now: () => NOW,
      stopping: () => service.stopping as boolean,
    };
    service.deliverDeps = () => deps;
    service.deliver = (id: string) => deliverMethod.call(service, id);
    service.unfinished = (id: string) => unfinished.call(service, id);
    const raw = { working: jest.fn(), nak: jest.fn() };
    return {
      jobs,
      sends,
      service,
      raw,
      handle: () => channel.handler.call(service, { job_id: "job_s" }, raw),
    };
  }

  it("when a job arrives at a notifier that is stopping, then it is given back for later redelivery untouched", async () => {
    const s = await stoppable(false);
    s.service.stopping = true;
    await s.handle();
    expect(s.raw.nak).toHaveBeenCalledWith(3000);
    expect(s.sends).toEqual([]);
    expect((await s.jobs.find("job_s"))?.deliveries).toBe(0);
  });

  it("when the stop begins while a job runs, then the batch in flight is recorded, no other starts, and the job is given back instead of acknowledged", async () => {
    const s = await stoppable(true);
    await s.handle();
    expect(s.sends).toEqual([500]);
    expect(s.raw.nak).toHaveBeenCalledWith(3000);
    const job = await s.jobs.find("job_s");
    expect(job).toEqual(expect.objectContaining({ status: "sending", sent: 500 }));
  });

  it("when a job finishes without a stop, then it is not given back (the adapter acknowledges it)", async () => {
    const s = await stoppable(false);
    await s.handle();
    expect(s.sends).toEqual([500, 100]);
    expect(s.raw.nak).not.toHaveBeenCalled();
    expect((await s.jobs.find("job_s"))?.status).toBe("done");
  });
});
