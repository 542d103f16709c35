/**
 * Accepting a multicast: validate what the schema cannot (recipient cap, reserved keys, FCM's 4 KB),
 * record the job durably, hand it to the queue, answer. With an Idempotency-Key the job id is derived
 * from the key (per API key), so a retried request finds the job it already made.
 */
import { createHash, randomBytes } from "node:crypto";
import type { MulticastAccepted, SendMulticastParams } from "../../shared/contracts/notifier";
import { ConflictError, RequestValidationError } from "../../shared/errors";
import { checkMessage } from "./message";
import type { JobsRepository } from "./jobs.repository";

export interface AcceptDeps {
  jobs: Pick<JobsRepository, "create">;
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

export async function acceptMulticast(
  deps: AcceptDeps,
  p: SendMulticastParams,
  scope: string,
): Promise<MulticastAccepted> {
  const issues = checkMessage(p);
  if (p.user_ids.length > deps.maxRecipients) {
    issues.push({
      type: "too_long",
      loc: ["user_ids"],
      msg: `List should have at most ${deps.maxRecipients} items after validation, not ${p.user_ids.length}`,
      input: null,
    });
  }
  if (issues.length > 0) throw new RequestValidationError(issues);

  const requestHash = sha256(
    JSON.stringify([p.title, p.desc ?? null, p.picture ?? null, p.keys ?? null, p.user_ids]),
  );
  const { job, created } = await deps.jobs.create(
    jobIdFor(p.idempotency_key, scope),
    p,
    requestHash,
    deps.now(),
  );
  if (!created && job.request_hash !== requestHash) {
    throw new ConflictError("Idempotency-Key was already used with a different request");
  }
  if (created)
    await deps
      .enqueue(job._id)
      .catch((err) => deps.warn("Job recorded but not enqueued; the sweep will", err));
  return { id: job._id, status: job.status, recipients: job.recipients };
}
