/**
 * Error classes that cross service boundaries. Each carries an HTTP status (`code`) and a type constant;
 * the gateway turns them into the spec's bodies in one place (services/gateway/http-errors.ts). Only
 * `code`, `type`, `message` and `data` survive the transporter, so nothing here relies on `instanceof`
 * on the receiving side.
 */
import { Errors } from "moleculer";
import { boundIssues } from "./bounded-input";

export { boundedInput, boundIssues, MAX_ISSUES } from "./bounded-input";

export const ErrorType = {
  NOT_AUTHENTICATED: "NOT_AUTHENTICATED",
  TOKEN_INVALID: "TOKEN_INVALID",
  USER_REMOVED: "USER_REMOVED",
  FORBIDDEN: "FORBIDDEN",
  NOT_FOUND: "NOT_FOUND",
  CONFLICT: "CONFLICT",
  VALIDATION: "VALIDATION_ERROR",
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  BAD_REQUEST: "BAD_REQUEST",
  UNSUPPORTED_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  RATE_LIMITED: "RATE_LIMITED",
  BODY_TIMEOUT: "BODY_TIMEOUT",
  UPLOADS_BUSY: "UPLOADS_BUSY",
  UPLOAD_INTERRUPTED: "UPLOAD_INTERRUPTED",
  STORE_WRITE_FAILED: "STORE_WRITE_FAILED",
  REQUEST_ABANDONED: "REQUEST_ABANDONED",
} as const;
export type ErrorType = (typeof ErrorType)[keyof typeof ErrorType];

const errorTypes = new Set<unknown>(Object.values(ErrorType));

/**
 * Whether an error's `type` is one of ours: an answer the system gives on purpose (a 401, a 409, every
 * upload slot taken: 503), as opposed to a fault. The type survives the transporter; the class does not.
 */
export const isOwnErrorType = (type: unknown): type is ErrorType => errorTypes.has(type);

/** One entry of a 422 body, FastAPI's shape. `loc` is completed with "body"/"path"/"query" by the gateway. */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
}

export class AppError extends Errors.MoleculerClientError {
  constructor(message: string, status: number, type: ErrorType, data?: unknown) {
    // A client error is an answer, not a fault: its stack is never read, and capturing it (twice, in
    // Moleculer's base class) was the costliest part of refusing 1,900 joins into a full round.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message, status, type, data);
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.name = new.target.name;
  }
}

export class NotAuthenticatedError extends AppError {
  constructor() {
    super("Not authenticated", 401, ErrorType.NOT_AUTHENTICATED);
  }
}

export class TokenInvalidError extends AppError {
  constructor(reason: string) {
    super(`Token invalid: ${reason}`, 401, ErrorType.TOKEN_INVALID);
  }
}

export class UserRemovedError extends AppError {
  constructor() {
    super("User removed", 401, ErrorType.USER_REMOVED);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = "Not enough permissions") {
    super(message, 403, ErrorType.FORBIDDEN);
  }
}

/** A request body stopped arriving, or did not arrive in time: answered 408, then the connection is closed. */
export class BodyTimeoutError extends AppError {
  constructor(message: string) {
    super(message, 408, ErrorType.BODY_TIMEOUT);
  }
}

/** Every upload slot (of the gateway, or of this caller) is taken: 503 with Retry-After. */
export class UploadsBusyError extends AppError {
  constructor(message: string, retryAfterSeconds: number) {
    super(message, 503, ErrorType.UPLOADS_BUSY, { retryAfter: retryAfterSeconds });
  }
}

/**
 * A chunk or the end of an upload reached a stores process that holds no such open upload: the one that
 * began it restarted, or abandoned it after IDLE_MS of silence. Nothing was kept; the client sends the
 * whole upload again (503 with Retry-After), rather than meeting a 500 for what is a passing fault.
 */
