/** Contracts of the notifier: multicast requests (§4.8) and their jobs. */
import { Type, type Static } from "@sinclair/typebox";
import { DateTime, Nullable } from "./common";

/** Hard ceiling of the schema; MULTICAST_MAX_RECIPIENTS may set a lower cap. */
export const MAX_RECIPIENTS_CEILING = 1_000_000;

/**
 * Most user ids in one page of recipients, as staged over the transporter and as stored (a page is also
 * bounded by its bytes, shared/contracts/paging.ts: 256 KiB of JSON, far below MongoDB's 16 MB).
 */
export const RECIPIENT_PAGE_MAX = 10_000;

const UserIdItem = Type.String({ minLength: 1, maxLength: 64 });

export const SendMulticastParams = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 200 }),
  desc: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  user_ids: Type.Array(UserIdItem, {
    minItems: 1,
    maxItems: MAX_RECIPIENTS_CEILING,
    uniqueItems: true,
  }),
  picture: Type.Optional(Nullable(Type.String({ maxLength: 2048, pattern: "^https?://[^\\s]+$" }))),
  keys: Type.Optional(
    Nullable(
      Type.Record(
        Type.String({ minLength: 1, maxLength: 64 }),
        Type.Union([Type.String({ maxLength: 1024 }), Type.Number(), Type.Boolean()]),
        { maxProperties: 50 },
      ),
    ),
  ),
  /** From the Idempotency-Key header. */
  idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});
export type SendMulticastParams = Static<typeof SendMulticastParams>;

/** A recipient set's id: the job it is for, then its own random part (`job_<24 hex>.<16 hex>`). */
export const RecipientSetId = Type.String({ pattern: "^job_[0-9a-f]{24}\\.[0-9a-f]{16}$" });

/**
 * `notifier.sendMulticast` as called: the request, and for a list too long for one packet the pages
 * staged before it with `notifier.stageRecipients` (`user_ids` is then the last page). Never read from a
 * client: the gateway sets or removes `staged` itself.
 */
export const SendMulticastCall = Type.Composite([
  SendMulticastParams,
  Type.Object({
    staged: Type.Optional(
      Type.Object({
        set_id: RecipientSetId,
        /** How many pages were staged before this call (indexes 0 … pages-1); `user_ids` is page `pages`. */
        pages: Type.Integer({ minimum: 1, maximum: MAX_RECIPIENTS_CEILING }),
      }),
    ),
  }),
]);
export type SendMulticastCall = Static<typeof SendMulticastCall>;

/** One page of a multicast's recipients, staged ahead of the `sendMulticast` call that names them. */
export const StageRecipientsParams = Type.Object({
  /** Absent on the first page: the notifier opens a set (for the job the request will make) and names it. */
  set_id: Type.Optional(RecipientSetId),
  /** The request's Idempotency-Key (first page): the set belongs to the job the key names. */
  idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  /** How many user ids the whole request names: checked against MULTICAST_MAX_RECIPIENTS on the first page. */
  total: Type.Integer({ minimum: 1, maximum: MAX_RECIPIENTS_CEILING }),
  index: Type.Integer({ minimum: 0, maximum: MAX_RECIPIENTS_CEILING }),
  user_ids: Type.Array(UserIdItem, { minItems: 1, maxItems: RECIPIENT_PAGE_MAX, uniqueItems: true }),
});
export type StageRecipientsParams = Static<typeof StageRecipientsParams>;
export interface StagedRecipients {
  set_id: string;
}

export const JobStatus = Type.Unsafe<"queued" | "sending" | "done" | "failed">({
  type: "string",
  enum: ["queued", "sending", "done", "failed"],
});
export type JobStatus = Static<typeof JobStatus>;

export const MulticastAccepted = Type.Object({
  id: Type.String(),
  status: JobStatus,
  recipients: Type.Integer(),
});
export type MulticastAccepted = Static<typeof MulticastAccepted>;

export const JobParams = Type.Object({ job_id: Type.String({ minLength: 1, maxLength: 64 }) });
export type JobParams = Static<typeof JobParams>;

/** GET /notifications/{job_id} (outside the spec). */
export const NotificationJob = Type.Object({
  id: Type.String(),
  status: JobStatus,
  recipients: Type.Integer(),
  users_without_devices: Type.Integer(),
  devices: Type.Integer(),
  sent: Type.Integer(),
  failed: Type.Integer(),
  pruned: Type.Integer(),
  created_at: DateTime,
  started_at: Nullable(DateTime),
  finished_at: Nullable(DateTime),
  error: Nullable(Type.String()),
});
export type NotificationJob = Static<typeof NotificationJob>;

/** What the durable channel carries: only the job id; the job itself is in the store. */
export interface JobMessage {
  job_id: string;
}
