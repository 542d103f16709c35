import { allowedMethodsOf } from "../../../../services/gateway/allowed-methods";

describe("allowedMethodsOf", () => {
  const allowed = allowedMethodsOf([
    "GET /rounds/:round_id",
    "HEAD /rounds/:round_id",
    "POST /rounds/:round_id/join",
    "GET /.well-known/jwks.json",
  ]);

  it("when a path matches aliases, then their methods are allowed, once each", () => {
    expect(allowed("/rounds/r-1")).toEqual(["GET", "HEAD"]);
    expect(allowed("/rounds/r-1/join")).toEqual(["POST"]);
    expect(allowed("/.well-known/jwks.json")).toEqual(["GET"]);
  });

  it("when a path differs only in case or by a trailing slash, then it matches as moleculer-web's aliases do", () => {
    expect(allowed("/ROUNDS/r-1/")).toEqual(["GET", "HEAD"]);
  });

  it("when a path matches no alias, spans two segments for one parameter or cannot be decoded, then nothing is allowed", () => {
    expect(allowed("/rounds")).toEqual([]);
    expect(allowed("/rounds/a/b")).toEqual([]);
    expect(allowed("/.well-known/jwksXjson")).toEqual([]);
    expect(allowed("/rounds/%E0%A4%A")).toEqual([]);
  });
});
