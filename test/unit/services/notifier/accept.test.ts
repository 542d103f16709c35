/**
 * Accepting a multicast without a broker: the recipient cap, idempotency keys (per API key scope), the
 * 409 on a reused key, a job that stays accepted when the queue refuses it, and a list staged in pages
 * ahead of its request.
 */
import type { SendMulticastParams } from "../../../../shared/contracts/notifier";
import { BadRequestError, ConflictError, ErrorType, RequestValidationError } from "../../../../shared/errors";
import { NedbStore } from "../../../../shared/storage";
import { createHash } from "node:crypto";
import {
  acceptMulticast,
  jobIdFor,
  RequestHash,
  stageRecipients,
  type AcceptDeps,
} from "../../../../services/notifier/accept";
import { JobsRepository } from "../../../../services/notifier/jobs.repository";

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
      key_pairs: [
        ["screen", "home"],
        ["n", 1],
      ],
      created_by: "scope-a",
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
    jest.spyOn(h.jobs, "create").mockRejectedValue(failure);
    await expect(acceptMulticast(h.deps, request(), "s")).rejects.toBe(failure);
    expect(h.enqueued).toEqual([]);
  });
});

describe("RequestHash", () => {
  const message = { title: "T", desc: "D", picture: null, keys: { a: 1 } };
  const whole = (ids: string[]) =>
    createHash("sha256")
      .update(JSON.stringify([message.title, message.desc, message.picture, message.keys, ids]))
      .digest("hex");

  it("when the ids come in pages of any cut, then the hash is that of the whole request's JSON", () => {
    const ids = ["a", 'q"uote', "ü", "d", "e"];
    expect(new RequestHash(message).add(ids).digest()).toBe(whole(ids));
    expect(new RequestHash(message).add(ids.slice(0, 2)).add([]).add(ids.slice(2)).digest()).toBe(whole(ids));
    expect(new RequestHash(message).add(["a"]).add(["b"]).digest()).not.toBe(whole(["ab"]));
  });
});

describe("a list staged in pages", () => {
  const ids = Array.from({ length: 7 }, (_, i) => `u${i}`);
  const pages = [ids.slice(0, 3), ids.slice(3, 6), ids.slice(6)];

  /** Stages every page but the last, as the gateway does; resolves to the set's id. */
  async function stageAllButLast(h: Harness, key: string | undefined, scope = "s", total = ids.length) {
    let setId: string | undefined;
    for (let index = 0; index < pages.length - 1; index++) {
      const opened = await stageRecipients(
        h.deps,
        {
          ...(setId ? { set_id: setId } : key ? { idempotency_key: key } : {}),
          total,
          index,
          user_ids: pages[index],
        },
        scope,
      );
      setId = opened.set_id;
    }
    return setId!;
  }

  const stagedRequest = (setId: string, over: Partial<SendMulticastParams> = {}) => ({
    ...request({ user_ids: pages[2], ...over }),
    staged: { set_id: setId, pages: 2 },
  });

  it("when pages are staged and the request names them, then the job has every id in order and the same hash as one call would give", async () => {
    const h = harness({ maxRecipients: 10 });
    const setId = await stageAllButLast(h, "k");
    expect(setId.startsWith(`${jobIdFor("k", "s")}.`)).toBe(true);
    const accepted = await acceptMulticast(h.deps, stagedRequest(setId, { idempotency_key: "k" }), "s");
    expect(accepted).toEqual({ id: jobIdFor("k", "s"), status: "queued", recipients: 7 });
    await expect(h.jobs.recipientsOf(accepted.id)).resolves.toEqual(ids);
    expect(h.enqueued).toEqual([accepted.id]);
    // The same request retried in one call is recognised (same fingerprint): no 409, no second job.
    await expect(
      acceptMulticast(h.deps, request({ user_ids: ids, idempotency_key: "k" }), "s"),
    ).resolves.toEqual(accepted);
    expect(h.enqueued).toHaveLength(1);
  });

  it("when a staged request is retried with its key, then the first job answers and the retry's copy of the list is dropped", async () => {
    const h = harness({ maxRecipients: 10 });
    const first = await acceptMulticast(
      h.deps,
      stagedRequest(await stageAllButLast(h, "k"), { idempotency_key: "k" }),
      "s",
    );
    const retrySet = await stageAllButLast(h, "k");
    const again = await acceptMulticast(h.deps, stagedRequest(retrySet, { idempotency_key: "k" }), "s");
    expect(again).toEqual(first);
    await expect(h.jobs.page(retrySet, 0)).resolves.toBeNull();
    const changed = await stageAllButLast(h, "k");
    const err = await rejection(
      acceptMulticast(h.deps, stagedRequest(changed, { idempotency_key: "k", title: "Other" }), "s"),
    );
    expect(err).toBeInstanceOf(ConflictError);
  });

  it("when the declared total passes the cap, then the first page is refused with the cap's 422 and nothing is stored", async () => {
    const h = harness({ maxRecipients: 5 });
    const err = await rejection(stageRecipients(h.deps, { total: 7, index: 0, user_ids: pages[0] }, "s"));
    expect((err as RequestValidationError).data).toEqual([
      expect.objectContaining({
        type: "too_long",
        loc: ["user_ids"],
        msg: expect.stringContaining("at most 5 items"),
      }),
    ]);
  });

  it("when the staged pages hold more ids than declared and pass the cap, then 422 and the set is dropped", async () => {
    const h = harness({ maxRecipients: 6 });
    const setId = await stageAllButLast(h, undefined, "s", 6);
    const err = await rejection(acceptMulticast(h.deps, stagedRequest(setId), "s"));
    expect((err as RequestValidationError).data).toEqual([expect.objectContaining({ type: "too_long" })]);
    await expect(h.jobs.page(setId, 0)).resolves.toBeNull();
    expect(h.enqueued).toEqual([]);
  });

  it("when a staged page is missing, then the request is refused and no job is made", async () => {
    const h = harness({ maxRecipients: 10 });
    const setId = (await stageRecipients(h.deps, { total: 7, index: 0, user_ids: pages[0] }, "s")).set_id;
    const err = await rejection(acceptMulticast(h.deps, stagedRequest(setId), "s"));
    expect(err).toBeInstanceOf(BadRequestError);
    expect(await h.jobs.find(setId.split(".")[0])).toBeNull();
  });

  it("when the request's key names another job than the one the set was opened for, then it is refused", async () => {
    const h = harness({ maxRecipients: 10 });
    const setId = await stageAllButLast(h, "k1");
    const err = await rejection(
      acceptMulticast(h.deps, stagedRequest(setId, { idempotency_key: "k2" }), "s"),
    );
    expect(err).toBeInstanceOf(BadRequestError);
    expect(h.enqueued).toEqual([]);
  });
});
