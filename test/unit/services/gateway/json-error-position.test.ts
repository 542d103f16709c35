import { jsonErrorPosition } from "../../../../services/gateway/json-error-position";

describe("jsonErrorPosition", () => {
  it.each([
    ['{"a":}', 5],
    ['{"attributes": [', 16],
    ["{not json", 1],
    ['{"a": 1,}', 8],
    ["[1, 2", 5],
    ['"unterminated', 0],
    ["tru", 0],
    ['{"a": nul}', 6],
    ['{"a": 01}', 7],
    ['{"a": 1} x', 9],
    ["", 0],
  ])("when the text is %j, then the error stands at %i", (text, pos) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(jsonErrorPosition(text)).toBe(pos);
  });
});
