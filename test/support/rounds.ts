/** Rounds that integration tests make for themselves, beside the demo data. */
import { call } from "../../shared/contracts";
import type { DemoManifest } from "../../shared/ops/seed";
import type { Cluster } from "./cluster";

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
