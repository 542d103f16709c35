import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { parseJsonBody, readRaw } from "../../../../services/gateway/request-body";
import { ErrorType, PayloadTooLargeError, RequestValidationError } from "../../../../shared/errors";

/** A request stand-in: a stream of the given chunks with the given headers. */
function request(chunks: string[], headers: Record<string, string> = {}): IncomingMessage {
  const stream = Readable.from(chunks.map((c) => Buffer.from(c)));
  return Object.assign(stream, { headers }) as unknown as IncomingMessage;
}

function parseError(
  text: string,
  kind: Parameters<typeof parseJsonBody>[1] = "json-object",
): RequestValidationError {
  try {
    parseJsonBody(Buffer.from(text), kind);
  } catch (err) {
    expect(err).toBeInstanceOf(RequestValidationError);
    return err as RequestValidationError;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be refused`);
}

describe("parseJsonBody", () => {
  it("when the body is a JSON object, then its fields are the params", () => {
    expect(parseJsonBody(Buffer.from('{"attributes":[101]}'), "json-object-or-null")).toEqual({
      attributes: [101],
    });
    expect(parseJsonBody(Buffer.from('{"refresh_token":"t"}'), "json-object")).toEqual({
      refresh_token: "t",
    });
  });

  it("when the body starts with a UTF-8 byte order mark, then it is read without it; a second one is invalid", () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const body = (text: string) => Buffer.concat([bom, Buffer.from(text)]);
    expect(parseJsonBody(body('{"attributes":[1]}'), "json-object-or-null")).toEqual({ attributes: [1] });
    expect(parseJsonBody(body("null"), "json-object-or-null")).toEqual({});
    expect(() => parseJsonBody(Buffer.concat([bom, body("{}")]), "json-object")).toThrow(
      RequestValidationError,
    );
  });

  it("when the body is empty or whitespace, then it is missing at ['body']", () => {
    for (const text of ["", "  \n"]) {
      const err = parseError(text, "json-object-or-null");
      expect(err).toMatchObject({ code: 422, type: ErrorType.VALIDATION });
      expect(err.data).toEqual([{ type: "missing", loc: ["body"], msg: "Field required", input: null }]);
    }
  });

  it("when the body is malformed JSON, then it is json_invalid under 'body' with a position", () => {
    const err = parseError('{"attributes":[1,}');
    expect(err.data).toEqual([
      { type: "json_invalid", loc: ["body", expect.any(Number)], msg: "JSON decode error", input: {} },
    ]);
  });

  it("when the JSON error message gives a position, then loc carries it", () => {
    // V8: "Expected property name or '}' in JSON at position 1".
    expect(parseError("{").data).toEqual([
      { type: "json_invalid", loc: ["body", 1], msg: "JSON decode error", input: {} },
    ]);
  });

  it("when the body is null on a route that allows null, then there are no params", () => {
    expect(parseJsonBody(Buffer.from("null"), "json-object-or-null")).toEqual({});
  });

  it("when the body is null on a route that needs an object, then it is model_attributes_type", () => {
    expect(parseError("null", "json-object").data).toEqual([
      {
        type: "model_attributes_type",
        loc: ["body"],
        msg: "Input should be a valid dictionary or object to extract fields from",
        input: null,
      },
    ]);
  });

  it.each([
    ["[1,2]", [1, 2]],
    ['"text"', "text"],
    ["42", 42],
    ["true", true],
  ])("when the body is %s, then it is model_attributes_type with the value as input", (text, input) => {
    expect(parseError(text, "json-object-or-null").data).toEqual([
      expect.objectContaining({ type: "model_attributes_type", loc: ["body"], input }),
    ]);
  });
});

describe("readRaw", () => {
  it("when the body arrives in chunks under the limit, then it is read whole", async () => {
    const raw = await readRaw(request(['{"attri', 'butes":', "[]}"]), 1024);
    expect(raw.toString("utf8")).toBe('{"attributes":[]}');
  });

  it("when there is no body, then it is an empty buffer", async () => {
    const raw = await readRaw(request([]), 1024);
    expect(raw.length).toBe(0);
  });

  it("when the body is exactly at the limit, then it is accepted", async () => {
    await expect(readRaw(request(["x".repeat(16)]), 16)).resolves.toHaveLength(16);
  });

  it("when the streamed body passes the limit, then it is a PayloadTooLargeError (413)", async () => {
    const err = await readRaw(request(["x".repeat(10), "x".repeat(10)]), 16).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).toMatchObject({ code: 413, type: ErrorType.PAYLOAD_TOO_LARGE });
    expect((err as Error).message).toBe("Request body too large (limit 16 bytes)");
  });

  it("when Content-Length declares more than the limit, then it is refused before reading", async () => {
    const req = request(["{}"], { "content-length": "5000" });
    const err = await readRaw(req, 1024).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).toMatchObject({ code: 413 });
    expect(req.listenerCount("data")).toBe(0);
  });

  it("when the stream fails, then the error is passed on", async () => {
    const req = Object.assign(
      new Readable({
        read() {
          this.destroy(new Error("socket hang up"));
        },
      }),
      { headers: {} },
    ) as unknown as IncomingMessage;
    await expect(readRaw(req, 1024)).rejects.toThrow("socket hang up");
  });
});
