/**
 * Steady load for the fault cases: clients reading one URL in a loop, every outcome recorded with when
 * it was sent. Start the cluster with NO_GATEWAY_CACHES so every read makes every hop.
 */

export interface ReadOutcome {
  sentAt: number;
  ms: number;
  /** 0 when no answer came: the connection failed, was reset, or the read timed out. */
  status: number;
  body: unknown;
  /** Why no answer came (the fetch error's cause code or name). */
  error?: string;
}

/** Every read pays the calls to auth, users and rounds: no gateway-side token or answer cache. */
export const NO_GATEWAY_CACHES = { AUTH_CACHE_SECONDS: "0", RESPONSE_CACHE_MS: "0" };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function failureOf(err: unknown): string {
  const e = err as { name?: string; cause?: { code?: string; name?: string } };
  return e?.cause?.code ?? e?.cause?.name ?? e?.name ?? "error";
}

/**
 * `clients` readers of one URL until stopped (a failed read waits 50 ms before the next). With
 * `thinkMs`, each waits that long between reads, as a user does, instead of reading back to back.
 */
export function steadyReads(url: string, headers: Record<string, string>, clients = 8, thinkMs = 0) {
  const outcomes: ReadOutcome[] = [];
  let stopped = false;
  const worker = async () => {
    while (!stopped) {
      const sentAt = Date.now();
      let status = 0;
      let body: unknown = null;
      let error: string | undefined;
      try {
        const res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
        status = res.status;
        body = await res.json().catch(() => null);
      } catch (err) {
        error = failureOf(err);
      }
      outcomes.push({ sentAt, ms: Date.now() - sentAt, status, body, ...(error ? { error } : {}) });
      if (status !== 200) await sleep(50);
      else if (thinkMs > 0) await sleep(thinkMs);
    }
  };
  const workers = Array.from({ length: clients }, worker);
  return {
    outcomes,
    stop: async () => {
      stopped = true;
      await Promise.all(workers);
    },
  };
}

/** What steady reads saw across a kill: every outcome, the failed and the slow ones, and the times. */
export interface ReadsAcrossKill {
  outcomes: ReadOutcome[];
  /** Reads not answered 200. */
  failed: ReadOutcome[];
  /** Reads not answered 200, or answered after more than a second. */
  slow: ReadOutcome[];
  killedAt: number;
  /** From then on every read was answered at once: the end of the last slow read (or the kill). */
  fullServiceAt: number;
}

/**
 * Steady reads of `url` (8 clients) for 2 s, then `kill()`, then 10 s more: the fault cases' shape.
 * Full service is back when the last slow read was answered.
 */
export async function readsAcrossKill(
  url: string,
  headers: Record<string, string>,
  kill: () => Promise<void>,
): Promise<ReadsAcrossKill> {
  const reads = steadyReads(url, headers);
  await sleep(2000);
  const killedAt = Date.now();
  await kill();
  await sleep(10_000);
  await reads.stop();
  const { outcomes } = reads;
  const failed = outcomes.filter((o) => o.status !== 200);
  const slow = outcomes.filter((o) => o.status !== 200 || o.ms > 1000);
  const fullServiceAt = Math.max(killedAt, ...slow.map((o) => o.sentAt + o.ms));
  return { outcomes, failed, slow, killedAt, fullServiceAt };
}
