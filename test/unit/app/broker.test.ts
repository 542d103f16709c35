/**
 * The broker retries a call that failed with a retryable error (a timeout, a node lost) on another node.
 * That is right for reads and the idempotent join, and wrong for anything that creates or appends: a
 * retried refresh would look like token reuse and revoke the family; a retried chunk would corrupt a
 * picture. These actions must opt out.
 */
import { serviceSchema } from "../../../app/broker";

const notIdempotent = [
  "auth.refresh",
  "auth.issueTokens",
  "auth.createApiKey",
  "users.create",
  "stores.createStore",
  "stores.createItem",
  "stores.stageBegin",
  "stores.stageChunk",
  "stores.stageEnd",
  "stores.createEvent",
  "rounds.create",
  "notifier.sendMulticast",
  "notifier.stageRecipients",
];

const actionOf = (name: string) => {
  const [service, action] = name.split(".");
  return (serviceSchema(service).actions as Record<string, any>)[action];
};

describe("retry policy", () => {
  it.each(notIdempotent)(
    "when %s fails with a retryable error, then the broker does not repeat it",
    (name) => {
      expect(actionOf(name).retryPolicy).toEqual({ enabled: false });
    },
  );

  it.each([
    "rounds.get",
    "rounds.join",
    "users.profiles",
    "stores.item",
    "settings.appSettings",
    "auth.verifyAccessToken",
  ])(
    "when %s (a read or an idempotent write) fails with a retryable error, then the broker may repeat it",
    (name) => {
      expect(actionOf(name).retryPolicy).toBeUndefined();
    },
  );
});
