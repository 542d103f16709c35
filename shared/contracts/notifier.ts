/** Contracts of the notifier: multicast requests (§4.8) and their jobs. */
import { Type, type Static } from "@sinclair/typebox";
import { DateTime, Nullable } from "./common";

/** Hard ceiling of the schema; MULTICAST_MAX_RECIPIENTS may set a lower cap. */
export const MAX_RECIPIENTS_CEILING = 1_000_000;

export const SendMulticastParams = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 200 }),
  desc: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  user_ids: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
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
