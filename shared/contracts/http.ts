/** Response bodies of the spec that are not resources: errors (§7). */
import { Type, type Static } from "@sinclair/typebox";

/** 401, 404, 409, 413, 5xx …: `{"detail": "..."}`. */
export const ErrorBody = Type.Object({ detail: Type.String() }, { additionalProperties: false });
export type ErrorBody = Static<typeof ErrorBody>;

export const ValidationIssueSchema = Type.Object({
  type: Type.String(),
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { minItems: 1 }),
  msg: Type.String(),
  input: Type.Optional(Type.Unknown()),
});

/** 422: `{"detail": [{"type", "loc", "msg", "input"}]}`, FastAPI's shape. */
export const ValidationErrorBody = Type.Object(
  { detail: Type.Array(ValidationIssueSchema, { minItems: 1 }) },
  { additionalProperties: false },
);
export type ValidationErrorBody = Static<typeof ValidationErrorBody>;
