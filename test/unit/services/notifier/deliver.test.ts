/**
 * Delivering a job without a broker: the per-token verdicts, retries with backoff, and deliverJob over a
 * real JobsRepository in an in-memory store with a fake transport (batches, bounded concurrency, exact
 * counts, pruning, redelivery after a crash, stopping mid-job).
 */
import type { DeviceTokensParams, DeviceTokensResult } from "../../../../shared/contracts/users";
import type { SendMulticastParams } from "../../../../shared/contracts/notifier";
import { NedbStore } from "../../../../shared/storage";
import {
  BATCH_SIZE,
  classify,
  deliverJob,
  DEVICE_LOOKUP_USERS,
  sendBatch,
  tokensOf,
  type DeliverDeps,
} from "../../../../services/notifier/deliver";
import { JobsRepository, type BatchDoc, type JobDoc } from "../../../../services/notifier/jobs.repository";
import { RECIPIENT_PAGE_MAX } from "../../../../shared/contracts/notifier";
import type { PushMessage } from "../../../../services/notifier/message";
import type { PushTransport, TokenResult } from "../../../../services/notifier/transport";
import { recordJob } from "../../../support/notifier-jobs";

const NOW = new Date("2032-03-04T05:06:07.000Z");
const LATER = new Date("2032-03-04T05:16:07.000Z");

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * What the fake FCM answers, by the token's kind (its first dash-separated part that names one):
 *   ok-      success
 *   unreg-   registration-token-not-registered        (prune)
 *   invalid- invalid-argument about the token          (prune)
 *   badmsg-  invalid-argument about the message        (failed, kept)
 *   auth-    third-party-auth-error                    (failed, kept)
 *   busy-    server-unavailable the first time, then success
 *   rate-    message-rate-exceeded the first time, then success
 *   down-    internal-error every time
 */
const KINDS = ["ok", "unreg", "invalid", "badmsg", "auth", "busy", "rate", "down"];
const kindOf = (token: string) => token.split("-").find((part) => KINDS.includes(part));

function answer(token: string, hit: number): TokenResult {
  switch (kindOf(token)) {
    case "ok":
      return { success: true };
    case "unreg":
      return {
        success: false,
        code: "messaging/registration-token-not-registered",
        message: "Requested entity was not found.",
      };
    case "invalid":
      return {
        success: false,
        code: "messaging/invalid-argument",
        message: "The registration token is not a valid FCM registration token",
      };
    case "badmsg":
      return {
        success: false,
        code: "messaging/invalid-argument",
        message: "Invalid value at 'message.data[0].value'",
      };
    case "auth":
      return { success: false, code: "messaging/third-party-auth-error", message: "APNs refused" };
    case "busy":
      return hit === 1 ? { success: false, code: "messaging/server-unavailable" } : { success: true };
    case "rate":
      return hit === 1 ? { success: false, code: "messaging/message-rate-exceeded" } : { success: true };
    case "down":
      return { success: false, code: "messaging/internal-error", message: "Internal error" };
    default:
      throw new Error(`unexpected token ${token}`);
  }
}

class FakeTransport implements PushTransport {
  readonly name = "fake";
  readonly calls: string[][] = [];
  readonly messages: PushMessage[] = [];
  /** Pushes FCM answered, per token (a call that throws answers none). */
  readonly hits = new Map<string, number>();
  inFlight = 0;
  maxInFlight = 0;
  delayMs = 2;
  /** Called with the 1-based number of each call: true makes that call throw (a network failure). */
  throwOn: (call: number) => boolean = () => false;
  /** Called after each call answered, with its number. */
  afterCall: (call: number) => void = () => undefined;

  async send(message: PushMessage, tokens: string[]): Promise<TokenResult[]> {
    this.calls.push([...tokens]);
    this.messages.push(message);
    const n = this.calls.length;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.throwOn(n)) throw new Error("socket hang up");
      await delay(this.delayMs);
      const results = tokens.map((t) => {
        const hit = (this.hits.get(t) ?? 0) + 1;
        this.hits.set(t, hit);
        return answer(t, hit);
      });
      this.afterCall(n);
      return results;
    } finally {
      this.inFlight--;
    }
  }

  async close(): Promise<void> {}
}

