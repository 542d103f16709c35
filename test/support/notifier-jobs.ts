/** Records a notification job as accepting a request does: its user ids stored as a set of pages, then the job. */
import type { SendMulticastParams } from "../../shared/contracts/notifier";
import type { JobDoc, JobsRepository } from "../../services/notifier/jobs.repository";

export async function recordJob(
  repo: JobsRepository,
  id: string,
  p: Pick<SendMulticastParams, "title" | "desc" | "picture" | "keys" | "user_ids">,
  hash: string,
  now: Date,
  createdBy = "key-test",
): Promise<{ job: JobDoc; created: boolean }> {
  const set = await repo.stageAll(id, p.user_ids, now);
  const fields = { title: p.title, desc: p.desc ?? null, picture: p.picture ?? null, keys: p.keys ?? null };
  return repo.create(id, fields, { ...set, count: p.user_ids.length }, hash, now, createdBy);
}
