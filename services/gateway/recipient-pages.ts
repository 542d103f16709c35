/**
 * A multicast's `user_ids` may name up to 1,000,000 users: tens of MB, where nats-server takes packets of
 * 1 MB by default. A list that fits one page (shared/contracts/paging: 10,000 ids and 256 KiB) goes with
 * the request as it is; a longer one is checked whole here (the same schema the notifier's validator
 * applies, so the same 422s), then sent ahead page by page (`notifier.stageRecipients`, one acknowledged
 * call each, so neither side holds more than the gateway already read), and the request itself carries
 * the last page and names the staged ones. docs/decisions/0032-job-queue.md.
 *
 * Nothing here holds the event loop for long: a million ids checked by ajv in one call hold it past the
 * time other nodes wait before they give up on a silent process (measured in decision 0032; the
 * wait: decision 0042). The list's items are checked a page at a time, with a turn of the event loop
 * between pages, and pages are cut as they are sent.
 */
import { Type, type TSchema } from "@sinclair/typebox";
import type { Config } from "../../shared/config";
import {
  RECIPIENT_PAGE_MAX,
  SendMulticastParams,
  type StageRecipientsParams,
  type StagedRecipients,
} from "../../shared/contracts/notifier";
import { eachPage, fitsOnePage } from "../../shared/contracts/paging";
import { MAX_ISSUES, RequestValidationError, type ValidationIssue } from "../../shared/errors";
import { check, compileSchema, toIssues } from "../../shared/validation";
import { JSON_BODY_LIMIT_BYTES } from "./routes";

/**
 * Bytes a multicast's body may take: JSON_BODY_LIMIT_BYTES, or more when MULTICAST_MAX_RECIPIENTS asks for
 * it (80 bytes per id: 64 characters, quotes, a comma and some white space), so any list the cap allows
 * is read.
 */
export const BYTES_PER_RECIPIENT = 80;

export function multicastBodyLimit(config: Pick<Config, "multicastMaxRecipients">): number {
  return Math.max(JSON_BODY_LIMIT_BYTES, config.multicastMaxRecipients * BYTES_PER_RECIPIENT + 64 * 1024);
}

const listSchema = SendMulticastParams.properties.user_ids;
const validId = compileSchema(listSchema.items);
/** The list's own bounds (type, length), without its items: checked by ajv at once, in no time. */
const { items: _items, uniqueItems: _unique, ...listBounds } = listSchema;
const ListShape = Type.Object({ user_ids: listBounds as TSchema });
/** Where each field stands in the schema, to give issues in the order a whole check would. */
const fieldOrder = Object.keys(SendMulticastParams.properties);

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The issues a check of the whole request against SendMulticastParams gives, for a long list: the other
 * fields and the list's bounds by ajv at once; each id by the schema's own item check and the ids'
 * uniqueness (as ajv words it: scanning from the end, the first id met again), a page at a time.
 */
export async function checkLongRequest(
  request: Record<string, unknown>,
  ids: unknown[],
): Promise<ValidationIssue[]> {
  const others = check(SendMulticastParams, { ...request, user_ids: [] });
  const issues = others === true ? [] : others.filter((i) => i.loc[0] !== "user_ids");
  const shape = check(ListShape, { user_ids: ids });
  if (shape !== true) issues.push(...shape);
  for (let i = 0; i < ids.length && issues.length < MAX_ISSUES; i++) {
    if (!validId(ids[i])) {
      for (const issue of toIssues(validId.errors))
        issues.push({ ...issue, loc: ["user_ids", i, ...issue.loc] });
    }
    if (i % RECIPIENT_PAGE_MAX === RECIPIENT_PAGE_MAX - 1) await nextTurn();
  }
  const seen = new Map<string, number>();
  for (let i = ids.length - 1; i >= 0; i--) {
    const id = ids[i];
    if (typeof id !== "string") continue;
    const j = seen.get(id);
    if (j !== undefined) {
      issues.push({
        type: "value_error",
        loc: ["user_ids"],
        msg: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
        input: ids,
      });
      break;
    }
    seen.set(id, i);
    if (i % RECIPIENT_PAGE_MAX === 0) await nextTurn();
  }
  const rank = (issue: ValidationIssue) => fieldOrder.indexOf(String(issue.loc[0]));
  return issues.sort((a, b) => rank(a) - rank(b)).slice(0, MAX_ISSUES);
}

/**
 * The params of `notifier.sendMulticast` for a request's params: as they are when the list fits one page,
 * else with every page but the last staged and `staged` naming them. `staged` never comes from a client.
 */
export async function stageRecipientPages(
  stage: (params: StageRecipientsParams) => Promise<StagedRecipients>,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { staged: _fromClient, ...request } = params;
  const ids = request.user_ids;
  if (!Array.isArray(ids) || fitsOnePage(ids, RECIPIENT_PAGE_MAX)) return request;
  const issues = await checkLongRequest(request, ids);
  if (issues.length > 0) throw new RequestValidationError(issues);
  const key = typeof request.idempotency_key === "string" ? request.idempotency_key : undefined;
  let setId: string | undefined;
  let index = 0;
  let last: string[] = [];
  for (const page of eachPage(ids as string[], RECIPIENT_PAGE_MAX)) {
    if (last.length > 0) {
      const opened = await stage({
        ...(setId ? { set_id: setId } : key ? { idempotency_key: key } : {}),
        total: ids.length,
        index: index++,
        user_ids: last,
      });
      setId = opened.set_id;
    }
    last = page;
  }
  return { ...request, user_ids: last, staged: { set_id: setId, pages: index } };
}
