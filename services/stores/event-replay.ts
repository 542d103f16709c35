/**
 * When a store event's request is "the same" as the one that created an event under the same
 * Idempotency-Key (docs/decisions/0023): the same store, every text field with the same exact value
 * (the order of the parts does not matter), and a picture with the same bytes (its SHA-256, computed
 * while it was staged). Anything else is another request, refused 422 at the key.
 */
import { createHash } from "node:crypto";
import { RequestValidationError } from "../../shared/errors";

/** The fingerprint of a request, recorded on the event it created. */
export function eventRequestHash(
  storeId: number,
  fields: Record<string, string>,
  picture: { sha256?: string } | null,
): string {
  if (picture && !picture.sha256)
    throw new Error("An upload with an Idempotency-Key was staged without its hash");
  const entries = Object.keys(fields)
    .sort()
    .map((name) => [name, fields[name]]);
  const text = JSON.stringify(["store-event/1", storeId, entries, picture?.sha256 ?? null]);
  return createHash("sha256").update(text).digest("hex");
}

/** 422 at the header: the key already made an event from another request. */
export function keyReused(key: string): RequestValidationError {
  return new RequestValidationError([
    {
      type: "value_error",
      loc: ["idempotency_key"],
      msg: "Value error, Idempotency-Key was already used with a different request",
      input: key,
    },
  ]);
}
