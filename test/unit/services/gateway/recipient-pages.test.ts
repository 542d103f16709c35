/**
 * The gateway's side of a long multicast (services/gateway/recipient-pages.ts): a list that fits one page
 * goes as it is, a longer one is checked whole, then staged page by page before the request names it;
 * and the body limit grows with MULTICAST_MAX_RECIPIENTS.
 */
import type { StageRecipientsParams } from "../../../../shared/contracts/notifier";
import { RECIPIENT_PAGE_MAX } from "../../../../shared/contracts/notifier";
import { PAGE_BYTES } from "../../../../shared/contracts/paging";
import { MAX_ISSUES, RequestValidationError } from "../../../../shared/errors";
import { check } from "../../../../shared/validation";
import { JSON_BODY_LIMIT_BYTES } from "../../../../services/gateway/routes";
import { SendMulticastParams } from "../../../../shared/contracts/notifier";
import {
  checkLongRequest,
  multicastBodyLimit,
  stageRecipientPages,
} from "../../../../services/gateway/recipient-pages";

function stager() {
  const calls: StageRecipientsParams[] = [];
  const stage = async (p: StageRecipientsParams) => {
    calls.push(p);
    return { set_id: `job_${"a".repeat(24)}.${"b".repeat(16)}` };
  };
  return { calls, stage };
}

describe("stageRecipientPages", () => {
  it("when the list fits one page, then the params go as they are, without a `staged` a client sent", async () => {
    const { calls, stage } = stager();
    const params = { title: "t", user_ids: ["a", "b"], staged: { set_id: "forged", pages: 9 } };
    await expect(stageRecipientPages(stage, params)).resolves.toEqual({ title: "t", user_ids: ["a", "b"] });
    expect(calls).toEqual([]);
  });

  it("when user_ids is not a list, then the params go as they are, for the action's validator to answer", async () => {
    const { calls, stage } = stager();
    await expect(stageRecipientPages(stage, { title: "t", user_ids: "a" })).resolves.toEqual({
      title: "t",
      user_ids: "a",
    });
    expect(calls).toEqual([]);
  });

  it("when the list is longer than a page, then every page but the last is staged in order and the request carries the last", async () => {
    const { calls, stage } = stager();
    const ids = Array.from({ length: 2 * RECIPIENT_PAGE_MAX + 7 }, (_, i) => `u${i}`);
    const out = await stageRecipientPages(stage, { title: "t", user_ids: ids, idempotency_key: "k" });
    expect(calls.map((c) => c.index)).toEqual([0, 1]);
    expect(calls[0]).toEqual({
      idempotency_key: "k",
      total: ids.length,
      index: 0,
      user_ids: ids.slice(0, RECIPIENT_PAGE_MAX),
    });
    expect(calls[1]).toMatchObject({ set_id: `job_${"a".repeat(24)}.${"b".repeat(16)}`, index: 1 });
    expect(calls[1]).not.toHaveProperty("idempotency_key");
    expect(out).toEqual({
      title: "t",
      idempotency_key: "k",
      user_ids: ids.slice(2 * RECIPIENT_PAGE_MAX),
      staged: { set_id: `job_${"a".repeat(24)}.${"b".repeat(16)}`, pages: 2 },
    });
    for (const c of calls) expect(Buffer.byteLength(JSON.stringify(c))).toBeLessThan(PAGE_BYTES + 1024);
  });

  it("when a long list breaks the schema, then the whole request's 422 comes before anything is staged", async () => {
    const { calls, stage } = stager();
    const ids = Array.from({ length: RECIPIENT_PAGE_MAX + 1 }, (_, i) => `u${i}`);
    ids[RECIPIENT_PAGE_MAX] = "u0"; // a duplicate, across what would be two pages
    const err = await stageRecipientPages(stage, { title: "", user_ids: ids }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestValidationError);
    expect((err as RequestValidationError).data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ["title"], type: "string_too_short" }),
        expect.objectContaining({ loc: ["user_ids"] }),
      ]),
    );
    expect(calls).toEqual([]);
  });
});

describe("checkLongRequest", () => {
  const sorted = (issues: unknown[]) => issues.map((i) => JSON.stringify(i)).sort();

  it.each([
    ["a valid request", { title: "t", keys: { a: 1 } }, ["a", "b", "c"]],
    [
      "bad fields and bad ids",
      { title: "", picture: "ftp://x", keys: { a: { b: 1 } } },
      ["a", 7, "", "x".repeat(65), null],
    ],
    ["a duplicate", { title: "t" }, ["a", "b", "c", "b", "a", "d"]],
    ["duplicates among bad ids", { title: "t" }, [1, "a", 1, "a", "", ""]],
    ["a list over the ceiling", { title: "t" }, Array.from({ length: 1_000_001 }, (_, i) => `u${i}`)],
  ])(
    "when the request has %s, then the issues are those of a whole check by the schema",
    async (_label, fields, ids) => {
      const request = { ...fields, user_ids: ids };
      const whole = check(SendMulticastParams, request);
      expect(sorted(await checkLongRequest(request, ids))).toEqual(sorted(whole === true ? [] : whole));
    },
  );

  it("when a long list has many bad ids, then the 422 stops at the bound on entries, the first at its index", async () => {
    const { calls, stage } = stager();
    const ids: unknown[] = Array.from({ length: 2 * RECIPIENT_PAGE_MAX }, (_, i) => `u${i}`);
    for (let i = 15_000; i < ids.length; i++) ids[i] = i;
    const err = await stageRecipientPages(stage, { title: "t", user_ids: ids }).catch((e: unknown) => e);
    const issues = (err as RequestValidationError).data as { loc: unknown[]; type: string }[];
    expect(issues).toHaveLength(MAX_ISSUES);
    expect(issues[0]).toEqual(expect.objectContaining({ loc: ["user_ids", 15_000], type: "string_type" }));
    expect(calls).toEqual([]);
  });
});

describe("multicastBodyLimit", () => {
  it("when the cap is the default, then the JSON body limit rules; at the ceiling, 80 bytes an id", () => {
    expect(multicastBodyLimit({ multicastMaxRecipients: 100_000 })).toBe(JSON_BODY_LIMIT_BYTES);
    expect(multicastBodyLimit({ multicastMaxRecipients: 1_000_000 })).toBe(80_000_000 + 64 * 1024);
  });
});
