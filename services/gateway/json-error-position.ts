/**
 * Where a JSON text first goes wrong, as a character offset (FastAPI reports it in the `loc` of a
 * `json_invalid` error). Node's JSON.parse does not always say; this scanner runs only after a parse
 * failed, so it needs to be right, not fast.
 */
export function jsonErrorPosition(text: string): number {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const fail = (): never => {
    throw i;
  };
  // Like Python's decoder (FastAPI's), a bad literal or an unterminated string is reported where it starts.
  const literal = (word: string) => {
    if (text.slice(i, i + word.length) !== word) fail();
    i += word.length;
  };
  const string = () => {
    const start = i;
    i++; // opening quote
    while (i < text.length) {
      const ch = text[i];
      if (ch === '"') {
        i++;
        return;
      }
      if (ch === "\\") {
        i++;
        if (text[i] === "u") {
          i++;
          for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? "")) fail();
          continue;
        }
        if (!'"\\/bfnrt'.includes(text[i] ?? "x")) fail();
      } else if (ch < " ") {
        fail();
      }
      i++;
    }
    throw start;
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m || m[0] === "-" || m[0] === "") fail();
    i += (m as RegExpExecArray)[0].length;
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === "{") {
      i++;
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ":") fail();
        i++;
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return;
        }
        fail();
      }
    } else if (ch === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return;
        }
        fail();
      }
    } else if (ch === '"') string();
    else if (ch === "t") literal("true");
    else if (ch === "f") literal("false");
    else if (ch === "n") literal("null");
    else if (ch === "-" || (ch >= "0" && ch <= "9")) number();
    else fail();
  };
  try {
    value();
    ws();
    return i < text.length ? i : text.length;
  } catch (pos) {
    return Math.min(pos as number, text.length);
  }
}
