/**
 * Accepting a multicast without a broker: the recipient cap, idempotency keys (per API key scope), the
 * 409 on a reused key, and a job that stays accepted when the queue refuses it.
 */
import type { SendMulticastParams } from "../../shared/contracts/notifier";
import { ConflictError, ErrorType, RequestValidationError } from "../../shared/errors";
import { NedbStore } from "../../shared/storage";
import { acceptMulticast, jobIdFor, type AcceptDeps } from "../../services/notifier/accept";
import { JobsRepository } from "../../services/notifier/jobs.repository";

const NOW = new Date("2031-01-02T03:04:05.000Z");

interface Harness {
  deps: AcceptDeps;
  jobs: JobsRepository;
  enqueued: string[];
  warnings: { message: string; err: unknown }[];
}

function harness(overrides: Partial<AcceptDeps> = {}): Harness {
  const jobs = new JobsRepository(new NedbStore(null));
  const enqueued: string[] = [];
  const warnings: { message: string; err: unknown }[] = [];
  const deps: AcceptDeps = {
    jobs,
    enqueue: async (id) => {
      enqueued.push(id);
    },
    warn: (message, err) => warnings.push({ message, err }),
    maxRecipients: 5,
    now: () => NOW,
    ...overrides,
  };
  return { deps, jobs, enqueued, warnings };
}

const request = (over: Partial<SendMulticastParams> = {}): SendMulticastParams => ({
  title: "Hello",
  desc: "World",
  user_ids: ["u1", "u2", "u3"],
  keys: { screen: "home", n: 1 },
  ...over,
});

