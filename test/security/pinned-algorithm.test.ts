/**
 * What auditors try first against the running system (docs/security.md): one "when …, then …" per row of
 * the threat model, in both topologies (the `security` and `security-cluster` jest projects).
 */
import { JWT_ISSUER } from "../../shared/auth/access-token";
import { api, startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("the pinned algorithm (RFC 8725 §3.1)", () => {
  it('when a token names alg "none" and carries no signature, then 401 Token invalid', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: sys.manifest.users.alice.id, jti: "none-1", iat: now, exp: now + 600 };
    const token = `${b64url({ alg: "none", typ: "JWT" })}.${b64url({ ...claims, iss: JWT_ISSUER })}.`;
    const res = await api(sys, "GET", "/users/friends", { token });
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/^Token invalid: /);
  });
});
