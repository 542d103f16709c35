/**
 * What the media folder would keep for ever without a sweep (docs/decisions/0041-durable-facts.md):
 * - staged uploads a killed process left in `.staging` (a kill -9 between stage and commit: nothing
 *   else ever deletes them);
 * - pictures moved into place whose item was never written (a kill between the move and the insert,
 *   or an undo that failed): no item shows them, and nothing else ever deletes them.
 * Both are removed once older than `STAGED_RETENTION_MS` (an hour, many times the longest upload), so
 * that no upload still under way, nor an event being created, is ever touched.
 * Swept at start and hourly by each stores process (shared/runtime/sweeper.ts): on its own media folder,
 * or on the GridFS bucket they all share (services/stores/gridfs-blob-store.ts; sweeping it twice at
 * once deletes nothing twice).
 */
import type { SweepTask } from "../../shared/runtime/sweeper";
import { UPLOAD_TIMEOUT_MS } from "../../shared/contracts/stores";
import type { BlobStore } from "./blob-store";
import type { StoresRepository } from "./stores.repository";

/** How often each stores process sweeps its media folder (and, with it, expired Idempotency-Keys). */
export const MEDIA_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * How old a staged upload or an unshown picture must be to go: an hour, which a kill leaves at most as
 * litter (a few pictures), and never less than twice the longest an upload may take, so that an upload
 * still arriving, or the event it is about to become, is never swept from under it.
 */
export const STAGED_RETENTION_MS = Math.max(60 * 60 * 1000, 2 * UPLOAD_TIMEOUT_MS);

export function mediaSweepTasks(
  blobs: Pick<BlobStore, "sweepStaged" | "sweepOrphans">,
  repo: Pick<StoresRepository, "pictureInUse">,
  retentionMs: number,
  onOrphan: (name: string) => void,
): SweepTask[] {
  return [
    { name: "staged uploads", run: (now) => blobs.sweepStaged(retentionMs, now.getTime()) },
    {
      name: "pictures no item shows",
      run: async (now) => {
        const removed = await blobs.sweepOrphans(
          retentionMs,
          (name) => repo.pictureInUse(name),
          now.getTime(),
        );
        for (const name of removed) onOrphan(name);
        return removed.length;
      },
    },
  ];
}
