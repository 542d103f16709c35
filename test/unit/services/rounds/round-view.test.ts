import {
  formatStatus,
  maskPhone,
  renderItem,
  seesMeeting,
  renderRound,
  roundStatus,
  secondsToEnd,
} from "../../../../services/rounds/round-view";
import { Round, RoundItem } from "../../../../shared/contracts/round";
import { formatEntryFee } from "../../../../shared/format";
import { check } from "../../../../shared/validation";
import {
  ALICE,
  AN_HOUR_AGO,
  BOB,
  makeItem,
  makeProfile,
  makeSnapshot,
  membersOf,
  NOW,
  OWNER,
  profiles,
  STRANGER,
} from "../../support/fixtures";
import { SPEC_ROUND_KEYS } from "../../../support/spec-keys";

const phonesOf = (round: Round): Record<string, string> =>
  Object.fromEntries((round.participant_statuses ?? []).map((p) => [p.user.id, p.user.phone]));

describe("roundStatus", () => {
  it("when the round is active, not ended and has free seats, then it is open", () => {
    expect(roundStatus(makeSnapshot(), NOW)).toBe("open");
  });

  it("when every seat is taken, then it is full", () => {
    expect(roundStatus(makeSnapshot({ members_count: 3, max_members_count: 3 }), NOW)).toBe("full");
  });

  it("when the round is not active, then it is inactive even if it is also full", () => {
    expect(roundStatus(makeSnapshot({ is_active: false }), NOW)).toBe("inactive");
    expect(roundStatus(makeSnapshot({ is_active: false, members_count: 3 }), NOW)).toBe("inactive");
  });

  it("when the round is flagged is_ended, then it is ended whatever its other flags say", () => {
    expect(roundStatus(makeSnapshot({ is_ended: true }), NOW)).toBe("ended");
    expect(roundStatus(makeSnapshot({ is_ended: true, is_active: false, members_count: 3 }), NOW)).toBe(
      "ended",
    );
  });

  it("when end_time is in the past, then it is ended although is_ended is false", () => {
    expect(roundStatus(makeSnapshot({ is_ended: false, end_time: AN_HOUR_AGO }), NOW)).toBe("ended");
  });

  it("when end_time is exactly now, then it is ended", () => {
    expect(roundStatus(makeSnapshot({ end_time: NOW }), NOW)).toBe("ended");
  });

  it("when the round has no end_time, then time never ends it", () => {
    expect(roundStatus(makeSnapshot({ end_time: null }), new Date("2100-01-01T00:00:00Z"))).toBe("open");
  });
});

describe("formatStatus", () => {
  it("when the round is open, then it tells how many of the seats are left", () => {
    const snap = makeSnapshot({ members_count: 1, max_members_count: 3 });
    expect(formatStatus("open", snap)).toBe("Open: 2 of 3 seats left");
  });

  it("when the round has a single seat, then the word seat is singular", () => {
    const snap = makeSnapshot({ members: {}, members_count: 0, max_members_count: 1 });
    expect(formatStatus("open", snap)).toBe("Open: 1 of 1 seat left");
  });

  it("when the round is full, inactive or ended, then it reads Full, Not active or Ended", () => {
    const snap = makeSnapshot();
    expect(formatStatus("full", snap)).toBe("Full");
    expect(formatStatus("inactive", snap)).toBe("Not active");
    expect(formatStatus("ended", snap)).toBe("Ended");
  });
});

describe("secondsToEnd", () => {
  it("when end_time is in the future, then it is the whole seconds left, floored", () => {
    const end = new Date(NOW.getTime() + 90_900).toISOString();
    expect(secondsToEnd(end, NOW)).toBe(90);
  });

  it("when less than a second is left, then it is 0", () => {
    expect(secondsToEnd(new Date(NOW.getTime() + 999).toISOString(), NOW)).toBe(0);
  });

  it("when end_time is in the past, then it is 0, never negative", () => {
    expect(secondsToEnd(AN_HOUR_AGO.toISOString(), NOW)).toBe(0);
  });

  it("when there is no end_time, then it is 0", () => {
    expect(secondsToEnd(null, NOW)).toBe(0);
  });
});

