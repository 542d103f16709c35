/**
 * The FCM message of a multicast request. FCM data payloads carry strings only: numbers and booleans in
 * `keys` are turned into their text ("3", "true"); anything else never passes the schema. The whole
 * notification and data must stay under FCM's 4 KB payload limit (checked here, as a 422).
 *
 * A key's name is any string FCM does not reserve: `a.b`, `$x`, `constructor`, `__proto__` reach the
 * device as they came (docs/decisions/0028-multicast-request.md). The data object has no prototype,
 * so no name is ever an accessor (`__proto__` is an own entry like any other); firebase-admin copies
 * plain objects by assignment, which would drop a `__proto__` entry, and passes any other object on
 * as it is (a test through a local FCM shows every name arriving).
 */
import type { SendMulticastParams } from "../../shared/contracts/notifier";
import type { ValidationIssue } from "../../shared/errors";
import type { KeyPair } from "./jobs.repository";

export interface PushMessage {
  notification: { title: string; body?: string; imageUrl?: string };
  data?: Record<string, string>;
}

interface MessageParts extends Pick<SendMulticastParams, "title" | "desc" | "picture" | "keys"> {
  /** `keys` as [name, value] pairs, in order (a job's, services/notifier/jobs.repository); else `keys`. */
  keyPairs?: readonly KeyPair[];
}

/** The data payload: every pair as an own entry of an object without a prototype. */
function dataOf(pairs: readonly KeyPair[]): Record<string, string> {
  const data = Object.create(null) as Record<string, string>;
  for (const [name, value] of pairs) data[name] = String(value);
  return data;
}

/** FCM refuses these data keys, and any starting with "google" or "gcm". */
const RESERVED = new Set(["from", "message_type", "collapse_key", "notification", "priority", "to"]);

export const FCM_PAYLOAD_LIMIT = 4000;

export function buildMessage(p: MessageParts): PushMessage {
  const notification: PushMessage["notification"] = { title: p.title };
  if (p.desc) notification.body = p.desc;
  if (p.picture) notification.imageUrl = p.picture;
  const pairs = p.keyPairs ?? Object.entries(p.keys ?? {});
  return pairs.length > 0 ? { notification, data: dataOf(pairs) } : { notification };
}

export function checkMessage(p: MessageParts): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const keyPairs = Object.entries(p.keys ?? {});
  for (const [key] of keyPairs) {
    if (RESERVED.has(key) || /^(google|gcm)/.test(key)) {
      issues.push({
        type: "value_error",
        loc: ["keys", key],
        msg: `Value error, '${key}' is a reserved FCM data key`,
        input: key,
      });
    }
  }
  const size = Buffer.byteLength(JSON.stringify(buildMessage({ ...p, keyPairs })));
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
