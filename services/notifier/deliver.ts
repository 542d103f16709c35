/**
 * Delivering a job, one recipient page at a time (so memory follows a page, never the whole job): plan
 * the page's token batches once (≤ 500 tokens each, fixed from then on), send its pending ones with a
 * bounded number in flight, retry what FCM says may succeed later, prune what it says is dead, record
 * each batch as done in one conditional update; after the last page, finish the job from its batches.
 * A job delivered again after a crash resends nothing already recorded as sent.
 */
import { pagesOf } from "../../shared/contracts/paging";
import type { DeviceTokensParams, DeviceTokensResult } from "../../shared/contracts/users";
import { buildMessage, type PushMessage } from "./message";
import {
  keyPairsOf,
  type BatchDoc,
  type JobDoc,
  type JobsRepository,
  type Retention,
} from "./jobs.repository";
import type { PushTransport, TokenResult } from "./transport";

export const BATCH_SIZE = 500;
/** User ids per `users.deviceTokens` call (also bounded by bytes, like every page: shared/contracts/paging). */
export const DEVICE_LOOKUP_USERS = 1000;

export interface DeliverDeps {
  jobs: Pick<
    JobsRepository,
    | "startDelivery"
    | "planPage"
    | "pageCount"
    | "recipientsPage"
    | "pendingBatches"
    | "completeBatch"
    | "finish"
    | "find"
  >;
  /** One call of `users.deviceTokens`: a page of the users' tokens after `after`. */
  deviceTokens(params: DeviceTokensParams): Promise<DeviceTokensResult>;
  prune(tokens: string[]): Promise<number>;
  retention: Retention;
  transport: PushTransport;
  concurrency: number;
  maxRetries: number;
  retryBaseMs: number;
  sleep(ms: number): Promise<void>;
  now(): Date;
  /** True when the service is stopping: no new batch is started, the job stays unfinished and resumes. */
  stopping(): boolean;
}

/**
 * A token FCM answered with a transient error is sent again up to 3 times, after about 0.5, 1 and 2 s
 * (halved at random, so that notifiers do not retry in step). firebase-admin has by then retried each
 * request itself (4 times over about 7 s on a 503); ours outlast an outage of several seconds more, yet
 * a batch gives up within about 30 s and does not hold its slot for minutes.
 */
export const TOKEN_RETRIES = 3;
export const RETRY_BASE_MS = 500;

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

/**
 * The device tokens of `userIds`, sorted: asked in bounded pages of users, each answer itself a page of
 * tokens followed with its cursor (`next`) until the last.
 */
export async function tokensOf(
  ask: DeliverDeps["deviceTokens"],
  userIds: string[],
): Promise<{ tokens: string[]; usersWithDevices: number }> {
  const tokens: string[] = [];
  let usersWithDevices = 0;
  for (const users of pagesOf(userIds, DEVICE_LOOKUP_USERS)) {
    let after: string | undefined;
    do {
      const page = await ask(after === undefined ? { user_ids: users } : { user_ids: users, after });
      tokens.push(...page.tokens);
      if (after === undefined) usersWithDevices += page.users_with_devices;
      after = page.next ?? undefined;
    } while (after !== undefined);
  }
  return { tokens: tokens.sort(), usersWithDevices };
}

/** Plans recipient page `page` of a job: its tokens, cut into batches, written once. */
async function planPage(deps: DeliverDeps, job: JobDoc, page: number): Promise<void> {
  const userIds = await deps.jobs.recipientsPage(job, page);
  const { tokens, usersWithDevices } = await tokensOf(deps.deviceTokens, userIds);
  const batches: string[][] = [];
  for (let i = 0; i < tokens.length; i += BATCH_SIZE) batches.push(tokens.slice(i, i + BATCH_SIZE));
  await deps.jobs.planPage(
    job,
    page,
    batches,
    { devices: tokens.length, users_without_devices: userIds.length - usersWithDevices },
    deps.now(),
  );
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

/** Sends pending batches with at most `concurrency` in flight, each recorded done once sent. */
function sendPending(deps: DeliverDeps, message: PushMessage, pending: BatchDoc[]): Promise<void> {
  return inPool(pending, deps.concurrency, deps.stopping, async (batch: BatchDoc) => {
    const result = await sendBatch(deps, message, batch.tokens);
    await deps.prune(result.prune);
    await deps.jobs.completeBatch(batch, {
      sent: result.sent,
      failed: result.failed,
      pruned: result.prune.length,
    });
  });
}

export async function deliverJob(deps: DeliverDeps, jobId: string): Promise<void> {
  const job = await deps.jobs.startDelivery(jobId, deps.now());
  if (!job) return; // done, failed or unknown: nothing to do
  const message = buildMessage({ ...job, keyPairs: keyPairsOf(job) });
  if (job.planned && job.planned_pages === undefined) {
    // Planned whole before recipients came in pages (an upgrade mid-job): its batches as they are.
    await sendPending(deps, message, await deps.jobs.pendingBatches(jobId));
  } else {
    for (let page = 0; page < deps.jobs.pageCount(job); page++) {
      if (page > 0 && deps.stopping()) return;
      if ((job.planned_pages ?? 0) <= page) await planPage(deps, job, page);
      await sendPending(deps, message, await deps.jobs.pendingBatches(jobId, page));
    }
  }
  if (deps.stopping()) return;
  await deps.jobs.finish(jobId, deps.now(), deps.retention);
}
