/**
 * Outbox leftovers: an entry no channel took (a consumer that fails on it every time, embedded; a
 * channel that refuses it) would stay in its document for ever, and with it the document in the sparse
 * outbox index and in every sweep of the relay. After OUTBOX_RETENTION_MS it is dropped, and each
 * drop is logged with the fact it announced, which is lost: its consumers never apply it
 * (docs/decisions/0041-durable-facts.md). A task of the service's sweeper
 * (shared/runtime/sweeper.ts; started by shared/runtime/start-outbox-relay.ts).
 */
import type { PendingEntry } from "./entry";

/**
 * Seven days: a fact waits in its outbox only while its channel is unreachable or its consumer keeps
 * failing, and a week outlasts any outage and a weekend before someone fixes the consumer, while a
 * document kept in the sparse outbox index costs every sweep of the relay. JetStream's streams keep a
 * message as long (app/broker-options.ts), so a fact is never dropped there before here.
 */
export const OUTBOX_RETENTION_MS = 7 * 24 * 3_600_000;

/** Hourly, as the other retention sweeps. */
export const OUTBOX_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

export interface ExpiringOutbox {
  dropOlderThan(before: Date, onDrop: (dropped: PendingEntry) => void): Promise<number>;
}

/** The log line of one dropped entry: which fact is lost, where it was, since when. */
export function describeDrop(p: PendingEntry, retentionMs: number): string {
  const hours = Math.round(retentionMs / 3_600_000);
  const recorded = new Date(p.entry.recorded_at).toISOString();
  return (
    `Fact dropped from the outbox, never published within ${hours} h: ` +
    `${p.entry.channel} ${p.entry.id}, recorded ${recorded} in document ${String(p.docId)}; ` +
    `its consumers will not apply it: ${JSON.stringify(p.entry.payload)}`
  );
}

/** A sweep task dropping the entries older than `retentionMs`, each one reported to `log`. */
export function outboxExpiryTask(
  name: string,
  outbox: ExpiringOutbox,
  retentionMs: number,
  log: (line: string, dropped: PendingEntry) => void,
): { name: string; run(now: Date): Promise<number> } {
  return {
    name,
    run: (now) =>
      outbox.dropOlderThan(new Date(now.getTime() - retentionMs), (p) =>
        log(describeDrop(p, retentionMs), p),
      ),
  };
}
