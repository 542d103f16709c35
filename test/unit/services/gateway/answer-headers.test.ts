import { routeAnswerHeaders } from "../../../../services/gateway/answer-headers";
import { routeByAction, routes } from "../../../../services/gateway/routes";

describe("routeAnswerHeaders", () => {
  it("when a route authenticates (bearer or API key), then its answers say Cache-Control: no-store", () => {
    for (const spec of routes.filter((r) => r.auth !== "none")) {
      expect([spec.action, Object.fromEntries(routeAnswerHeaders(spec))["Cache-Control"]]).toEqual([
        spec.action,
        "no-store",
      ]);
    }
  });

  it("when the route answers the token set, then Pragma: no-cache too (RFC 6749 §5.1)", () => {
    const refresh = routeByAction.get("auth.refresh");
    expect(refresh && Object.fromEntries(routeAnswerHeaders(refresh))).toEqual({
      "Cache-Control": "no-store",
      Pragma: "no-cache",
    });
  });

  it("when the route takes no credentials (media), then it adds nothing: media keep their own long cache", () => {
    const media = routeByAction.get("stores.media");
    expect(media && routeAnswerHeaders(media)).toEqual([]);
  });
});
