/**
 * An event round's meeting link and password, as an outsider tries to read them (docs/security.md), in
 * both topologies: only the round's owner, its members and its store's managers see them; everyone
 * else reads null, also from the answer the gateway keeps for all callers (docs/decisions/0019).
 */
import { MEETING, meetingAsSeenBy, meetingRound, type MeetingRound } from "../support/event-rounds";
import { api, newUser, startSystem, type System } from "../support/system";

let sys: System;
let round: MeetingRound;
beforeAll(async () => {
  sys = await startSystem();
  round = await meetingRound(sys);
}, 120_000);
afterAll(() => sys.stop());

const HIDDEN = { meeting_link: null, meeting_password: null };

describe("an event round's meeting link and password", () => {
  it("when an outsider reads an event round, then meeting_link and meeting_password are null", async () => {
    const outsider = await newUser(sys.broker, "outsider");
    expect(await meetingAsSeenBy(sys, round.roundId, outsider)).toEqual(HIDDEN);
    // Read again (now from what the gateway keeps for every caller but the insiders).
    expect(await meetingAsSeenBy(sys, round.roundId, await newUser(sys.broker, "outsider"))).toEqual(HIDDEN);
  });

  it("when a member/owner/manager reads it, then they are shown", async () => {
    expect(await meetingAsSeenBy(sys, round.roundId, round.owner)).toEqual(MEETING);
    expect(await meetingAsSeenBy(sys, round.roundId, round.manager)).toEqual(MEETING);
    const member = await newUser(sys.broker, "member");
    const joined = await api(sys, "POST", `/rounds/${round.roundId}/join`, {
      token: member.access_token,
      json: { attributes: [] },
    });
    expect(joined.status).toBe(200);
    expect(joined.body.item).toMatchObject(MEETING);
    expect(await meetingAsSeenBy(sys, round.roundId, member)).toEqual(MEETING);
  });

  it("when an outsider reads after an insider, then still null", async () => {
    await meetingAsSeenBy(sys, round.roundId, round.manager);
    expect(await meetingAsSeenBy(sys, round.roundId, await newUser(sys.broker, "late"))).toEqual(HIDDEN);
  });
});
