import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { Errors } from "moleculer";
import { answerClientError } from "../../../../services/gateway/client-error";
import { encodeHttpError, toHttpError } from "../../../../services/gateway/http-errors";
import { MAX_JSON_DEPTH, parseJsonBody, tooDeepAt } from "../../../../services/gateway/request-body";
import { routeByAction } from "../../../../services/gateway/routes";
import {
  boundedInput,
  INPUT_MAX_DEPTH,
  INPUT_MAX_ITEMS,
  INPUT_MAX_STRING,
} from "../../../../shared/errors/bounded-input";
import { MAX_ISSUES, RequestValidationError } from "../../../../shared/errors";
import { installCrashHandlers } from "../../../../shared/runtime/crash";
import { requestContext } from "../../../../shared/runtime/request-context";
import { check } from "../../../../shared/validation";

const nested = (depth: number, open = "[", close = "]") => open.repeat(depth) + close.repeat(depth);

describe("JSON depth bound", () => {
  it("when a body nests exactly the limit, then it parses", () => {
    expect(tooDeepAt(Buffer.from(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`))).toBe(-1);
    expect(parseJsonBody(Buffer.from(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`), "json-object")).toBeDefined();
  });

  it("when a body nests 5,000 levels, then 422 json_too_deep at the offset of the first bracket too many", () => {
    const text = `{"user_ids":${nested(5000)}}`;
    let err: unknown;
    try {
      parseJsonBody(Buffer.from(text), "json-object");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RequestValidationError);
    expect((err as RequestValidationError).data).toEqual([
      {
        type: "json_too_deep",
        loc: ["body", 12 + MAX_JSON_DEPTH - 1],
        msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
      },
    ]);
  });

  it("when brackets are inside strings (with escaped quotes), then they do not count", () => {
    const text = JSON.stringify({ title: `\\"${"[".repeat(100)}`, keys: { a: "{{{{" } });
    expect(tooDeepAt(Buffer.from(text))).toBe(-1);
  });

  it("when multi-byte UTF-8 precedes the deep part, then the offset is in characters", () => {
    const text = `{"é":${nested(MAX_JSON_DEPTH + 1)}}`;
    const at = tooDeepAt(Buffer.from(text));
    expect(Buffer.from(text).subarray(0, at).toString("utf8").length).toBe(5 + MAX_JSON_DEPTH - 1);
  });
});

describe("bounded echo of input", () => {
  it("when the input is deeper than the bound, then deeper containers are cut to a marker", () => {
    const deep = JSON.parse(nested(50)) as unknown;
    let v = boundedInput(deep);
    for (let i = 0; i < INPUT_MAX_DEPTH; i++) v = (v as unknown[])[0];
    expect(v).toBe("[…]");
    expect(() => JSON.stringify(boundedInput(JSON.parse(nested(9000))))).not.toThrow();
  });

  it("when lists, objects and strings are long, then they are cut with what was left out counted", () => {
    const out = boundedInput({ ids: Array.from({ length: 1000 }, (_, i) => i), s: "x".repeat(10_000) }) as {
      ids: unknown[];
      s: string;
    };
    expect(out.ids).toHaveLength(INPUT_MAX_ITEMS + 1);
    expect(out.ids[INPUT_MAX_ITEMS]).toBe(`… ${1000 - INPUT_MAX_ITEMS} more`);
    expect(out.s).toHaveLength(INPUT_MAX_STRING + 1);
  });

  it("when a cut input is cut again, then the count of what was left out survives", () => {
    const once = boundedInput({
      ids: Array.from({ length: 3000 }, (_, i) => i),
      keys: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])),
    });
    const twice = boundedInput(once) as { ids: unknown[]; keys: Record<string, unknown> };
    expect(twice).toEqual(once);
    expect(twice.ids[INPUT_MAX_ITEMS]).toBe(`… ${3000 - INPUT_MAX_ITEMS} more`);
    expect(twice.keys["…"]).toBe(`${500 - INPUT_MAX_ITEMS} more`);
  });

  it("when any JSON value is cut twice, then the second cut changes nothing", () => {
    const wide = fc.oneof(
      fc.jsonValue({ maxDepth: 6 }),
      fc.array(fc.jsonValue({ maxDepth: 2 }), { minLength: 15, maxLength: 40 }),
      fc.dictionary(fc.string({ maxLength: 300 }), fc.jsonValue({ maxDepth: 2 }), {
        minKeys: 15,
        maxKeys: 40,
      }),
    );
    fc.assert(
      fc.property(wide, (value) => {
        const once = boundedInput(value);
        expect(boundedInput(once)).toEqual(once);
      }),
    );
  });

  it("when the input is cyclic, binary or not JSON, then it is described and never throws", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(boundedInput(cyclic)).toEqual({ a: 1, self: "<cycle>" });
    expect(boundedInput(Buffer.alloc(10))).toBe("<10 bytes>");
    expect(boundedInput(Number.POSITIVE_INFINITY)).toBe("Infinity");
    expect(boundedInput(10n)).toBe("10");
    const hostile = {
      get boom(): never {
        throw new Error("no");
      },
    };
    expect(boundedInput(hostile)).toBeNull();
  });

  it("when the input has a __proto__ key, then it stays a plain key and pollutes nothing", () => {
    const out = boundedInput(JSON.parse('{"__proto__":{"polluted":"yes"}}')) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("when a service raises thousands of issues, then at most MAX_ISSUES leave it, each bounded", () => {
    const issues = Array.from({ length: 5000 }, (_, i) => ({
      type: "string_type",
      loc: ["user_ids", i],
      msg: "Input should be a valid string",
      input: JSON.parse(nested(100)) as unknown,
    }));
    const err = new RequestValidationError(issues);
    expect(err.data).toHaveLength(MAX_ISSUES);
    expect(JSON.stringify(err.data).length).toBeLessThan(10_000);
  });

  it("when the validator meets a huge list of wrong items, then its issues are capped", () => {
    const result = check(
      { type: "array", items: { type: "string" } },
      Array.from({ length: 10_000 }, () => 1),
    );
    expect(result).not.toBe(true);
    expect((result as unknown[]).length).toBe(MAX_ISSUES);
  });
});

