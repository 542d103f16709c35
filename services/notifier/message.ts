/**
 * The FCM message of a multicast request. FCM data payloads carry strings only: numbers and booleans in
 * `keys` are turned into their text ("3", "true"); anything else never passes the schema. The whole
 * notification and data must stay under FCM's 4 KB payload limit (checked here, as a 422).
 */
import type { SendMulticastParams } from "../../shared/contracts/notifier";
import type { ValidationIssue } from "../../shared/errors";

export interface PushMessage {
  notification: { title: string; body?: string; imageUrl?: string };
  data?: Record<string, string>;
}

/** FCM refuses these data keys, and any starting with "google" or "gcm". */
const RESERVED = new Set(["from", "message_type", "collapse_key", "notification", "priority", "to"]);

export const FCM_PAYLOAD_LIMIT = 4000;

export function buildMessage(
  p: Pick<SendMulticastParams, "title" | "desc" | "picture" | "keys">,
): PushMessage {
  const notification: PushMessage["notification"] = { title: p.title };
  if (p.desc) notification.body = p.desc;
  if (p.picture) notification.imageUrl = p.picture;
  const entries = Object.entries(p.keys ?? {});
  return entries.length > 0
    ? { notification, data: Object.fromEntries(entries.map(([k, v]) => [k, String(v)])) }
    : { notification };
}

export function checkMessage(
  p: Pick<SendMulticastParams, "title" | "desc" | "picture" | "keys">,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const key of Object.keys(p.keys ?? {})) {
    if (RESERVED.has(key) || /^(google|gcm)/.test(key)) {
      issues.push({
        type: "value_error",
        loc: ["keys", key],
        msg: `Value error, '${key}' is a reserved FCM data key`,
        input: key,
      });
    }
  }
  const size = Buffer.byteLength(JSON.stringify(buildMessage(p)));
  if (size > FCM_PAYLOAD_LIMIT) {
    issues.push({
      type: "value_error",
      loc: [],
      msg: `Value error, title, desc, picture and keys take ${size} bytes; FCM allows ${FCM_PAYLOAD_LIMIT}`,
      input: null,
    });
  }
  return issues;
}
