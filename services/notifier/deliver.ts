/**
 * Delivering a job: plan its token batches once (≤ 500 tokens each, fixed from then on), send the pending
 * ones with a bounded number in flight, retry what FCM says may succeed later, prune what it says is
 * dead, record each batch as done in one conditional update, then finish the job from the batches. A
 * job delivered again after a crash resends nothing already recorded as sent.
 */
import type { DeviceTokensResult } from "../../shared/contracts/users";
import { buildMessage, type PushMessage } from "./message";
import type { BatchDoc, JobDoc, JobsRepository } from "./jobs.repository";
import type { PushTransport, TokenResult } from "./transport";

export const BATCH_SIZE = 500;
const USER_PAGE = 5000;

export interface DeliverDeps {
  jobs: Pick<
    JobsRepository,
    "startDelivery" | "plan" | "pendingBatches" | "completeBatch" | "finish" | "find" | "recipientsOf"
  >;
  deviceTokens(userIds: string[]): Promise<DeviceTokensResult>;
  prune(tokens: string[]): Promise<number>;
  transport: PushTransport;
  concurrency: number;
  maxRetries: number;
  retryBaseMs: number;
  sleep(ms: number): Promise<void>;
  now(): Date;
  /** True when the service is stopping: no new batch is started, the job stays unfinished and resumes. */
  stopping(): boolean;
}

const RETRIABLE = new Set([
  "messaging/server-unavailable",
  "messaging/internal-error",
  "messaging/message-rate-exceeded",
  "messaging/unknown-error",
]);

/** `invalid-argument` is about the token only when FCM says so; otherwise the message is at fault. */
export function classify(r: TokenResult): "sent" | "prune" | "retry" | "failed" {
  if (r.success) return "sent";
  if (r.code === "messaging/registration-token-not-registered") return "prune";
  if (r.code === "messaging/invalid-registration-token") return "prune";
  if (r.code === "messaging/invalid-argument" && /registration token/i.test(r.message ?? "")) return "prune";
  if (r.code && RETRIABLE.has(r.code)) return "retry";
  return "failed";
}

export async function sendBatch(
  deps: Pick<DeliverDeps, "transport" | "maxRetries" | "retryBaseMs" | "sleep">,
  message: PushMessage,
  tokens: string[],
): Promise<{ sent: number; failed: number; prune: string[] }> {
  let pending = tokens;
  let sent = 0;
  let failed = 0;
  const prune: string[] = [];
  for (let attempt = 0; pending.length > 0; attempt++) {
    const results = await deps.transport.send(message, pending);
    const retry: string[] = [];
    results.forEach((r, i) => {
      const verdict = classify(r);
      if (verdict === "sent") sent++;
      else if (verdict === "prune") prune.push(pending[i]);
      else if (verdict === "retry") retry.push(pending[i]);
      else failed++;
    });
    if (retry.length === 0) break;
    if (attempt >= deps.maxRetries) {
      failed += retry.length;
      break;
    }
    // Exponential backoff with jitter (firebase-admin itself already honours Retry-After on 503).
    await deps.sleep(deps.retryBaseMs * 2 ** attempt * (0.5 + Math.random() / 2));
    pending = retry;
  }
  // A pruned token is also a failed push: sent + failed = the batch's tokens.
  return { sent, failed: failed + prune.length, prune };
}

async function planBatches(deps: DeliverDeps, job: JobDoc): Promise<void> {
  const userIds = await deps.jobs.recipientsOf(job._id);
  const tokens: string[] = [];
  let withDevices = 0;
  for (let i = 0; i < userIds.length; i += USER_PAGE) {
    const page = await deps.deviceTokens(userIds.slice(i, i + USER_PAGE));
    tokens.push(...page.tokens);
    withDevices += page.users_with_devices;
  }
  const batches: string[][] = [];
  for (let i = 0; i < tokens.length; i += BATCH_SIZE) batches.push(tokens.slice(i, i + BATCH_SIZE));
  await deps.jobs.plan(job, batches, {
    devices: tokens.length,
    users_without_devices: job.recipients - withDevices,
  });
}

/**
 * Runs `work` over `items` with at most `limit` in flight. The first failure stops new work, and the
 * promise settles only when every started item has: a retry of the job must not race leftover sends.
 */
async function inPool<T>(
  items: T[],
  limit: number,
  stop: () => boolean,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const state: { failure: { err: unknown } | null } = { failure: null };
  const worker = async () => {
    while (!state.failure && next < items.length && !stop()) {
      try {
        await work(items[next++]);
      } catch (err) {
        state.failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (state.failure) throw state.failure.err;
}

export async function deliverJob(deps: DeliverDeps, jobId: string): Promise<void> {
  const job = await deps.jobs.startDelivery(jobId, deps.now());
  if (!job) return; // done, failed or unknown: nothing to do
  if (!job.planned) await planBatches(deps, job);
  const message = buildMessage(job);
  const pending = await deps.jobs.pendingBatches(jobId);
  await inPool(pending, deps.concurrency, deps.stopping, async (batch: BatchDoc) => {
    const result = await sendBatch(deps, message, batch.tokens);
    await deps.prune(result.prune);
    await deps.jobs.completeBatch(batch, {
      sent: result.sent,
      failed: result.failed,
      pruned: result.prune.length,
    });
  });
  if (deps.stopping()) return;
  await deps.jobs.finish(jobId, deps.now());
}
