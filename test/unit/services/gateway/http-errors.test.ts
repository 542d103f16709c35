import { Errors } from "moleculer";
import { toFastApiIssues, toHttpError } from "../../../../services/gateway/http-errors";
import { routeByAction, type RouteSpec } from "../../../../services/gateway/routes";
import {
  ConflictError,
  ForbiddenError,
  IdempotencyKeyBusyError,
  NotAuthenticatedError,
  NotFoundError,
  PayloadTooLargeError,
  RequestValidationError,
  TokenInvalidError,
  UploadInterruptedError,
  UserRemovedError,
} from "../../../../shared/errors";

function route(action: string): RouteSpec {
  const spec = routeByAction.get(action);
  if (!spec) throw new Error(`no route for ${action}`);
  return spec;
}

const joinRoute = route("rounds.join");
const appSettingsRoute = route("settings.appSettings");

describe("toHttpError with the project's own errors", () => {
  it.each([
    [new NotAuthenticatedError(), 401, "Not authenticated"],
    [new TokenInvalidError("jwt expired"), 401, "Token invalid: jwt expired"],
    [new UserRemovedError(), 401, "User removed"],
    [new ForbiddenError(), 403, "Not enough permissions"],
    [new NotFoundError("Round not found"), 404, "Round not found"],
    [new ConflictError("Round is full"), 409, "Round is full"],
    [
      new PayloadTooLargeError("Request body too large (limit 1024 bytes)"),
      413,
      "Request body too large (limit 1024 bytes)",
    ],
  ])("when the error is %p, then it is %p with its message as detail", (err, status, text) => {
    const mapped = toHttpError(err, joinRoute);
    expect(mapped.status).toBe(status);
    expect(mapped.body).toEqual({ detail: text });
    expect(mapped.unexpected).toBeUndefined();
  });

  it("when a retry meets its Idempotency-Key still in progress, then it is 409 with Retry-After: 1", () => {
    const mapped = toHttpError(new IdempotencyKeyBusyError(), route("stores.createEvent"));
    expect(mapped.status).toBe(409);
    expect(mapped.headers).toEqual({ "Retry-After": "1" });
    expect(mapped.body).toEqual({ detail: expect.stringMatching(/Idempotency-Key is still in progress/) });
  });

  it("when an upload's chunk reaches a stores process without that upload, then it is 503 with Retry-After, not a 500", () => {
    const own = new UploadInterruptedError();
    const plain = { name: own.name, code: own.code, type: own.type, message: own.message, data: own.data };
    for (const err of [own, plain]) {
      const mapped = toHttpError(err, route("stores.createEvent"));
      expect(mapped.status).toBe(503);
      expect(mapped.headers).toEqual({ "Retry-After": "1" });
      expect(mapped.body).toEqual({ detail: expect.stringMatching(/upload was interrupted/) });
      expect(mapped.unexpected).toBeUndefined();
    }
  });

  it("when a 409 carries no retryAfter, then it has no Retry-After header", () => {
    expect(toHttpError(new ConflictError("Round is full"), joinRoute).headers).toBeUndefined();
  });

  it("when a 401 happens on a bearer route, then it carries WWW-Authenticate: Bearer", () => {
    expect(toHttpError(new NotAuthenticatedError(), joinRoute).headers).toEqual({
      "WWW-Authenticate": "Bearer",
    });
    expect(toHttpError(new TokenInvalidError("jwt malformed"), joinRoute).headers).toEqual({
      "WWW-Authenticate": "Bearer",
    });
  });

  it("when a 401 happens on an API key route or without a route, then there is no WWW-Authenticate header", () => {
    expect(toHttpError(new NotAuthenticatedError(), appSettingsRoute).headers).toBeUndefined();
    expect(toHttpError(new NotAuthenticatedError()).headers).toBeUndefined();
  });

  it("when a non-401 error happens on a bearer route, then there is no WWW-Authenticate header", () => {
    expect(toHttpError(new NotFoundError("Round not found"), joinRoute).headers).toBeUndefined();
  });

  it("when the error crossed the transporter as a plain object, then code and type still map it", () => {
    const plain = { name: "NotFoundError", code: 404, type: "NOT_FOUND", message: "Round not found" };
    expect(toHttpError(plain, joinRoute)).toMatchObject({ status: 404, body: { detail: "Round not found" } });
  });
});

