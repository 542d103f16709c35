/**
 * A multicast body read a slice at a time (services/gateway/request-body.ts, parseListBody): whatever
 * the bytes, it either gives exactly what JSON.parse gives, or declines (null) and the body is read in
 * one piece as every other body is.
 */
import fc from "fast-check";
import { MAX_JSON_DEPTH, parseListBody } from "../../../../services/gateway/request-body";

const asBytes = (text: string) => Buffer.from(text, "utf8");

describe("parseListBody", () => {
  it("when the list is long, in the middle of other fields, with strings holding quotes, commas and brackets, then it is what JSON.parse gives", async () => {
    const body = {
      title: 'a "quoted", [bracketed] {title}',
      nested: { user_ids: ["not", "this"], deep: [[{ x: "]" }]] },
      user_ids: Array.from({ length: 25_003 }, (_, i) => (i % 7 === 0 ? `u,"${i}"]\\` : `u${i}`)),
      keys: { a: 1, b: "user_ids" },
    };
    const text = JSON.stringify(body, null, 1);
    await expect(parseListBody(asBytes(text), "user_ids")).resolves.toEqual(JSON.parse(text));
  });

  it("when the body starts with a UTF-8 byte order mark, then it is read as the body without it", async () => {
    const text = JSON.stringify({ title: "t", user_ids: Array.from({ length: 30_000 }, (_, i) => `u${i}`) });
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), asBytes(text)]);
    await expect(parseListBody(body, "user_ids")).resolves.toEqual(JSON.parse(text));
  });

  it.each([
    ["an empty list", '{"title":"t","user_ids":[]}'],
    ["a list of one", '{"user_ids":["a"],"title":"t"}'],
    ["items of every kind", '{"user_ids":[1,null,true,{"a":[1,2]},[3],"x"]}'],
  ])("when the body has %s, then it is what JSON.parse gives", async (_label, text) => {
    await expect(parseListBody(asBytes(text), "user_ids")).resolves.toEqual(JSON.parse(text));
  });

  it.each([
    ["the key twice", '{"user_ids":["a"],"user_ids":["b"]}'],
    ["the key escaped", '{"user\\u005fids":["a"]}'],
    ["the key given, then given again escaped", '{"user_ids":["a"],"user\\u005fids":["b"]}'],
    ["the key escaped, then given", '{"user\\u005fids":["b"],"user_ids":["a"]}'],
    ["another name escaped", '{"user_ids":["a"],"t\\u0069tle":"t"}'],
    ["a value that is not a list", '{"user_ids":"a"}'],
    ["no such key", '{"title":"t"}'],
    ["a trailing comma", '{"user_ids":["a","b",]}'],
    ["an empty item", '{"user_ids":["a",,"b"]}'],
    ["malformed JSON after the list", '{"user_ids":["a"],"title":}'],
    ["a list that never closes", '{"user_ids":["a","b"'],
    ["a body that is a list", '[{"user_ids":["a"]}]'],
    ["nesting past the bound", `{"user_ids":[${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}]}`],
  ])("when the body has %s, then it declines and the body is read whole", async (_label, text) => {
    await expect(parseListBody(asBytes(text), "user_ids")).resolves.toBeNull();
  });

  it("when any JSON object or any mutation of one is given, then the answer is JSON.parse's or null, never another value", async () => {
    const item = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
    const body = fc.record({
      title: fc.string(),
      user_ids: fc.array(item, { maxLength: 30 }),
      keys: fc.option(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }))),
    });
    const variant = fc.tuple(
      body,
      fc.nat(),
      fc.constantFrom("", ",", "]", "[", '"', "\\", "}", " ", ":"),
      fc.boolean(),
      // The list given again under an escaped spelling of its name, which JSON.parse keeps.
      fc.option(fc.array(item, { maxLength: 3 })),
    );
    await fc.assert(
      fc.asyncProperty(variant, async ([value, at, insert, mutate, escapedTwin]) => {
        let text = JSON.stringify(value);
        if (escapedTwin) text = `${text.slice(0, -1)},"user\\u005fids":${JSON.stringify(escapedTwin)}}`;
        if (mutate) {
          const i = at % (text.length + 1);
          text = text.slice(0, i) + insert + text.slice(i + 1);
        }
        let expected: unknown;
        try {
          expected = JSON.parse(text);
        } catch {
          expected = undefined;
        }
        const got = await parseListBody(asBytes(text), "user_ids");
        if (got !== null) expect(got).toEqual(expected);
      }),
      { numRuns: 2000, seed: 24 },
    );
  });
});
