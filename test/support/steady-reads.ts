/**
 * Steady load for the fault cases: clients reading one URL, or refreshing their tokens, in a loop, every
 * outcome recorded with when it was sent. Start the cluster with NO_GATEWAY_CACHES so every read makes
 * every hop.
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

/** One request of a steady client: its answer's status and body (0 and null when none came). */
interface Answer {
  status: number;
  body: unknown;
  error?: string;
}

async function send(url: string, init: RequestInit): Promise<Answer> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    return { status: res.status, body: await res.json().catch(() => null) };
  } catch (err) {
    return { status: 0, body: null, error: failureOf(err) };
  }
}

/**
 * `clients` loops of `request` until stopped, every outcome recorded (a failed request waits 50 ms
 * before the next; with `thinkMs`, each waits that long after a success, as a user does). A client
 * stops early once its `request` says it has nothing more to send (null).
 */
function steadyClients(
  clients: number,
  thinkMs: number,
  request: (client: number) => Promise<Answer | null>,
) {
  const outcomes: ReadOutcome[] = [];
  let stopped = false;
  const worker = async (client: number) => {
    while (!stopped) {
      const sentAt = Date.now();
      const answer = await request(client);
      if (!answer) return;
      const { status, body, error } = answer;
      outcomes.push({ sentAt, ms: Date.now() - sentAt, status, body, ...(error ? { error } : {}) });
      if (status !== 200) await sleep(50);
      else if (thinkMs > 0) await sleep(thinkMs);
    }
  };
  const workers = Array.from({ length: clients }, (_, i) => worker(i));
  return {
    outcomes,
    stop: async () => {
      stopped = true;
      await Promise.all(workers);
    },
  };
}

/**
 * `clients` readers of one URL until stopped (a failed read waits 50 ms before the next). With
 * `thinkMs`, each waits that long between reads, as a user does, instead of reading back to back.
 */
export function steadyReads(url: string, headers: Record<string, string>, clients = 8, thinkMs = 0) {
  return steadyClients(clients, thinkMs, () => send(url, { headers }));
}

/** A client's tokens: the access token to send as bearer, the refresh token to rotate. */
export interface TokenPair {
  access: string;
  refresh: string;
}

/**
 * One client per pair refreshing its tokens back to back (or `thinkMs` apart) until stopped, as a mobile client does: an
 * answer 200 gives the pair it sends next; any other answer, it sends the same pair again (a 503
 * says "try again"). `pairs` holds each client's current pair. A client answered 401 has been locked
 * out (its token refused as unknown or reused): that answer is recorded, and it sends no more.
 */
export function steadyRefreshes(baseUrl: string, pairs: TokenPair[], thinkMs = 0) {
  const lockedOut: { client: number; at: number; body: unknown }[] = [];
  const load = steadyClients(pairs.length, thinkMs, async (client) => {
    if (lockedOut.some((l) => l.client === client)) return null;
    const pair = pairs[client];
    const answer = await send(`${baseUrl}/auth/refresh-token`, {
      method: "POST",
      headers: { authorization: `Bearer ${pair.access}`, "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: pair.refresh }),
    });
    const set = answer.body as { access_token?: string; refresh_token?: string } | null;
    if (answer.status === 200 && set?.access_token && set.refresh_token) {
      pairs[client] = { access: set.access_token, refresh: set.refresh_token };
    } else if (answer.status === 401) {
      lockedOut.push({ client, at: Date.now(), body: answer.body });
    }
    return answer;
  });
  return { ...load, pairs, lockedOut };
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
  const fullServiceAt = slow.reduce((at, o) => Math.max(at, o.sentAt + o.ms), killedAt);
  return { outcomes, failed, slow, killedAt, fullServiceAt };
}
