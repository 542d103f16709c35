/**
 * A fault under load, with the cluster tier's invariants (test/integration/cluster-faults.test.ts):
 * while the fault happens, 8 users join a fresh 3-seat paid round (each retrying what got no answer,
 * as a client would, until 200 or 409) and 2 clients refresh their tokens back to back. Afterwards:
 * no seat over-sold (members ≤ seats, and as many payments as members), each paid join paid once, and
 * no honest refresher logged out (never answered 401).
 */
import type { DemoManifest, ManifestUser } from "../../../shared/ops/seed";
import { paymentsFor, settledPayments } from "../../support/rounds";
import { steadyRefreshes, type TokenPair } from "../../support/steady-reads";
import { eventFields, eventForm, pngBytes } from "../../support/upload";
import type { Deployment } from "./deployment";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SEATS = 3;
const JOINERS = 8;

export interface FaultOutcome {
  fault: string;
  summary: string;
}

/** A fresh paid round of SEATS seats: a store event's round, created through the gateway. */
async function freshRound(deployment: Deployment, base: string, m: DemoManifest): Promise<string> {
  const res = await fetch(`${base}/stores/${m.stores.alice_store}/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${m.users.alice.access_token}` },
    body: eventForm(
      eventFields({ event_type: "online", participants_limit: String(SEATS), price: "100" }),
      pngBytes(2000),
    ),
  });
  if (res.status !== 200) {
    // The answer alone does not say which process failed: the logs of the two that took part do.
    const tails = await Promise.all(
      ["gateway", "stores"].map(async (s) => `${s}'s log ends:\n${(await deployment.logs(s)).slice(-2500)}`),
    );
    throw new Error(`store event: ${res.status} ${await res.text()}\n${tails.join("\n")}`);
  }
  const { round_id } = (await res.json()) as { round_id: string };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const round = await fetch(`${base}/rounds/${round_id}`, {
      headers: { authorization: `Bearer ${m.users.bob.access_token}` },
    });
    if (round.status === 200) return round_id;
    await sleep(300);
  }
  throw new Error(`round ${round_id} of the store event never appeared`);
}

/** Joins until a definite answer (200 or 409), retrying what got none (0, 5xx) for up to `ms`. */
async function joinUntilAnswered(
  base: string,
  round: string,
  user: ManifestUser,
  ms: number,
): Promise<number> {
  const deadline = Date.now() + ms;
  let status = 0;
  while (Date.now() < deadline) {
    status = await fetch(`${base}/rounds/${round}/join`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ attributes: [] }),
      signal: AbortSignal.timeout(30_000),
    })
      .then((r) => r.status)
      .catch(() => 0);
    if (status === 200 || status === 409) return status;
    await sleep(500);
  }
  return status;
}

export async function underFault(
  deployment: Deployment,
  m: DemoManifest,
  fault: string,
  act: () => Promise<void>,
): Promise<FaultOutcome> {
  const base = await deployment.url("gateway");
  const round = await freshRound(deployment, base, m);
  const joiners = m.users.crowd.slice(5, 5 + JOINERS);
  // Each refresher its own sign-in (token family), issued by the CLI in the auth container.
  const pairs: TokenPair[] = [];
  for (const user of m.users.crowd.slice(20, 22)) {
    const set = JSON.parse(await deployment.ctl(["token", user.id])) as {
      access_token: string;
      refresh_token: string;
    };
    pairs.push({ access: set.access_token, refresh: set.refresh_token });
  }
  // As shipped, a user may refresh 60 times a minute (RATE_LIMITS): back to back, the refreshers met
  // 429s from the second case on and refreshed nothing across the fault. A little slower, they do.
  const refreshes = steadyRefreshes(base, pairs, 1100);
  // Joins spread over the fault's first seconds, so that some meet it.
  const joins = joiners.map(async (user, i) => {
    await sleep(i * 400);
    return joinUntilAnswered(base, round, user, 120_000);
  });
  await sleep(500);
  const started = Date.now();
  await act();
  const faultMs = Date.now() - started;
  const statuses = await Promise.all(joins);
  await sleep(2000); // refreshes go on a little after the fault
  await refreshes.stop();

  const readRound = await fetch(`${base}/rounds/${round}`, {
    headers: { authorization: `Bearer ${m.users.bob.access_token}` },
  });
  const { members_count } = (await readRound.json()) as { members_count: number };
  const joined = joiners.filter((_, i) => statuses[i] === 200);
  const paidJoined = await settledPayments(base, joined, round);
  const others = await Promise.all(
    joiners.filter((_, i) => statuses[i] !== 200).map((u) => paymentsFor(base, u, round)),
  );
  const failedRefreshes = refreshes.outcomes.filter((o) => o.status !== 200).length;

  const problems: string[] = [];
  if (statuses.some((s) => s !== 200 && s !== 409))
    problems.push(`joins without a definite answer: ${statuses.join(",")}`);
  if (members_count > SEATS) problems.push(`over-sold: ${members_count} members for ${SEATS} seats`);
  if (paidJoined.some((n) => n !== 1))
    problems.push(`payments of the users answered 200: ${paidJoined.join(",")}`);
  if (others.some((n) => n > 1)) problems.push(`payments of the users refused: ${others.join(",")}`);
  const payments = paidJoined.reduce((a, b) => a + b, 0) + others.reduce((a, b) => a + Math.max(0, b), 0);
  if (payments !== members_count) problems.push(`${payments} payments for ${members_count} members`);
  if (refreshes.lockedOut.length > 0)
    problems.push(`refreshers logged out: ${JSON.stringify(refreshes.lockedOut)}`);
  const summary =
    `${fault} (${faultMs} ms): joins ${statuses.filter((s) => s === 200).length}×200 ` +
    `${statuses.filter((s) => s === 409).length}×409, ${members_count}/${SEATS} seats, ${payments} payments; ` +
    `refreshes ${refreshes.outcomes.length - failedRefreshes}/${refreshes.outcomes.length} answered 200, none logged out` +
    (problems.length > 0 ? ` — ${problems.join("; ")}` : "");
  if (problems.length > 0) throw new Error(summary);
  return { fault, summary };
}
