/**
 * The notifier service's `deliver` method without a broker (called with a stand-in `this`): the bound
 * NOTIFIER_MAX_DELIVERIES on attempts at one job, and the job view GET /notifications/{id} answers.
 */
import type { Config } from "../../shared/config";
import { NedbStore } from "../../shared/storage";
import type { DeliverDeps } from "../../services/notifier/deliver";
import { JobsRepository } from "../../services/notifier/jobs.repository";
import type { TokenResult } from "../../services/notifier/transport";
import NotifierServiceSchema, { toJobView } from "../../services/notifier.service";

const NOW = new Date("2033-04-05T06:07:08.000Z");

type Deliver = (this: unknown, jobId: string) => Promise<void>;
const deliverMethod = NotifierServiceSchema.methods!.deliver as unknown as Deliver;

function harness(maxDeliveries: number, transportFails = false) {
  const jobs = new JobsRepository(new NedbStore(null));
  const sends: string[][] = [];
  const deps: DeliverDeps = {
    jobs,
    deviceTokens: async (ids) => ({
      tokens: ids.map((id) => `tok-${id}`).sort(),
      users_with_devices: ids.length,
    }),
    prune: async () => 0,
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
    config: { notifierMaxDeliveries: maxDeliveries } as Partial<Config> as Config,
    deliverDeps: () => deps,
  };
  const deliver = (jobId: string) => deliverMethod.call(service, jobId);
  return { jobs, sends, deliver };
}

async function createJob(jobs: JobsRepository, id = "job_1"): Promise<string> {
  await jobs.create(id, { title: "Hi", user_ids: ["a", "b"] }, "hash", NOW);
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

  it("when every attempt fails, then the job is attempted NOTIFIER_MAX_DELIVERIES times and the last failure marks it failed", async () => {
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

describe("toJobView", () => {
  it("when a job is viewed, then dates become ISO strings, nulls stay null and internals are left out", async () => {
    const jobs = new JobsRepository(new NedbStore(null));
    const { job } = await jobs.create("job_v", { title: "t", user_ids: ["a"], keys: { k: 1 } }, "h", NOW);
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
