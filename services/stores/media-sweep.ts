/**
 * What the media folder would keep for ever without a sweep (docs/decisions/0041-durable-facts.md):
 * - staged uploads a killed process left in `.staging` (a kill -9 between stage and commit: nothing
 *   else ever deletes them);
 * - pictures moved into place whose item was never written (a kill between the move and the insert,
 *   or an undo that failed): no item shows them, and nothing else ever deletes them.
 * Both are removed once older than STAGED_UPLOAD_RETENTION_MINUTES, at least twice UPLOAD_TIMEOUT_MS
 * (shared/config), so that no upload still under way, nor an event being created, is ever touched.
 * Swept at start and hourly by each stores process (shared/runtime/sweeper.ts): on its own media folder,
 * or on the GridFS bucket they all share (services/stores/gridfs-blob-store.ts; sweeping it twice at
 * once deletes nothing twice).
 */
import type { SweepTask } from "../../shared/runtime/sweeper";
import type { BlobStore } from "./blob-store";
import type { StoresRepository } from "./stores.repository";

/** How often each stores process sweeps its media folder (and, with it, expired Idempotency-Keys). */
export const MEDIA_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

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