/** The users service's device directory: tokens per user, answered sorted like users.deviceTokens. */
class FakeDevices {
  readonly pages: number[] = [];
  readonly pruned: string[][] = [];
  constructor(readonly byUser: Map<string, string[]>) {}

  /** Answers like users.deviceTokens: at most `pageTokens` tokens a page, with a cursor. */
  pageTokens = 5000;

  deviceTokens = async ({ user_ids: userIds, after }: DeviceTokensParams): Promise<DeviceTokensResult> => {
    if (after === undefined) this.pages.push(userIds.length);
    const lists = userIds.map((u) => this.byUser.get(u) ?? []).filter((l) => l.length > 0);
    const rest = lists
      .flat()
      .sort()
      .filter((t) => after === undefined || t > after);
    const tokens = rest.slice(0, this.pageTokens);
    const next = tokens.length < rest.length ? tokens[tokens.length - 1] : null;
    return { tokens, users_with_devices: lists.length, next };
  };

  prune = async (tokens: string[]): Promise<number> => {
    this.pruned.push([...tokens]);
    return tokens.length;
  };

  get allPruned(): string[] {
    return this.pruned.flat().sort();
  }
}

interface World {
  store: NedbStore;
  jobs: JobsRepository;
  transport: FakeTransport;
  devices: FakeDevices;
  sleeps: number[];
  deps: DeliverDeps;
  batches(jobId: string): Promise<BatchDoc[]>;
}

function world(byUser: Map<string, string[]>, over: Partial<DeliverDeps> = {}): World {
  const store = new NedbStore(null);
  const jobs = new JobsRepository(store);
  const transport = new FakeTransport();
  const devices = new FakeDevices(byUser);
  const sleeps: number[] = [];
  const deps: DeliverDeps = {
    jobs,
    deviceTokens: devices.deviceTokens,
    prune: devices.prune,
    retention: { jobMs: 3_600_000, batchesMs: 3_600_000, recipientsMs: 3_600_000 },
    transport,
    concurrency: 4,
    maxRetries: 2,
    retryBaseMs: 10,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    now: () => NOW,
    stopping: () => false,
    ...over,
  };
  const batchColl = store.collection<BatchDoc>("notification_batches");
  return {
    store,
    jobs,
    transport,
    devices,
    sleeps,
    deps,
    batches: (jobId) => batchColl.find({ job_id: jobId }, { sort: { index: 1 } }),
  };
}

/** `n` users u0…u(n-1), each with one "ok-" token: `n` tokens, ceil(n / 500) batches. */
function okUsers(n: number): Map<string, string[]> {
  return new Map(Array.from({ length: n }, (_, i) => [`u${i}`, [`ok-${String(i).padStart(6, "0")}`]]));
}

async function createJob(
  jobs: JobsRepository,
  userIds: string[],
  over: Partial<SendMulticastParams> = {},
): Promise<string> {
  const id = `job_${Math.random().toString(16).slice(2)}`;
  await recordJob(jobs, id, { title: "Hello", user_ids: userIds, ...over }, "hash", NOW);
  return id;
}

/** Waits until nothing is in flight at the transport and no call started for `quietMs`. */
async function quiesce(t: FakeTransport, quietMs = 40): Promise<void> {
  for (;;) {
    const calls = t.calls.length;
    await delay(quietMs);
    if (t.inFlight === 0 && t.calls.length === calls) return;
  }
}