describe("maskPhone", () => {
  it("when the phone is long, then the first two and last four characters stay and the rest are stars", () => {
    expect(maskPhone("+79001234567")).toBe("+7******4567");
  });

  it("when the phone has seven characters, then only the middle character is hidden", () => {
    expect(maskPhone("1234567")).toBe("12*4567");
  });

  it("when the phone has six characters or fewer, then every character is hidden", () => {
    expect(maskPhone("123456")).toBe("******");
    expect(maskPhone("12")).toBe("**");
  });
});

describe("formatEntryFee", () => {
  it("when the fee is zero, then it reads Free", () => {
    expect(formatEntryFee("0.00", "RUB")).toBe("Free");
    expect(formatEntryFee("0", "RUB")).toBe("Free");
  });

  it("when the fee is not zero, then it is the amount with two decimals and the currency", () => {
    expect(formatEntryFee("150", "RUB")).toBe("150.00 RUB");
    expect(formatEntryFee("9.5", "USD")).toBe("9.50 USD");
  });
});

describe("renderItem", () => {
  it("when the store is a blogger, then seller_type is blogger", () => {
    const store = { id: 1, name: "Blog", logo_url: null, is_blogger: true, currency: "RUB" };
    expect(renderItem(makeItem({ store })).store.seller_type).toBe("blogger");
  });

  it("when the store is not a blogger, then seller_type is store", () => {
    expect(renderItem(makeItem()).store.seller_type).toBe("store");
  });

  it("when an item is rendered, then format_price is the platform price in the store's currency", () => {
    const store = { id: 1, name: "S", logo_url: null, is_blogger: false, currency: "USD" };
    expect(renderItem(makeItem({ platform_price: 12.5, store })).format_price).toBe("12.50 USD");
    expect(renderItem(makeItem()).format_price).toBe("1500.00 RUB");
  });

  it("when an item is rendered, then the internal kind and the store's currency do not leak", () => {
    const rendered = renderItem(makeItem({ kind: "event" }));
    expect(rendered).not.toHaveProperty("kind");
    expect(rendered.store).not.toHaveProperty("currency");
    expect(rendered.store).toEqual({
      id: 7,
      name: "Sound Shop",
      logo_url: null,
      is_blogger: false,
      seller_type: "store",
    });
  });

  it("when an item is rendered, then the other fields pass through and it matches the RoundItem schema", () => {
    const item = makeItem();
    const rendered = renderItem(item);
    expect(rendered).toMatchObject({
      id: item.id,
      name: item.name,
      sku: item.sku,
      platform_price: item.platform_price,
      assets: item.assets,
      category: item.category,
      attribute_values: item.attribute_values,
    });
    expect(check(RoundItem, rendered)).toBe(true);
  });
});

