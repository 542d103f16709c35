import fc from "fast-check";
import {
  SAME_FOR_ALL_MAX_EXCEPTIONS,
  RoundAnswers,
  seesAlike,
} from "../../../../services/rounds/round-answers";
import { renderRound } from "../../../../services/rounds/round-view";
import { secondsLeft } from "../../../../shared/format";
import {
  ALICE,
  BOB,
  IN_AN_HOUR,
  makeItem,
  makeSnapshot,
  membersOf,
  NOW,
  OWNER,
  profiles,
  STRANGER,
} from "../../support/fixtures";

const at = (ms: number) => new Date(NOW.getTime() + ms);

describe("RoundAnswers", () => {
  it("when any caller reads at any instant, then the answer is exactly what renderRound gives", () => {
    const snap = makeSnapshot({
      members: membersOf(ALICE, BOB),
      members_count: 2,
      favorites: { [BOB]: true },
    });
    const json = new RoundAnswers();
    fc.assert(
      fc.property(
        fc.constantFrom(OWNER, ALICE, BOB, STRANGER, "someone-else"),
        // From before the round's end to well after it, so the end itself is crossed.
        fc.integer({ min: -5_000, max: 2 * 3600_000 }),
        (caller, offset) => {
          const now = at(offset);
          expect(json.render(snap, caller, now).round).toEqual(renderRound(snap, caller, now));
        },
      ),
      { numRuns: 500, seed: 20260101 },
    );
  });

  it("when strangers read one after another, then the round is rendered once and only the seconds move", () => {
    const snap = makeSnapshot();
    const json = new RoundAnswers();
    const a = json.render(snap, STRANGER, NOW).round;
    const b = json.render(snap, "another-stranger", at(1_500)).round;
    expect(a).toMatchObject({ seconds_to_end: 3600 });
    expect(b).toMatchObject({ seconds_to_end: 3598 });
    expect(b).toEqual(renderRound(snap, "another-stranger", at(1_500)));
    // The rest is the one rendered for the first stranger, not rendered again.
    expect(b.item).toBe(a.item);
  });

  it("when the end time passes, then the shared answer is built again with the round ended", () => {
    const snap = makeSnapshot();
    const json = new RoundAnswers();
    expect(json.render(snap, STRANGER, NOW).round).toMatchObject({ status: "open", is_ended: false });
    const after = new Date(IN_AN_HOUR.getTime() + 1);
    expect(json.render(snap, STRANGER, after).round).toMatchObject({
      status: "ended",
      is_ended: true,
      seconds_to_end: 0,
    });
  });

  it("when the answer is read, then it says until when it holds: the next tick of seconds_to_end, or never", () => {
    const json = new RoundAnswers();
    expect(json.render(makeSnapshot(), STRANGER, at(250)).freshUntil).toBe(at(1_000).getTime());
    expect(json.render(makeSnapshot({ end_time: null }), STRANGER, NOW).freshUntil).toBeNull();
    expect(json.render(makeSnapshot({ is_ended: true }), STRANGER, NOW).freshUntil).toBeNull();
  });

  it("when two snapshots of one round differ (a join), then each gets its own answer", () => {
    const json = new RoundAnswers();
    const before = makeSnapshot({ members: membersOf(ALICE), members_count: 1, rev: 1 });
    const after = makeSnapshot({ members: membersOf(ALICE, BOB), members_count: 2, rev: 2 });
    expect(json.render(before, STRANGER, NOW).round).toMatchObject({ members_count: 1 });
    expect(json.render(after, STRANGER, NOW).round).toMatchObject({ members_count: 2 });
  });
});

describe("RoundAnswers: an answer for every caller but some", () => {
  it("when a stranger reads, then the answer says who else sees it otherwise: owner, members, favouriters", () => {
    const snap = makeSnapshot({ members: membersOf(ALICE), members_count: 1, favorites: { [BOB]: true } });
    const rendered = new RoundAnswers().render(snap, STRANGER, NOW);
    expect(new Set(rendered.sameForAllBut)).toEqual(new Set([OWNER, ALICE, BOB]));
  });

  it("when the owner, a member or a favouriter reads, then the answer is theirs alone", () => {
    const snap = makeSnapshot({ members: membersOf(ALICE), members_count: 1, favorites: { [BOB]: true } });
    for (const caller of [OWNER, ALICE, BOB]) {
      expect(new RoundAnswers().render(snap, caller, NOW).sameForAllBut).toBeUndefined();
    }
  });

  it("when more callers than the bound see it otherwise, then the answer is not offered to others", () => {
    const many = Object.fromEntries(
      Array.from({ length: SAME_FOR_ALL_MAX_EXCEPTIONS }, (_, i) => [`fan-${i}`, true as const]),
    );
    const rendered = new RoundAnswers().render(makeSnapshot({ favorites: many }), STRANGER, NOW);
    expect(rendered.sameForAllBut).toBeUndefined();
    expect(rendered.round).toMatchObject({ in_favorites: false });
  });
});

