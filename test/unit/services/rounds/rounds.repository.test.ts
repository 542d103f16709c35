import { NedbStore, DuplicateKeyError } from "../../../../shared/storage";
import type { CreateRoundParams } from "../../../../shared/contracts/rounds";
import { RoundsRepository } from "../../../../services/rounds/rounds.repository";

const params = (over: Partial<CreateRoundParams> = {}): CreateRoundParams => ({
  owner_id: "owner",
  item_id: "item",
  entry_fee: "150.00",
  max_members_count: 10,
  is_active: true,
  is_private: false,
  is_ended: false,
  is_event: false,
  question: { theme: "t", category: "c" },
  certificate: { text: "10% off", discount_percent: 10 },
  locations: [],
  member_ids: [],
  favorite_of: [],
  ...over,
});

/** Draws the given codes in order, then fails the test if asked for more. */
const codes =
  (...list: string[]) =>
  () =>
    list.shift() ?? "R-EXHAUSTED";

describe("RoundsRepository.create", () => {
  it("when the drawn code is already taken, then another is drawn and the round is created", async () => {
    const store = new NedbStore(null);
    const repo = new RoundsRepository(store, codes("R-AAAAAA", "R-AAAAAA", "R-BBBBBB"));
    await repo.init();
    const first = await repo.create(params(), "RUB", new Date());
    const second = await repo.create(params(), "RUB", new Date());
    expect([first.uniq_id, second.uniq_id]).toEqual(["R-AAAAAA", "R-BBBBBB"]);
    expect(await store.collection("rounds").count({})).toBe(2);
  });

  it("when the round's id is already taken, then the duplicate is reported, not retried", async () => {
    const store = new NedbStore(null);
    const repo = new RoundsRepository(store, codes("R-AAAAAA", "R-BBBBBB", "R-CCCCCC"));
    await repo.init();
    await repo.create(params({ id: "event-round" }), "RUB", new Date());
    await expect(repo.create(params({ id: "event-round" }), "RUB", new Date())).rejects.toBeInstanceOf(
      DuplicateKeyError,
    );
    expect(await store.collection("rounds").count({})).toBe(1);
  });
});