describe("the meeting link and password of a round's item", () => {
  const MANAGER = "manager";
  const meetingItem = () =>
    makeItem({
      kind: "event",
      meeting_link: "https://meet.example.com/jazz",
      meeting_password: "pw",
      store: {
        id: 7,
        name: "Sound Shop",
        logo_url: null,
        is_blogger: false,
        currency: "RUB",
        manager_ids: [MANAGER],
      },
    });
  const event = () =>
    makeSnapshot({ is_event: true, members: membersOf(ALICE), members_count: 1 }, profiles, meetingItem());
  const meetingOf = (caller: string) => {
    const { meeting_link, meeting_password } = renderRound(event(), caller, NOW).item;
    return { meeting_link, meeting_password };
  };
  const shown = { meeting_link: "https://meet.example.com/jazz", meeting_password: "pw" };
  const hidden = { meeting_link: null, meeting_password: null };

  it("when the owner, a member or a manager of the store reads the round, then they are shown", () => {
    expect(meetingOf(OWNER)).toEqual(shown);
    expect(meetingOf(ALICE)).toEqual(shown);
    expect(meetingOf(MANAGER)).toEqual(shown);
  });

  it("when anyone else reads the round, then meeting_link and meeting_password are null", () => {
    expect(meetingOf(STRANGER)).toEqual(hidden);
    expect(meetingOf(BOB)).toEqual(hidden);
  });

  it("when the item names no managers (a stores process of before), then only owner and members see them", () => {
    const { manager_ids: _none, ...store } = meetingItem().store;
    const snap = makeSnapshot({ members: membersOf(ALICE), members_count: 1 }, profiles, {
      ...meetingItem(),
      store,
    });
    expect(renderRound(snap, MANAGER, NOW).item.meeting_link).toBeNull();
    expect(renderRound(snap, ALICE, NOW).item.meeting_link).toBe("https://meet.example.com/jazz");
    expect(seesMeeting(snap, OWNER)).toBe(true);
  });

  it("when the item is rendered alone, then the meeting stays hidden unless asked for", () => {
    expect(renderItem(meetingItem())).toMatchObject(hidden);
    expect(renderItem(meetingItem(), true)).toMatchObject(shown);
    expect(renderItem(meetingItem()).store).not.toHaveProperty("manager_ids");
  });
});