describe("RoundAnswers: an answer the gateway keeps and counts down", () => {
  it("when the rest is completed with secondsLeft at any later instant before `until`, then it is that instant's render", () => {
    const snap = makeSnapshot({ members: membersOf(ALICE), members_count: 1 });
    fc.assert(
      fc.property(
        fc.integer({ min: -5_000, max: 2 * 3600_000 }),
        fc.integer({ min: 0, max: 2 * 3600_000 }),
        (renderedAt, later) => {
          const rendered = new RoundAnswers().render(snap, STRANGER, at(renderedAt));
          const { to, until } = rendered.countdown!;
          const t = NOW.getTime() + renderedAt + later;
          if (until !== null && t >= until) return;
          const kept = { ...rendered.round, seconds_to_end: secondsLeft(to, t) };
          expect(kept).toEqual(renderRound(snap, "another-stranger", new Date(t)));
        },
      ),
      { numRuns: 500, seed: 20261126 },
    );
  });

  it("when the round has no end time, or is read by an insider, then nothing counts down", () => {
    const json = new RoundAnswers();
    expect(json.render(makeSnapshot({ end_time: null }), STRANGER, NOW).countdown).toBeUndefined();
    expect(json.render(makeSnapshot(), OWNER, NOW).countdown).toBeUndefined();
  });
});

describe("seesAlike", () => {
  it("when the caller is the owner, a member or has it in favourites, then they see it their own way", () => {
    const snap = makeSnapshot({ members: membersOf(ALICE), members_count: 1, favorites: { [BOB]: true } });
    expect(seesAlike(snap, OWNER)).toBe(false);
    expect(seesAlike(snap, ALICE)).toBe(false);
    expect(seesAlike(snap, BOB)).toBe(false);
    expect(seesAlike(snap, STRANGER)).toBe(true);
  });
});

describe("RoundAnswers: an event round's meeting link and password", () => {
  const MANAGER = "manager";
  const store = { id: 7, name: "Sound Shop", logo_url: null, is_blogger: false, currency: "RUB" };
  const withMeeting = makeItem({
    kind: "event",
    meeting_link: "https://meet.example.com/jazz",
    meeting_password: "pw",
    store: { ...store, manager_ids: [MANAGER] },
  });
  const snapOf = (item = withMeeting) =>
    makeSnapshot({ is_event: true, members: membersOf(ALICE), members_count: 1 }, profiles, item);

  it("when an outsider reads first, then the shared answer carries null and the managers are among its exceptions", () => {
    const json = new RoundAnswers();
    const snap = snapOf();
    const shared = json.render(snap, STRANGER, NOW);
    expect(shared.round).toMatchObject({ item: { meeting_link: null, meeting_password: null } });
    expect(new Set(shared.sameForAllBut)).toEqual(new Set([OWNER, ALICE, MANAGER]));
    // The insiders are rendered their own way, after the shared answer exists: they see the meeting.
    for (const insider of [OWNER, ALICE, MANAGER]) {
      const own = json.render(snap, insider, NOW);
      expect(own.sameForAllBut).toBeUndefined();
      expect(own.round).toMatchObject({
        item: { meeting_link: "https://meet.example.com/jazz", meeting_password: "pw" },
      });
    }
    // And the shared answer did not take theirs.
    expect(json.render(snap, "another", NOW).round).toMatchObject({ item: { meeting_link: null } });
  });

  it("when a manager reads first, then the answer is theirs alone and a later outsider gets null", () => {
    const json = new RoundAnswers();
    const snap = snapOf();
    expect(json.render(snap, MANAGER, NOW).round).toMatchObject({ item: { meeting_password: "pw" } });
    expect(json.render(snap, STRANGER, NOW).round).toMatchObject({ item: { meeting_password: null } });
  });

  it("when the item has no meeting, then the managers see the round as everyone does", () => {
    const plain = makeItem({ store: { ...store, manager_ids: [MANAGER] } });
    const snap = snapOf(plain);
    expect(seesAlike(snap, MANAGER)).toBe(true);
    expect(new RoundAnswers().render(snap, STRANGER, NOW).sameForAllBut).not.toContain(MANAGER);
  });
});
