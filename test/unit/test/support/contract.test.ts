import { templatePattern } from "../../../support/contract";

describe("the contract check's path patterns", () => {
  it("when matched exactly, then only the template's own path in its own case matches", () => {
    const re = templatePattern("/rounds/{round_id}/join");
    expect(re.test("/rounds/7/join")).toBe(true);
    expect(re.test("/rounds/7/join/")).toBe(false);
    expect(re.test("/Rounds/7/join")).toBe(false);
    expect(re.test("/rounds/7/8/join")).toBe(false);
  });

  it("when matched as routed, then either case and up to two trailing slashes match, as moleculer-web routes", () => {
    const re = templatePattern("/rounds/{round_id}/join", true);
    for (const path of ["/rounds/7/join", "/ROUNDS/7/Join", "/rounds/7/join/", "/rounds/7/join//"]) {
      expect(re.test(path)).toBe(true);
    }
    expect(re.test("/rounds/7/join///")).toBe(false);
    expect(re.test("/rounds/7/joint")).toBe(false);
  });
});