describe("renderRound", () => {
  it("when a round is rendered, then it matches the Round schema", () => {
    expect(check(Round, renderRound(makeSnapshot(), ALICE, NOW))).toBe(true);
  });

  it("when a round is rendered, then it has exactly the keys of the spec's Round", () => {
    const round = renderRound(makeSnapshot(), ALICE, NOW);
    expect(Object.keys(round).sort()).toEqual([...SPEC_ROUND_KEYS].sort());
    expect(Object.keys(Round.properties).sort()).toEqual([...SPEC_ROUND_KEYS].sort());
  });

  it("when the owner and times are rendered, then owner keys are present and times are ISO strings", () => {
    const round = renderRound(makeSnapshot(), ALICE, NOW);
    expect(round.owner).toEqual({
      id: OWNER,
      first_name: "owner first",
      last_name: "owner last",
      avatar_url: "https://cdn.example/owner.png",
    });
    expect(round.start_time).toBe(AN_HOUR_AGO.toISOString());
    expect(round.end_time).toBe("2030-01-01T13:00:00.000Z");
  });

  it("when the owner's profile is unknown, then the owner keeps its id and null names", () => {
    const { [OWNER]: _owner, ...others } = profiles;
    const round = renderRound(makeSnapshot({}, others), ALICE, NOW);
    expect(round.owner).toEqual({ id: OWNER, first_name: null, last_name: null, avatar_url: null });
    expect(check(Round, round)).toBe(true);
  });

  it("when a round has no start and end time, then both are null and it still matches the schema", () => {
    const round = renderRound(makeSnapshot({ start_time: null, end_time: null }), ALICE, NOW);
    expect(round.start_time).toBeNull();
    expect(round.end_time).toBeNull();
    expect(round.seconds_to_end).toBe(0);
    expect(check(Round, round)).toBe(true);
  });

  it("when an open round is rendered, then the computed fields describe it", () => {
    const round = renderRound(makeSnapshot(), ALICE, NOW);
    expect(round).toMatchObject({
      status: "open",
      is_ended: false,
      seconds_to_end: 3600,
      format_entry_fee: "150.00 RUB",
      format_status: "Open: 2 of 3 seats left",
    });
    expect(round.item.store.seller_type).toBe("store");
    expect(round.question).toEqual({
      category_theme: { name: "Cinema", emoji: "🎬", category: { name: "Entertainment" } },
    });
  });

  it("when the entry fee is zero, then format_entry_fee reads Free", () => {
    expect(renderRound(makeSnapshot({ entry_fee: "0.00" }), ALICE, NOW).format_entry_fee).toBe("Free");
  });

  it("when different callers read the round, then in_favorites is true only for a caller who favorited it", () => {
    const snap = makeSnapshot({ favorites: { [ALICE]: true } });
    expect(renderRound(snap, ALICE, NOW).in_favorites).toBe(true);
    expect(renderRound(snap, BOB, NOW).in_favorites).toBe(false);
    expect(renderRound(snap, OWNER, NOW).in_favorites).toBe(false);
  });

  describe("participants' phones", () => {
    const snap = makeSnapshot({ members: membersOf(ALICE, BOB), members_count: 2 });

    it("when the owner reads the round, then every participant's phone is shown in full", () => {
      expect(phonesOf(renderRound(snap, OWNER, NOW))).toEqual({
        [ALICE]: "+79000000002",
        [BOB]: "+79000000003",
      });
    });

    it("when a participant reads the round, then their own phone is in full and the others' are masked", () => {
      expect(phonesOf(renderRound(snap, ALICE, NOW))).toEqual({
        [ALICE]: "+79000000002",
        [BOB]: "+7******0003",
      });
    });

    it("when someone else reads the round, then every phone is masked", () => {
      expect(phonesOf(renderRound(snap, STRANGER, NOW))).toEqual({
        [ALICE]: "+7******0002",
        [BOB]: "+7******0003",
      });
    });
  });

  it("when participants are rendered, then they come in joining order with their status and profile", () => {
    const snap = makeSnapshot({ members: membersOf(BOB, ALICE), members_count: 2 });
    const round = renderRound(snap, OWNER, NOW);
    expect(round.participant_statuses).toEqual([
      {
        status: "joined",
        user: {
          id: BOB,
          phone: "+79000000003",
          username: "bob_name",
          first_name: "bob first",
          last_name: "bob last",
          avatar_url: null,
        },
      },
      {
        status: "joined",
        user: {
          id: ALICE,
          phone: "+79000000002",
          username: "alice_name",
          first_name: "alice first",
          last_name: "alice last",
          avatar_url: null,
        },
      },
    ]);
  });

  it("when a member was removed or has no profile, then they are left out of participant_statuses", () => {
    const withRemovedBob = { ...profiles, [BOB]: makeProfile(BOB, "+79000000003", { removed: true }) };
    const snap = makeSnapshot({ members: membersOf(ALICE, BOB, "ghost"), members_count: 3 }, withRemovedBob);
    const round = renderRound(snap, OWNER, NOW);
    expect(round.participant_statuses?.map((p) => p.user.id)).toEqual([ALICE]);
    expect(round.members_count).toBe(3);
  });

  it("when the same snapshot is rendered at a later instant, then the computed fields are recomputed", () => {
    const snap = makeSnapshot();
    const before = structuredClone(snap);
    const early = renderRound(snap, ALICE, NOW);
    const late = renderRound(snap, ALICE, new Date(NOW.getTime() + 2 * 3600_000));
    expect(early).toMatchObject({
      status: "open",
      is_ended: false,
      seconds_to_end: 3600,
      format_status: "Open: 2 of 3 seats left",
    });
    expect(late).toMatchObject({
      status: "ended",
      is_ended: true,
      seconds_to_end: 0,
      format_status: "Ended",
    });
    expect(renderRound(snap, ALICE, new Date(NOW.getTime() + 1800_500)).seconds_to_end).toBe(1799);
    expect(snap).toEqual(before);
  });

  it("when the round is full or inactive, then status, is_ended and format_status agree", () => {
    const full = renderRound(makeSnapshot({ members_count: 3 }), ALICE, NOW);
    expect(full).toMatchObject({ status: "full", is_ended: false, format_status: "Full" });
    const inactive = renderRound(makeSnapshot({ is_active: false }), ALICE, NOW);
    expect(inactive).toMatchObject({
      status: "inactive",
      is_active: false,
      is_ended: false,
      format_status: "Not active",
    });
  });
});
