/**
 * What a 422 entry may echo of the client's input: FastAPI echoes it whole, but an echo must never be
 * the way to make an answer huge or make encoding it throw. Cut to a few levels, a few items per level
 * and a bounded string length; cycle-safe; anything that is not plain JSON data is described instead.
 * Cutting twice gives what cutting once gave: a service's issues are cut where they are made and again
 * at the gateway, and the count of what was left out must survive the second cut.
 */
export const INPUT_MAX_DEPTH = 4;
export const INPUT_MAX_ITEMS = 20;
export const INPUT_MAX_STRING = 256;

const cutString = (s: string) => (s.length > INPUT_MAX_STRING ? `${s.slice(0, INPUT_MAX_STRING)}…` : s);

/** What a cut leaves in place of the rest: the last item of a list, the value of an object's "…" key. */
const leftOutOfList = /^… \d+ more$/;
const leftOutOfObject = /^\d+ more$/;

/** A list or an object's keys as a cut left them: the items kept, then the count of the rest. */
const wasCut = (length: number, last: unknown, marker: RegExp) =>
  length === INPUT_MAX_ITEMS + 1 && typeof last === "string" && marker.test(last);

export function boundedInput(value: unknown): unknown {
  const ancestors = new Set<object>();
  const walk = (v: unknown, depth: number): unknown => {
    if (v === null || typeof v === "boolean") return v;
    if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
    if (typeof v === "string") return cutString(v);
    if (typeof v !== "object") return v === undefined ? null : cutString(String(v));
    if (ArrayBuffer.isView(v)) return `<${v.byteLength} bytes>`;
    if (ancestors.has(v)) return "<cycle>";
    const isArray = Array.isArray(v);
    if (depth >= INPUT_MAX_DEPTH) return isArray ? "[…]" : "{…}";
    ancestors.add(v);
    try {
      if (isArray) {
        const out = v.slice(0, INPUT_MAX_ITEMS).map((item) => walk(item, depth + 1));
        const last: unknown = v[INPUT_MAX_ITEMS];
        if (wasCut(v.length, last, leftOutOfList)) out.push(last);
        else if (v.length > INPUT_MAX_ITEMS) out.push(`… ${v.length - INPUT_MAX_ITEMS} more`);
        return out;
      }
      const out: Record<string, unknown> = {};
      const keys = Object.keys(v);
      for (const key of keys.slice(0, INPUT_MAX_ITEMS)) {
        // defineProperty: a "__proto__" key stays data, never a prototype.
        Object.defineProperty(out, cutString(key), {
          value: walk((v as Record<string, unknown>)[key], depth + 1),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      const last: unknown = (v as Record<string, unknown>)["…"];
      if (keys[INPUT_MAX_ITEMS] === "…" && wasCut(keys.length, last, leftOutOfObject)) out["…"] = last;
      else if (keys.length > INPUT_MAX_ITEMS) out["…"] = `${keys.length - INPUT_MAX_ITEMS} more`;
      return out;
    } finally {
      ancestors.delete(v);
    }
  };
  try {
    return walk(value, 0);
  } catch {
    // A getter that throws, a proxy: echo nothing rather than fail the answer.
    return null;
  }
}

/** The most entries one 422 lists (every bad field, but not a million of them). */
export const MAX_ISSUES = 50;

interface IssueLike {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
}

/**
 * Issues as they may leave a service: at most MAX_ISSUES, `input` bounded, `loc` keys cut. Applied
 * where issues are made (the validator, RequestValidationError), so an error packet between nodes stays
 * small too (a transporter refuses oversized packets: NATS's limit is 1 MB).
 */
export function boundIssues<T extends IssueLike>(issues: T[]): T[] {
  return issues
    .filter((i) => i !== null && typeof i === "object")
    .slice(0, MAX_ISSUES)
    .map((i) => {
      const out = {
        ...i,
        loc: Array.isArray(i.loc)
          ? i.loc.map((seg) => (typeof seg === "number" ? seg : String(seg).slice(0, INPUT_MAX_STRING)))
          : [],
      };
      if ("input" in i) out.input = boundedInput(i.input);
      return out;
    });
}