describe("classify", () => {
  it.each<[string, TokenResult, ReturnType<typeof classify>]>([
    ["a success", { success: true }, "sent"],
    [
      "registration-token-not-registered",
      { success: false, code: "messaging/registration-token-not-registered" },
      "prune",
    ],
    ["invalid-registration-token", { success: false, code: "messaging/invalid-registration-token" }, "prune"],
    [
      "invalid-argument naming the registration token",
      {
        success: false,
        code: "messaging/invalid-argument",
        message: "The registration token is not a valid FCM registration token",
      },
      "prune",
    ],
    [
      "invalid-argument naming the token in another case",
      { success: false, code: "messaging/invalid-argument", message: "Invalid REGISTRATION TOKEN" },
      "prune",
    ],
    [
      "invalid-argument about the message",
      { success: false, code: "messaging/invalid-argument", message: "Invalid value at 'message.data'" },
      "failed",
    ],
    ["invalid-argument without a message", { success: false, code: "messaging/invalid-argument" }, "failed"],
    ["server-unavailable", { success: false, code: "messaging/server-unavailable" }, "retry"],
    ["internal-error", { success: false, code: "messaging/internal-error" }, "retry"],
    ["message-rate-exceeded", { success: false, code: "messaging/message-rate-exceeded" }, "retry"],
    ["unknown-error", { success: false, code: "messaging/unknown-error" }, "retry"],
    ["third-party-auth-error", { success: false, code: "messaging/third-party-auth-error" }, "failed"],
    ["mismatched-credential", { success: false, code: "messaging/mismatched-credential" }, "failed"],
    ["a failure without a code", { success: false }, "failed"],
  ])("when FCM answers %s, then the verdict is as specified", (_name, result, verdict) => {
    expect(classify(result)).toBe(verdict);
  });
});

describe("sendBatch", () => {
  const message: PushMessage = { notification: { title: "t" } };

  afterEach(() => jest.restoreAllMocks());

  it("when every token succeeds, then one call sends them all and nothing sleeps", async () => {
    const w = world(new Map());
    const tokens = ["ok-1", "ok-2", "ok-3"];
    await expect(sendBatch(w.deps, message, tokens)).resolves.toEqual({ sent: 3, failed: 0, prune: [] });
    expect(w.transport.calls).toEqual([tokens]);
    expect(w.sleeps).toEqual([]);
  });

  it("when some tokens are retriable, then only those are sent again, with doubling backoff, until the bound", async () => {
    jest.spyOn(Math, "random").mockReturnValue(0); // jitter factor 0.5
    const w = world(new Map(), { maxRetries: 3, retryBaseMs: 100 });
    const tokens = ["ok-1", "busy-1", "unreg-1", "down-1", "auth-1", "rate-1", "invalid-1", "badmsg-1"];
    const result = await sendBatch(w.deps, message, tokens);
    expect(w.transport.calls).toEqual([tokens, ["busy-1", "down-1", "rate-1"], ["down-1"], ["down-1"]]);
    expect(w.sleeps).toEqual([50, 100, 200]);
    expect(result).toEqual({
      sent: 3, // ok, busy and rate on their second try
      failed: 5, // down after the last retry, auth, badmsg, and the two pruned
      prune: ["unreg-1", "invalid-1"],
    });
    expect(result.sent + result.failed).toBe(tokens.length);
  });

  it("when retries are due, then each pause lies within the jittered exponential window", async () => {
    const w = world(new Map(), { maxRetries: 5, retryBaseMs: 40 });
    await sendBatch(w.deps, message, ["down-1"]);
    expect(w.sleeps).toHaveLength(5);
    w.sleeps.forEach((ms, attempt) => {
      expect(ms).toBeGreaterThanOrEqual(40 * 2 ** attempt * 0.5);
      expect(ms).toBeLessThanOrEqual(40 * 2 ** attempt);
    });
    expect(w.transport.calls).toHaveLength(6);
  });

  it("when maxRetries is 0, then retriable tokens are failed after the first call without sleeping", async () => {
    const w = world(new Map(), { maxRetries: 0 });
    await expect(sendBatch(w.deps, message, ["busy-1", "ok-1"])).resolves.toEqual({
      sent: 1,
      failed: 1,
      prune: [],
    });
    expect(w.transport.calls).toHaveLength(1);
    expect(w.sleeps).toEqual([]);
  });

  it("when a retried token succeeds, then the next retry round stops and it counts as sent", async () => {
    const w = world(new Map(), { maxRetries: 5 });
    await expect(sendBatch(w.deps, message, ["busy-1", "rate-1"])).resolves.toEqual({
      sent: 2,
      failed: 0,
      prune: [],
    });
    expect(w.transport.calls).toEqual([
      ["busy-1", "rate-1"],
      ["busy-1", "rate-1"],
    ]);
    expect(w.sleeps).toHaveLength(1);
  });
});