/** The error `promise` rejects with, or a failed test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

describe("jobIdFor", () => {
  it("when the same key and scope are given twice, then the same job id comes back", () => {
    expect(jobIdFor("key-1", "scope-a")).toBe(jobIdFor("key-1", "scope-a"));
    expect(jobIdFor("key-1", "scope-a")).toMatch(/^job_[0-9a-f]{24}$/);
  });

  it("when the scopes or the keys differ, then the ids differ", () => {
    const ids = new Set([
      jobIdFor("key-1", "scope-a"),
      jobIdFor("key-1", "scope-b"),
      jobIdFor("key-2", "scope-a"),
      // The separator keeps "ab"+"c" apart from "a"+"bc".
      jobIdFor("c", "ab"),
      jobIdFor("bc", "a"),
    ]);
    expect(ids.size).toBe(5);
  });

  it("when there is no key, then every call makes a fresh random id", () => {
    const a = jobIdFor(undefined, "scope-a");
    const b = jobIdFor(undefined, "scope-a");
    expect(a).toMatch(/^job_[0-9a-f]{24}$/);
    expect(a).not.toBe(b);
  });
});

describe("acceptMulticast", () => {
  it("when a valid request arrives, then the job is recorded queued, enqueued once and answered", async () => {
    const h = harness();
    const accepted = await acceptMulticast(h.deps, request(), "scope-a");
    expect(accepted).toEqual({ id: expect.stringMatching(/^job_/), status: "queued", recipients: 3 });
    expect(h.enqueued).toEqual([accepted.id]);
    const job = await h.jobs.find(accepted.id);
    expect(job).toMatchObject({
      status: "queued",
      title: "Hello",
      desc: "World",
      picture: null,
      keys: { screen: "home", n: 1 },
      recipients: 3,
      deliveries: 0,
      planned: false,
      created_at: NOW,
    });
    await expect(h.jobs.recipientsOf(accepted.id)).resolves.toEqual(["u1", "u2", "u3"]);
    expect(h.warnings).toEqual([]);
  });

  it("when the recipients are exactly at the cap, then the request is accepted", async () => {
    const h = harness({ maxRecipients: 3 });
    await expect(acceptMulticast(h.deps, request(), "s")).resolves.toMatchObject({ recipients: 3 });
  });

  it("when the recipients exceed the cap, then a 422 too_long at user_ids is thrown and nothing is recorded", async () => {
    const h = harness({ maxRecipients: 2 });
    const err = await rejection(acceptMulticast(h.deps, request({ idempotency_key: "k" }), "s"));
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err).toMatchObject({ code: 422, type: ErrorType.VALIDATION });
    expect((err as RequestValidationError).data).toEqual([
      {
        type: "too_long",
        loc: ["user_ids"],
        msg: "List should have at most 2 items after validation, not 3",
        input: null,
      },
    ]);
    expect(h.enqueued).toEqual([]);
    expect(await h.jobs.find(jobIdFor("k", "s"))).toBeNull();
  });

  it("when a reserved key and too many recipients come together, then both issues are in one 422", async () => {
    const h = harness({ maxRecipients: 1 });
    const err = await rejection(acceptMulticast(h.deps, request({ keys: { from: "x" } }), "s"));
    expect((err as RequestValidationError).data).toEqual([
      expect.objectContaining({ loc: ["keys", "from"] }),
      expect.objectContaining({ type: "too_long", loc: ["user_ids"] }),
    ]);
    expect(h.enqueued).toEqual([]);
  });

  it("when the same Idempotency-Key and scope are sent twice, then the same job comes back and it is enqueued once", async () => {
    const h = harness();
    const first = await acceptMulticast(h.deps, request({ idempotency_key: "retry-me" }), "scope-a");
    const second = await acceptMulticast(h.deps, request({ idempotency_key: "retry-me" }), "scope-a");
    expect(first.id).toBe(jobIdFor("retry-me", "scope-a"));
    expect(second).toEqual(first);
    expect(h.enqueued).toEqual([first.id]);
  });

  it("when a retried request finds its job already progressed, then the answer reports the job's current status", async () => {
    const h = harness();
    const first = await acceptMulticast(h.deps, request({ idempotency_key: "k" }), "s");
    await h.jobs.startDelivery(first.id, NOW);
    const second = await acceptMulticast(h.deps, request({ idempotency_key: "k" }), "s");
    expect(second).toEqual({ id: first.id, status: "sending", recipients: 3 });
    expect(h.enqueued).toHaveLength(1);
  });

  it("when the same Idempotency-Key comes with a different body, then a 409 ConflictError is thrown", async () => {
    const h = harness();
    const first = await acceptMulticast(h.deps, request({ idempotency_key: "k" }), "s");
    for (const changed of [
      request({ idempotency_key: "k", title: "Other" }),
      request({ idempotency_key: "k", desc: null }),
      request({ idempotency_key: "k", keys: { screen: "home", n: 2 } }),
      request({ idempotency_key: "k", user_ids: ["u1", "u2"] }),
      request({ idempotency_key: "k", picture: "https://x.example/p.png" }),
    ]) {
      const err = await rejection(acceptMulticast(h.deps, changed, "s"));
      expect(err).toBeInstanceOf(ConflictError);
      expect(err).toMatchObject({ code: 409, type: ErrorType.CONFLICT });
    }
    expect(h.enqueued).toEqual([first.id]);
    expect((await h.jobs.find(first.id))?.title).toBe("Hello");
  });

  it("when two API keys use the same Idempotency-Key, then each gets its own job", async () => {
    const h = harness();
    const a = await acceptMulticast(h.deps, request({ idempotency_key: "shared" }), "key-a");
    const b = await acceptMulticast(
      h.deps,
      request({ idempotency_key: "shared", title: "Different" }),
      "key-b",
    );
    expect(a.id).not.toBe(b.id);
    expect(h.enqueued).toEqual([a.id, b.id]);
    expect((await h.jobs.find(b.id))?.title).toBe("Different");
  });

  it("when no Idempotency-Key is given, then identical requests make two jobs", async () => {
    const h = harness();
    const a = await acceptMulticast(h.deps, request(), "s");
    const b = await acceptMulticast(h.deps, request(), "s");
    expect(a.id).not.toBe(b.id);
    expect(h.enqueued).toEqual([a.id, b.id]);
  });

  it("when enqueueing fails, then the job is still recorded and accepted, and a warning is logged", async () => {
    const failure = new Error("channel unavailable");
    const h = harness({ enqueue: () => Promise.reject(failure) });
    const accepted = await acceptMulticast(h.deps, request(), "s");
    expect(accepted).toMatchObject({ status: "queued", recipients: 3 });
    expect(await h.jobs.find(accepted.id)).toMatchObject({ status: "queued" });
    expect(h.warnings).toEqual([{ message: expect.stringContaining("not enqueued"), err: failure }]);
  });

  it("when recording the job fails, then the error propagates and nothing is enqueued", async () => {
    const h = harness();
    const failure = new Error("store down");
    h.deps.jobs = { create: () => Promise.reject(failure) };
    await expect(acceptMulticast(h.deps, request(), "s")).rejects.toBe(failure);
    expect(h.enqueued).toEqual([]);
  });
});
