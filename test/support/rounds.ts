/** Rounds that integration tests make for themselves, beside the demo data. */
import { call } from "../../shared/contracts";
import type { DemoManifest, ManifestUser } from "../../shared/ops/seed";
import type { Cluster } from "./cluster";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A fresh public round of the demo's open round's item, owned by Alice, ending in an hour, with `seats`
 * seats at `fee` each (the item is read through the gateway, as a client would see it).
 */
export async function newPaidRound(
  cluster: Pick<Cluster, "baseUrl" | "client">,
  manifest: DemoManifest,
  seats: number,
  fee: string,
): Promise<string> {
  const res = await fetch(`${cluster.baseUrl}/rounds/${manifest.rounds.open}`, {
    headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
  });
  const open = (await res.json()) as { item: { id: string } };
  const created = await call(cluster.client, "rounds.create", {
    owner_id: manifest.users.alice.id,
    item_id: open.item.id,
    entry_fee: fee,
    max_members_count: seats,
    is_active: true,
    is_private: false,
    is_ended: false,
    is_event: false,
    start_time: null,
    end_time: new Date(Date.now() + 3_600_000).toISOString(),
    question: { theme: "Music", emoji: null, category: "Culture" },
    certificate: { text: "Ten percent off", discount_percent: 10 },
    locations: [],
    member_ids: [],
    favorite_of: [],
  });
  return created.id;
}

/** A client's join through the gateway: its status (0: no answer), how long it took, and its body. */
export interface JoinAnswer {
  user: ManifestUser;
  status: number;
  ms: number;
  body: unknown;
}

/** `user` joins the round over HTTP with `body` (either form the spec allows); never throws. */
export async function joinOverHttp(
  baseUrl: string,
  roundId: string,
  user: ManifestUser,
  body = JSON.stringify({ attributes: [] }),
): Promise<JoinAnswer> {
  const started = Date.now();
  const res = await fetch(`${baseUrl}/rounds/${roundId}/join`, {
    method: "POST",
    headers: { authorization: `Bearer ${user.access_token}`, "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(30_000),
  }).catch(() => null);
  const answer = res ? await res.json().catch(() => null) : null;
  return { user, status: res?.status ?? 0, ms: Date.now() - started, body: answer };
}

/** This user's payments for the round, as the API lists them (-1 when the list could not be read). */
export async function paymentsFor(baseUrl: string, user: ManifestUser, roundId: string): Promise<number> {
  const res = await fetch(`${baseUrl}/users/payments`, {
    headers: { authorization: `Bearer ${user.access_token}` },
  });
  if (res.status !== 200) return -1;
  const list = (await res.json()) as Array<{ round_id: string }>;
  return list.filter((p) => p.round_id === roundId).length;
}

/**
 * Each user's payments for the round once they have all arrived (or `timeoutMs` passed), looked at
 * again after a pause: a fact relayed twice (by two processes, or again after a kill) would show as a
 * second payment.
 */
export async function settledPayments(
  baseUrl: string,
  users: ManifestUser[],
  roundId: string,
  timeoutMs = 60_000,
): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const counts = await Promise.all(users.map((u) => paymentsFor(baseUrl, u, roundId)));
    if (counts.every((c) => c >= 1)) break;
    await sleep(500);
  }
  await sleep(1500);
  return Promise.all(users.map((u) => paymentsFor(baseUrl, u, roundId)));
}
