/**
 * Lines appended by what a group write has just answered go out in the same turn of the event loop.
 *
 * A group write (NedbDataFile) runs in a `setImmediate` at the end of the turn that appended its lines,
 * and resolves the operations that waited for it. Their continuations often write again: a join's
 * update after its read of the round, a refresh's update after its read of the sign-in's family. A
 * group write scheduled from within a `setImmediate` runs only in the next turn's, after that turn has
 * read and served every request that arrived meanwhile: under load, most of a request's time
 * (docs/decisions/0052-nedb-write-path.md).
 *
 * So once a group write has resolved waiters, every data file holds the lines appended meanwhile until
 * those continuations have run, and then writes them, still one write per file. A microtask queued after
 * the waiters' resolutions runs after their first continuations, and the tick it queues runs only once
 * the microtask queue is empty: after every continuation that waits for nothing but other microtasks.
 * Whatever waits for I/O or a timer appends later and is written in a turn of its own, as before.
 *
 * At most MAX_WAVES follow-ups run before the next turn, so a loop writing one document after another
 * cannot hold the event loop: beyond that its writes wait for a turn each, as before.
 */

/** A data file whose waiting lines can be written now. */
export interface Flushable {
  flush(): void;
}

export const MAX_WAVES = 4;

const holding = new Set<Flushable>();
let open = false;
let waves = 0;
let countReset = false;

function runFollowUp(): void {
  open = false;
  const files = [...holding];
  holding.clear();
  // A flush does not throw: a group that cannot be written fails its own waiters, not the other files.
  for (const file of files) file.flush();
}

/** A group write resolved operations: lines their continuations append wait for the follow-up. */
export function openFollowUp(): void {
  if (open || waves >= MAX_WAVES) return;
  open = true;
  waves++;
  if (!countReset) {
    countReset = true;
    setImmediate(() => {
      waves = 0;
      countReset = false;
    });
  }
  queueMicrotask(() => process.nextTick(runFollowUp));
}

/** True when the file's new lines are written by the open follow-up (it then needs no turn of its own). */
export function heldForFollowUp(file: Flushable): boolean {
  if (!open) return false;
  holding.add(file);
  return true;
}