export class UploadInterruptedError extends AppError {
  constructor() {
    super(
      "The upload was interrupted on the server and nothing was kept; send it again",
      503,
      ErrorType.UPLOAD_INTERRUPTED,
      { retryAfter: 1 },
    );
  }
}

/**
 * The gateway already answered the request (504 at its deadline) or its client closed the connection
 * before the service call: the call is not made, since nobody would read its answer and a change it
 * made (a refresh's rotation, a join) would be one the client cannot know of. Never seen by a client.
 */
export class RequestAbandonedError extends AppError {
  constructor() {
    super(
      "The request was answered or its client left before the service was called",
      503,
      ErrorType.REQUEST_ABANDONED,
    );
  }
}

export class NotFoundError extends AppError {
  constructor(message: string) {
    super(message, 404, ErrorType.NOT_FOUND);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(message, 409, ErrorType.CONFLICT);
  }
}

/**
 * A request with the same Idempotency-Key is still being handled (a retry sent before the first attempt
 * was answered): 409 with Retry-After, so the client asks again once it has been (docs/decisions/0023).
 */
export class IdempotencyKeyBusyError extends AppError {
  constructor(retryAfterSeconds = 1) {
    super(
      "A request with this Idempotency-Key is still in progress; retry once it has been answered",
      409,
      ErrorType.CONFLICT,
      { retryAfter: retryAfterSeconds },
    );
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message: string) {
    super(message, 413, ErrorType.PAYLOAD_TOO_LARGE);
  }
}

export class BadRequestError extends AppError {
  constructor(message: string) {
    super(message, 400, ErrorType.BAD_REQUEST);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(message: string) {
    super(message, 415, ErrorType.UNSUPPORTED_MEDIA_TYPE);
  }
}

/**
 * A 422 raised by domain code (e.g. an attribute id the item does not have). Same type and data shape as
 * the broker validator's errors, so the gateway maps both alike.
 */
export class RequestValidationError extends Errors.ValidationError {
  constructor(issues: ValidationIssue[]) {
    super("Request validation failed", ErrorType.VALIDATION, boundIssues(issues));
    this.name = "RequestValidationError";
  }
}

/**
 * The store cannot be reached now, after the MongoDB driver's own retry: no primary (a replica-set
 * election, a lost network, a shutdown). Answered 503 with `Retry-After` by the gateway, so the client
 * knows it may try again (which operations that is safe for: docs/decisions/0014). Not retried by
 * the broker: the driver already did, and every node reaches the same store.
 */
export class StoreUnavailableError extends Errors.MoleculerServerError {
  constructor(cause: unknown) {
    const reason = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super("Store unavailable", 503, "STORE_UNAVAILABLE", { reason });
    this.name = "StoreUnavailableError";
    this.retryable = false;
  }
}

/** Why the store refused a write: it is full (or over a quota), or it cannot be written at all. */
export type StoreWriteReason = "full" | "unwritable";

/**
 * The store could not keep a change: its disk is full or over quota, or it cannot be written (a
 * read-only or failing file system, no permission, MongoDB refusing the write for such a reason).
 * Answered 507 Insufficient Storage with a detail that says so, not 503: it does not pass by itself in
 * a second or two, and an operator has to act (docs/decisions/0079-store-write-errors.md). The detail
 * names neither the file nor the collection (they are in the one log line and in the metric's labels).
 * Not retried by the broker, and not held against the node by the circuit breaker: every node of the
 * service writes to the same store.
 */
export class StoreWriteError extends AppError {
  constructor(
    reason: StoreWriteReason,
    /** The collection, and the file system's or MongoDB's code (ENOSPC, EIO, 14031…). */
    info: { store: string; code: string },
  ) {
    super(
      reason === "full"
        ? "Insufficient storage: the server's storage is full, so the change could not be saved"
        : "Insufficient storage: the server's storage cannot be written, so the change could not be saved",
      507,
      ErrorType.STORE_WRITE_FAILED,
      { reason, ...info },
    );
  }
}

/** A bad setting at start-up: the process must not start. Never reaches a client. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}