describe("toHttpError with validation errors", () => {
  it("when an action param fails on the join route, then body params get 'body' and path params 'path'", () => {
    const err = new RequestValidationError([
      { type: "int_type", loc: ["attributes", 0], msg: "Input should be a valid integer", input: "x" },
      {
        type: "string_too_short",
        loc: ["round_id"],
        msg: "String should have at least 1 characters",
        input: "",
      },
    ]);
    expect(toHttpError(err, joinRoute)).toEqual({
      status: 422,
      body: {
        detail: [
          {
            type: "int_type",
            loc: ["body", "attributes", 0],
            msg: "Input should be a valid integer",
            input: "x",
          },
          {
            type: "string_too_short",
            loc: ["path", "round_id"],
            msg: "String should have at least 1 characters",
            input: "",
          },
        ],
      },
    });
  });

  it("when a query param fails, then its loc starts with 'query'", () => {
    const err = new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", [
      { type: "enum", loc: ["platform"], msg: "Input should be 'android', 'ios' or 'ru_store'", input: "x" },
    ]);
    expect(toHttpError(err, appSettingsRoute).body.detail).toEqual([
      {
        type: "enum",
        loc: ["query", "platform"],
        msg: "Input should be 'android', 'ios' or 'ru_store'",
        input: "x",
      },
    ]);
  });

  it("when an issue already starts with 'body', then its loc is left untouched", () => {
    const err = new RequestValidationError([
      { type: "json_invalid", loc: ["body", 7], msg: "JSON decode error", input: {} },
    ]);
    expect(toHttpError(err, joinRoute).body.detail).toEqual([
      { type: "json_invalid", loc: ["body", 7], msg: "JSON decode error", input: {} },
    ]);
  });

  it("when an issue has an empty loc or no route is known, then it is placed under 'body'", () => {
    const err = new RequestValidationError([
      { type: "dict_type", loc: [], msg: "Input should be a valid dictionary" },
      { type: "missing", loc: ["round_id"], msg: "Field required" },
    ]);
    expect(toHttpError(err).body.detail).toEqual([
      { type: "dict_type", loc: ["body"], msg: "Input should be a valid dictionary" },
      { type: "missing", loc: ["body", "round_id"], msg: "Field required" },
    ]);
  });
});

describe("toFastApiIssues", () => {
  it("when an issue has an undefined input, then input becomes null; without the key it stays absent", () => {
    const out = toFastApiIssues(
      [
        { type: "missing", loc: ["attributes"], msg: "Field required", input: undefined },
        { type: "missing", loc: ["round_id"], msg: "Field required" },
      ],
      joinRoute,
    );
    expect(out[0]).toEqual({
      type: "missing",
      loc: ["body", "attributes"],
      msg: "Field required",
      input: null,
    });
    expect(out[1]).toEqual({ type: "missing", loc: ["path", "round_id"], msg: "Field required" });
    expect(out[1]).not.toHaveProperty("input");
  });

  it("when an issue carries extra keys, then only type, loc, msg and input are kept, in that order", () => {
    const issue = { type: "int_type", loc: ["attributes", 0], msg: "m", input: 1, ctx: { x: 1 } };
    const [out] = toFastApiIssues([issue], joinRoute);
    expect(Object.keys(out)).toEqual(["type", "loc", "msg", "input"]);
  });
});

describe("toHttpError with moleculer's errors", () => {
  it("when no node serves the action, then it is 503 with Retry-After", () => {
    const err = new Errors.ServiceNotFoundError({ action: "rounds.get", nodeID: "node-1" });
    expect(toHttpError(err, joinRoute)).toEqual({
      status: 503,
      body: { detail: "Service Unavailable" },
      headers: { "Retry-After": "1" },
    });
  });

  it("when the service is not available, then it is 503", () => {
    const err = new Errors.ServiceNotAvailableError({ action: "rounds.get", nodeID: "node-1" });
    expect(toHttpError(err, joinRoute).status).toBe(503);
  });

  it("when the call timed out, then it is 504 Gateway Timeout", () => {
    const err = new Errors.RequestTimeoutError({ action: "rounds.get", nodeID: "node-1" });
    expect(toHttpError(err, joinRoute)).toMatchObject({ status: 504, body: { detail: "Gateway Timeout" } });
  });

  it("when the broker rejects the request or its queue is full, then it is 503", () => {
    const rejected = new Errors.RequestRejectedError({ action: "rounds.get", nodeID: "node-1" });
    const queueFull = new Errors.QueueIsFullError({
      action: "rounds.get",
      nodeID: "node-1",
      size: 1,
      limit: 1,
    });
    expect(toHttpError(rejected).status).toBe(503);
    expect(toHttpError(queueFull).status).toBe(503);
  });
});

describe("toHttpError with anything else", () => {
  it("when it is a plain Error, then it is 500 Internal Server Error flagged unexpected", () => {
    expect(toHttpError(new Error("database exploded"), joinRoute)).toEqual({
      status: 500,
      body: { detail: "Internal Server Error" },
      headers: undefined,
      unexpected: true,
    });
  });

  it("when it is a moleculer error of an unknown type, then its message does not leak", () => {
    const err = new Errors.MoleculerServerError("secret internals", 500, "SOMETHING_ODD");
    expect(toHttpError(err)).toMatchObject({
      status: 500,
      body: { detail: "Internal Server Error" },
      unexpected: true,
    });
  });

  it("when it is null, a string or an object with a foreign code, then it is a 500", () => {
    expect(toHttpError(null).status).toBe(500);
    expect(toHttpError("boom").status).toBe(500);
    expect(toHttpError({ code: 418, type: "TEAPOT", message: "x" })).toMatchObject({
      status: 500,
      unexpected: true,
    });
  });

  it("when a 422 carries no list of issues, then it is not treated as a validation error", () => {
    expect(toHttpError({ code: 422, type: "WHATEVER", message: "x", data: { field: "a" } }).status).toBe(500);
  });
});