describe("deliverJob", () => {
  /**
   * 1,400 users; u0…u1299 have a device, every tenth of them a second "ok" one; the first device's
   * kind depends on the user, so every batch has some of each: 1,430 tokens in three batches (500, 500,
   * 430), 100 users without devices.
   */
  function mixedDirectory(): { byUser: Map<string, string[]>; userIds: string[] } {
    const kinds = ["unreg", "invalid", "badmsg", "busy", "down"];
    const byUser = new Map<string, string[]>();
    const userIds: string[] = [];
    for (let i = 0; i < 1400; i++) {
      const user = `u${i}`;
      userIds.push(user);
      if (i >= 1300) continue;
      const kind = i % 50 < kinds.length ? kinds[i % 50] : "ok";
      const tokens = [`t${String(i).padStart(5, "0")}-${kind}-a`];
      if (i % 10 === 0) tokens.push(`t${String(i).padStart(5, "0")}-ok-b`);
      byUser.set(user, tokens);
    }
    return { byUser, userIds };
  }

  it("when a job is delivered, then batches hold at most 500 tokens and the counts are exact", async () => {
    const { byUser, userIds } = mixedDirectory();
    const w = world(byUser, { maxRetries: 2 });
    const jobId = await createJob(w.jobs, userIds, { desc: "World", keys: { n: 1, on: true } });

    await deliverJob(w.deps, jobId);

    const tokens = [...byUser.values()].flat();
    const ofKind = (k: string) => tokens.filter((t) => kindOf(t) === k);
    expect(tokens).toHaveLength(1430);

    const batches = await w.batches(jobId);
    expect(batches.map((b) => b.tokens.length)).toEqual([500, 500, 430]);
    expect(batches.every((b) => b.status === "done")).toBe(true);
    expect(batches.flatMap((b) => b.tokens)).toEqual([...tokens].sort());
    expect(w.transport.calls.every((c) => c.length <= BATCH_SIZE)).toBe(true);

    const dead = [...ofKind("unreg"), ...ofKind("invalid")].sort();
    const job = await w.jobs.find(jobId);
    expect(job).toMatchObject({
      status: "done",
      planned: true,
      deliveries: 1,
      recipients: 1400,
      devices: 1430,
      users_without_devices: 100,
      sent: ofKind("ok").length + ofKind("busy").length,
      failed: dead.length + ofKind("badmsg").length + ofKind("down").length,
      pruned: dead.length,
      started_at: NOW,
      finished_at: NOW,
      error: null,
    });
    expect(job!.sent + job!.failed).toBe(job!.devices);
    expect(w.devices.allPruned).toEqual(dead);
    // The batches' own counts add up to the job's.
    expect(batches.reduce((n, b) => n + b.sent, 0)).toBe(job!.sent);
    expect(batches.reduce((n, b) => n + b.pruned, 0)).toBe(job!.pruned);
  });

  it("when a job is delivered, then every push carries the job's message with string data", async () => {
    const w = world(okUsers(3));
    const jobId = await createJob(w.jobs, ["u0", "u1", "u2"], {
      desc: "World",
      picture: "https://cdn.example/p.png",
      keys: { n: 1, on: true, s: "x" },
    });
    await deliverJob(w.deps, jobId);
    expect(w.transport.messages).toEqual([
      {
        notification: { title: "Hello", body: "World", imageUrl: "https://cdn.example/p.png" },
        data: { n: "1", on: "true", s: "x" },
      },
    ]);
  });

  it("when tokens fail with retriable errors, then only those tokens are resent, each retry through sleep", async () => {
    const { byUser, userIds } = mixedDirectory();
    const w = world(byUser, { maxRetries: 2 });
    const jobId = await createJob(w.jobs, userIds);
    await deliverJob(w.deps, jobId);

    const seen = new Set<string>();
    const retryCalls: string[][] = [];
    for (const call of w.transport.calls) {
      if (call.some((t) => seen.has(t))) retryCalls.push(call);
      call.forEach((t) => seen.add(t));
    }
    // Three batches, each retried twice (busy once, down until the bound).
    expect(w.transport.calls).toHaveLength(3 + retryCalls.length);
    expect(retryCalls).toHaveLength(6);
    for (const call of retryCalls) expect(call.every((t) => /-(busy|down)-/.test(t))).toBe(true);
    expect(w.sleeps).toHaveLength(6);
    for (const [token, hits] of w.transport.hits) {
      const expected = kindOf(token) === "down" ? 3 : kindOf(token) === "busy" ? 2 : 1;
      expect([token, hits]).toEqual([token, expected]);
    }
  });

  it.each([1, 3])(
    "when concurrency is %i, then exactly that many sends are in flight at the peak",
    async (concurrency) => {
      const w = world(okUsers(8 * BATCH_SIZE), { concurrency });
      w.transport.delayMs = 10;
      const jobId = await createJob(w.jobs, [...okUsers(8 * BATCH_SIZE).keys()]);
      await deliverJob(w.deps, jobId);
      expect(w.transport.calls).toHaveLength(8);
      expect(w.transport.maxInFlight).toBe(concurrency);
      expect(await w.jobs.find(jobId)).toMatchObject({ status: "done", sent: 8 * BATCH_SIZE, failed: 0 });
    },
  );

  it("when concurrency exceeds the number of batches, then each batch is sent once", async () => {
    const w = world(okUsers(700), { concurrency: 16 });
    const jobId = await createJob(w.jobs, [...okUsers(700).keys()]);
    await deliverJob(w.deps, jobId);
    expect(w.transport.calls.map((c) => c.length)).toEqual([500, 200]);
    expect(w.transport.maxInFlight).toBe(2);
  });

  it("when there are more recipients than one device-token page, then every user is looked up in bounded pages", async () => {
    const users = okUsers(12_000);
    // Only every other user has a device.
    for (let i = 1; i < 12_000; i += 2) users.delete(`u${i}`);
    const userIds = Array.from({ length: 12_000 }, (_, i) => `u${i}`);
    const w = world(users);
    const jobId = await createJob(w.jobs, userIds);
    await deliverJob(w.deps, jobId);
    expect(w.devices.pages.reduce((a, b) => a + b, 0)).toBe(12_000);
    expect(Math.max(...w.devices.pages)).toBeLessThanOrEqual(DEVICE_LOOKUP_USERS);
    expect(await w.jobs.find(jobId)).toMatchObject({
      status: "done",
      devices: 6000,
      users_without_devices: 6000,
      sent: 6000,
    });
  });

  it("when no recipient has a device, then nothing is sent and the job is done with zero devices", async () => {
    const w = world(new Map());
    const jobId = await createJob(w.jobs, ["a", "b", "c"]);
    await deliverJob(w.deps, jobId);
    expect(w.transport.calls).toEqual([]);
    expect(await w.jobs.find(jobId)).toMatchObject({
      status: "done",
      devices: 0,
      users_without_devices: 3,
      sent: 0,
      failed: 0,
      pruned: 0,
      finished_at: NOW,
    });
  });

  it("when the job is done already or unknown, then nothing is sent and the job is untouched", async () => {
    const w = world(okUsers(2));
    const jobId = await createJob(w.jobs, ["u0", "u1"]);
    await deliverJob(w.deps, jobId);
    const done = await w.jobs.find(jobId);
    const calls = w.transport.calls.length;

    await deliverJob({ ...w.deps, now: () => LATER }, jobId);
    await deliverJob(w.deps, "job_unknown");
    expect(w.transport.calls).toHaveLength(calls);
    expect(await w.jobs.find(jobId)).toEqual(done);
  });

  it("when the transport throws on the third batch and the job is delivered again, then no batch recorded as done is resent", async () => {
    const tokensCount = 4 * BATCH_SIZE + 100; // five batches
    const users = okUsers(tokensCount);
    const w = world(users, { concurrency: 1 });
    const jobId = await createJob(w.jobs, [...users.keys()]);
    w.transport.throwOn = (n) => n === 3;

    await expect(deliverJob(w.deps, jobId)).rejects.toThrow("socket hang up");
    expect((await w.jobs.pendingBatches(jobId)).map((b) => b.index)).toEqual([2, 3, 4]);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "sending", finished_at: null, sent: 1000 });

    w.transport.throwOn = () => false;
    const callsBefore = w.transport.calls.length;
    await deliverJob({ ...w.deps, now: () => LATER }, jobId);

    const batches = await w.batches(jobId);
    expect(w.transport.calls.slice(callsBefore)).toEqual([
      batches[2].tokens,
      batches[3].tokens,
      batches[4].tokens,
    ]);
    expect(w.transport.hits.size).toBe(tokensCount);
    for (const [token, hits] of w.transport.hits) expect([token, hits]).toEqual([token, 1]);
    expect(await w.jobs.find(jobId)).toMatchObject({
      status: "done",
      deliveries: 2,
      devices: tokensCount,
      sent: tokensCount,
      failed: 0,
      started_at: NOW,
      finished_at: LATER,
    });
  });

  // Source bug: inPool uses Promise.all, so when one batch throws, deliverJob rejects at once while the
  // other workers keep sending, and keep taking new batches. A redelivery (the local queue's retry or
  // JetStream's) then sends the batches those orphans have in hand a second time. See the report.
  it("when one batch throws while others are in flight, then deliverJob settles after them and a redelivery sends no token twice", async () => {
    const users = okUsers(6 * BATCH_SIZE);
    const w = world(users, { concurrency: 3 });
    w.transport.delayMs = 20;
    const jobId = await createJob(w.jobs, [...users.keys()]);
    w.transport.throwOn = (n) => n === 1;

    let inFlightAtRejection = -1;
    await deliverJob(w.deps, jobId).catch(() => {
      inFlightAtRejection = w.transport.inFlight;
    });
    const callsAtRejection = w.transport.calls.length;
    w.transport.throwOn = () => false;
    await deliverJob(w.deps, jobId); // redelivered at once
    await quiesce(w.transport);

    for (const [token, hits] of w.transport.hits) expect([token, hits]).toEqual([token, 1]);
    expect(inFlightAtRejection).toBe(0);
    expect(callsAtRejection).toBe(3);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "done", sent: 6 * BATCH_SIZE });
  });

  it("when stopping turns true mid-job, then no further batch starts and a later run finishes the job", async () => {
    const users = okUsers(4 * BATCH_SIZE);
    let stopping = false;
    const w = world(users, { concurrency: 1, stopping: () => stopping });
    w.transport.afterCall = (n) => {
      if (n === 2) stopping = true;
    };
    const jobId = await createJob(w.jobs, [...users.keys()]);

    await deliverJob(w.deps, jobId);
    expect(w.transport.calls).toHaveLength(2);
    expect((await w.jobs.pendingBatches(jobId)).map((b) => b.index)).toEqual([2, 3]);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "sending", finished_at: null, sent: 1000 });

    stopping = false;
    await deliverJob({ ...w.deps, now: () => LATER }, jobId);
    expect(w.transport.calls).toHaveLength(4);
    for (const [token, hits] of w.transport.hits) expect([token, hits]).toEqual([token, 1]);
    expect(await w.jobs.find(jobId)).toMatchObject({
      status: "done",
      deliveries: 2,
      sent: 4 * BATCH_SIZE,
      finished_at: LATER,
    });
  });

  it("when stopping is true from the start, then nothing is sent and the job stays unfinished but planned", async () => {
    const w = world(okUsers(10), { stopping: () => true });
    const jobId = await createJob(w.jobs, [...okUsers(10).keys()]);
    await deliverJob(w.deps, jobId);
    expect(w.transport.calls).toEqual([]);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "sending", planned: true, finished_at: null });
    expect(await w.jobs.unfinished()).toEqual([expect.objectContaining({ _id: jobId })]);
  });

  it("when a redelivery finds the job planned, then the devices are not looked up again", async () => {
    const users = okUsers(2 * BATCH_SIZE);
    let stopping = false;
    const w = world(users, { concurrency: 1, stopping: () => stopping });
    w.transport.afterCall = (n) => {
      if (n === 1) stopping = true;
    };
    const jobId = await createJob(w.jobs, [...users.keys()]);
    await deliverJob(w.deps, jobId);
    const lookups = w.devices.pages.length;
    // A device added meanwhile does not join the job: its batches were fixed at planning.
    users.set("u0", ["ok-000000", "ok-late"]);
    stopping = false;
    await deliverJob(w.deps, jobId);
    expect(w.devices.pages).toHaveLength(lookups);
    expect(w.transport.hits.has("ok-late")).toBe(false);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "done", devices: 1000, sent: 1000 });
  });

  it("when the recipients span several pages, then each page is planned in its turn, in bounded lookups, and the job counts them all", async () => {
    const users = okUsers(2 * RECIPIENT_PAGE_MAX + 500);
    users.delete("u7"); // one user without a device
    const ids = Array.from({ length: 2 * RECIPIENT_PAGE_MAX + 500 }, (_, i) => `u${i}`);
    const w = world(users);
    const jobId = await createJob(w.jobs, ids);
    await deliverJob(w.deps, jobId);
    expect(Math.max(...w.devices.pages)).toBeLessThanOrEqual(DEVICE_LOOKUP_USERS);
    const batches = await w.batches(jobId);
    expect(new Set(batches.map((b) => b.page))).toEqual(new Set([0, 1, 2]));
    expect(batches.every((b) => b.tokens.length <= BATCH_SIZE && b.status === "done")).toBe(true);
    expect(await w.jobs.find(jobId)).toMatchObject({
      status: "done",
      planned: true,
      planned_pages: 3,
      recipients: ids.length,
      devices: ids.length - 1,
      users_without_devices: 1,
      sent: ids.length - 1,
    });
    for (const [token, hits] of w.transport.hits) expect([token, hits]).toEqual([token, 1]);
  });

  it("when a stop comes after the first page, then the next delivery goes on from the second page and looks up no planned page again", async () => {
    const ids = Array.from({ length: RECIPIENT_PAGE_MAX + 300 }, (_, i) => `u${i}`);
    const users = okUsers(ids.length);
    let stopping = false;
    const w = world(users, { concurrency: 1, stopping: () => stopping });
    w.transport.afterCall = (n) => {
      if (n === RECIPIENT_PAGE_MAX / BATCH_SIZE) stopping = true; // the first page's last batch
    };
    const jobId = await createJob(w.jobs, ids);
    await deliverJob(w.deps, jobId);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "sending", planned_pages: 1, planned: false });
    const lookups = w.devices.pages.length;

    stopping = false;
    await deliverJob({ ...w.deps, now: () => LATER }, jobId);
    expect(w.devices.pages.slice(lookups).reduce((a, b) => a + b, 0)).toBe(300);
    expect(w.transport.hits.size).toBe(ids.length);
    for (const [token, hits] of w.transport.hits) expect([token, hits]).toEqual([token, 1]);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "done", sent: ids.length, planned: true });
  });

  it("when the users service answers a lookup in several pages, then every token is collected once, sorted", async () => {
    const users = okUsers(50);
    users.set("u3", ["ok-x1", "ok-x2", "ok-x3"]);
    const w = world(users);
    w.devices.pageTokens = 7;
    const { tokens, usersWithDevices } = await tokensOf(w.devices.deviceTokens, [...users.keys()]);
    expect(usersWithDevices).toBe(50);
    expect(tokens).toEqual([...users.values()].flat().sort());
  });

  it("when a job was planned whole before pages existed, then its pending batches are sent as they are and it finishes", async () => {
    const w = world(new Map());
    const jobId = await createJob(w.jobs, ["a", "b", "c"]);
    const jobs = w.store.collection<JobDoc>("notification_jobs");
    await jobs.updateOne(
      { _id: jobId },
      { $set: { planned: true, devices: 3 }, $unset: { planned_pages: 1, recipient_pages: 1 } },
    );
    const batches = w.store.collection<BatchDoc>("notification_batches");
    await batches.insertMany([
      {
        _id: `${jobId}:0`,
        job_id: jobId,
        index: 0,
        tokens: ["ok-1", "ok-2"],
        status: "done",
        sent: 2,
        failed: 0,
        pruned: 0,
      },
      {
        _id: `${jobId}:1`,
        job_id: jobId,
        index: 1,
        tokens: ["ok-3"],
        status: "pending",
        sent: 0,
        failed: 0,
        pruned: 0,
      },
    ]);
    await deliverJob(w.deps, jobId);
    expect(w.transport.calls).toEqual([["ok-3"]]);
    expect(w.devices.pages).toEqual([]);
    expect(await w.jobs.find(jobId)).toMatchObject({ status: "done", devices: 3, sent: 3 });
  });
});
