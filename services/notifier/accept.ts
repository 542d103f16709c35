/**
 * Accepting a multicast: validate what the schema cannot (recipient cap, reserved keys, FCM's 4 KB),
 * store the recipients in pages, record the job durably, hand it to the queue, answer. With an
 * Idempotency-Key the job id is derived from the key (per API key), so a retried request finds the job
 * it already made: the id is derived from the key's id with it, so another API key sending the same
 * Idempotency-Key makes a job of its own and never meets this one (docs/decisions/0019).
 *
 * A list too long for one packet arrives in pages before the request itself (`stageRecipients`, one
 * acknowledged call each, from the gateway, which checked the whole list against the schema): they are
 * stored as they come, under a recipient set opened for the job the request will make, and the request
 * (`sendMulticast` with `staged`, its `user_ids` the last page) takes the set. docs/decisions/0032.
 */
import { createHash, randomBytes } from "node:crypto";
import type {
  MulticastAccepted,
  SendMulticastCall,
  SendMulticastParams,
  StageRecipientsParams,
  StagedRecipients,
} from "../../shared/contracts/notifier";
import {
  BadRequestError,
  ConflictError,
  RequestValidationError,
  type ValidationIssue,
} from "../../shared/errors";
import { checkMessage } from "./message";
import { jobOfSet, type JobsRepository } from "./jobs.repository";

export interface AcceptDeps {
  jobs: Pick<JobsRepository, "create" | "find" | "openSet" | "stagePage" | "stageAll" | "page" | "dropSet">;
  /** Hands the job to the queue; a failure leaves it queued for the sweep to pick up. */
  enqueue(jobId: string): Promise<void>;
  warn(message: string, err: unknown): void;
  maxRecipients: number;
  now(): Date;
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

export function jobIdFor(idempotencyKey: string | undefined, scope: string): string {
  return idempotencyKey
    ? `job_${sha256(`${scope}\u0000${idempotencyKey}`).slice(0, 24)}`
    : `job_${randomBytes(12).toString("hex")}`;
}

function tooMany(count: number, max: number): ValidationIssue {
  return {
    type: "too_long",
    loc: ["user_ids"],
    msg: `List should have at most ${max} items after validation, not ${count}`,
    input: null,
  };
}

/**
 * The fingerprint of a request, fed the user ids a page at a time: the SHA-256 of
 * `JSON.stringify([title, desc, picture, keys, user_ids])`, whatever the pages (so a job recorded
 * before pages existed still recognises its retried request).
 */
export class RequestHash {
  private readonly hash = createHash("sha256");
  private first = true;

  constructor(p: Pick<SendMulticastParams, "title" | "desc" | "picture" | "keys">) {
    const head = JSON.stringify([p.title, p.desc ?? null, p.picture ?? null, p.keys ?? null]);
    this.hash.update(`${head.slice(0, -1)},[`);
  }

  add(userIds: readonly string[]): this {
    if (userIds.length === 0) return this;
    this.hash.update(`${this.first ? "" : ","}${JSON.stringify(userIds).slice(1, -1)}`);
    this.first = false;
    return this;
  }

  digest(): string {
    this.hash.update("]]");
    return this.hash.digest("hex");
  }
}

/** One staged page: the first opens the set (and checks the declared total against the cap at once). */
export async function stageRecipients(
  deps: Pick<AcceptDeps, "jobs" | "maxRecipients" | "now">,
  p: StageRecipientsParams,
  scope: string,
): Promise<StagedRecipients> {
  if (p.total > deps.maxRecipients) throw new RequestValidationError([tooMany(p.total, deps.maxRecipients)]);
  const setId = p.set_id ?? (await deps.jobs.openSet(jobIdFor(p.idempotency_key, scope), deps.now()));
  await deps.jobs.stagePage(setId, p.index, p.user_ids, deps.now());
  return { set_id: setId };
}

/** The staged pages of a request with its last page: their count and the request's fingerprint. */
async function stagedList(
  deps: Pick<AcceptDeps, "jobs" | "now">,
  p: SendMulticastCall,
  staged: NonNullable<SendMulticastCall["staged"]>,
): Promise<{ count: number; hash: string }> {
  await deps.jobs.stagePage(staged.set_id, staged.pages, p.user_ids, deps.now());
  const hash = new RequestHash(p);
  let count = 0;
  for (let i = 0; i <= staged.pages; i++) {
    const page = await deps.jobs.page(staged.set_id, i);
    if (!page)
      throw new BadRequestError(`Recipients incomplete: page ${i} of ${staged.pages + 1} was not staged`);
    hash.add(page);
    count += page.length;
  }
  return { count, hash: hash.digest() };
}

export async function acceptMulticast(
  deps: AcceptDeps,
  p: SendMulticastCall,
  scope: string,
): Promise<MulticastAccepted> {
  const issues = checkMessage(p);
  const { staged } = p;
  if (!staged && p.user_ids.length > deps.maxRecipients)
    issues.push(tooMany(p.user_ids.length, deps.maxRecipients));
  if (issues.length > 0) {
    // A refused request's staged pages go at once (else the sweep takes them after an hour).
    if (staged) await deps.jobs.dropSet(staged.set_id);
    throw new RequestValidationError(issues);
  }

  // Staged, the set was opened for the job id (from the key, or drawn at random when there is none).
  const id = staged ? jobOfSet(staged.set_id) : jobIdFor(p.idempotency_key, scope);
  if (staged && p.idempotency_key && id !== jobIdFor(p.idempotency_key, scope)) {
    await deps.jobs.dropSet(staged.set_id);
    throw new BadRequestError("Staged recipients belong to another request");
  }
  const list = staged
    ? await stagedList(deps, p, staged)
    : { count: p.user_ids.length, hash: new RequestHash(p).add(p.user_ids).digest() };
  if (list.count > deps.maxRecipients) {
    if (staged) await deps.jobs.dropSet(staged.set_id);
    throw new RequestValidationError([tooMany(list.count, deps.maxRecipients)]);
  }

  // A retried request finds its job before storing the list again.
  let existing = p.idempotency_key ? await deps.jobs.find(id) : null;
  let created = false;
  if (!existing) {
    const set = staged
      ? { setId: staged.set_id, pages: staged.pages + 1 }
      : await deps.jobs.stageAll(id, p.user_ids, deps.now());
    const fields = { title: p.title, desc: p.desc ?? null, picture: p.picture ?? null, keys: p.keys ?? null };
    const made = await deps.jobs.create(
      id,
      fields,
      { ...set, count: list.count },
      list.hash,
      deps.now(),
      scope,
    );
    existing = made.job;
    created = made.created;
    // Two copies of one request raced: the one whose job was recorded first keeps its set.
    if (!created) await deps.jobs.dropSet(set.setId);
  } else if (staged) {
    await deps.jobs.dropSet(staged.set_id);
  }
  const job = existing;
  if (!created && job.request_hash !== list.hash) {
    throw new ConflictError("Idempotency-Key was already used with a different request");
  }
  if (created)
    await deps
      .enqueue(job._id)
      .catch((err) => deps.warn("Job recorded but not enqueued; the sweep will", err));
  return { id: job._id, status: job.status, recipients: job.recipients };
}