describe("error answers", () => {
  it("when a 422 echoes a 5,000-deep input, then the answer encodes", () => {
    const err = new Errors.ValidationError("bad", "VALIDATION_ERROR", [
      {
        type: "list_type",
        loc: ["user_ids"],
        msg: "Input should be a valid list",
        input: JSON.parse(nested(5000)),
      },
    ]);
    const mapped = toHttpError(err, routeByAction.get("notifier.sendMulticast"));
    const encoded = encodeHttpError(mapped);
    expect(encoded.status).toBe(422);
    expect(encoded.fallback).toBe(false);
  });

  it("when a service's 422 echoes a 3,000-item list, then the answer counts the items left out", () => {
    const made = new RequestValidationError([
      {
        type: "too_long",
        loc: ["attributes"],
        msg: "List should have at most 100 items",
        input: Array.from({ length: 3000 }, () => 1),
      },
    ]);
    const mapped = toHttpError(made, routeByAction.get("rounds.join"));
    const [issue] = mapped.body.detail as { input: unknown[] }[];
    expect(issue.input).toHaveLength(INPUT_MAX_ITEMS + 1);
    expect(issue.input[INPUT_MAX_ITEMS]).toBe(`… ${3000 - INPUT_MAX_ITEMS} more`);
  });

  it("when the body cannot be encoded at all, then a fixed 500 body is the answer", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const encoded = encodeHttpError({ status: 400, body: { detail: cyclic as unknown as string } });
    expect(encoded).toEqual({ status: 500, json: '{"detail":"Internal Server Error"}', fallback: true });
  });

  it("when a path parameter has a malformed escape (moleculer-web's UNABLE_DECODE_PARAM), then 404 Not Found", () => {
    const err = new Errors.MoleculerError("Bad request", 400, "UNABLE_DECODE_PARAM", { param: "%ZZ" });
    expect(toHttpError(err, routeByAction.get("rounds.get"))).toEqual({
      status: 404,
      body: { detail: "Not Found" },
      headers: undefined,
    });
  });

  it("when NATS refuses an oversized call packet, then 413 rather than 500", () => {
    const err = Object.assign(new Error("MAX_PAYLOAD_EXCEEDED"), { code: "MAX_PAYLOAD_EXCEEDED" });
    expect(toHttpError(err).status).toBe(413);
  });
});

describe("requests the HTTP parser refuses", () => {
  const answer = (code: string | undefined) => {
    const socket = new PassThrough();
    let written = "";
    socket.on("data", (c: Buffer) => (written += c.toString()));
    answerClientError(Object.assign(new Error("parse"), { code }), socket);
    return written;
  };

  it("when the headers are too large, then 431 with a JSON detail", () => {
    const text = answer("HPE_HEADER_OVERFLOW");
    expect(text).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(text.split("\r\n\r\n")[1])).toEqual({ detail: "Request Header Fields Too Large" });
  });

  it("when the request line is malformed, then 400 with a JSON detail", () => {
    const text = answer("HPE_INVALID_CHARACTER");
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(text.split("\r\n\r\n")[1])).toEqual({ detail: "Bad Request" });
  });
});

describe("crash policy", () => {
  const setup = () => {
    const proc = new EventEmitter();
    const logged: unknown[][] = [];
    const exits: number[] = [];
    installCrashHandlers({
      logger: { fatal: (...args: unknown[]) => logged.push(args) },
      exit: (code) => exits.push(code),
      proc: proc as unknown as NodeJS.Process,
    });
    return { proc, logged, exits };
  };

  it("when an exception escapes inside a request, then it is logged with that request's id and the process exits 1", () => {
    const { proc, logged, exits } = setup();
    requestContext.run({ requestID: () => "req-42" }, () =>
      proc.emit("uncaughtException", new Error("boom")),
    );
    expect(exits).toEqual([1]);
    expect(logged[0][0]).toMatch(/Uncaught exception: boom/);
    expect(logged[0][1]).toEqual({ requestID: "req-42" });
  });

  it("when a rejection tagged with a request id is unhandled, then that id is logged and the process exits 1", () => {
    const { proc, logged, exits } = setup();
    proc.emit("unhandledRejection", Object.assign(new Error("late"), { requestID: "req-7" }));
    expect(exits).toEqual([1]);
    expect(logged[0][1]).toEqual({ requestID: "req-7" });
  });

  it("when logging itself fails, then the process still exits, once", () => {
    const proc = new EventEmitter();
    const exits: number[] = [];
    installCrashHandlers({
      logger: {
        fatal: () => {
          throw new Error("log down");
        },
      },
      exit: (code) => exits.push(code),
      proc: proc as unknown as NodeJS.Process,
    });
    proc.emit("uncaughtException", new Error("a"));
    proc.emit("unhandledRejection", new Error("b"));
    expect(exits).toEqual([1]);
  });
});
