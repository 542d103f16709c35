/**
 * Generators of hostile requests, derived from the OpenAPI document the gateway serves: every operation
 * (present and future) gets path parameters, query strings, headers and bodies built to break parsers,
 * validators, serializers and error answers. A request is generated as a plan (small, readable in a
 * counterexample) and rendered to bytes only when sent.
 */
import fc from "fast-check";
import type { DemoManifest } from "../../shared/ops/seed";
import type { RawRequest } from "./raw-http";

type Json = Record<string, any>;

export interface Operation {
  method: string;
  /** OpenAPI path template, e.g. /rounds/{round_id}/join. */
  path: string;
  op: Json;
}

/** Every operation of the document. */
export function operationsOf(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json))
      out.push({ method: method.toUpperCase(), path, op });
  }
  return out;
}

/** A piece of JSON text, kept symbolic where it would be large. */
export type JsonPiece =
  | { text: string }
  | { deep: number; open: "[" | "{" }
  | { array: number; item: string }
  | { string: number; char: string };

export type BodyPlan =
  | { none: true }
  | { json: [string, JsonPiece][]; prefix?: string; suffix?: string }
  | { text: string }
  | { hex: string }
  | { multipart: MultipartPlan };

export interface MultipartPlan {
  boundary: string;
  fields: [string, string][];
  file?: { name: string; type: string; hex: string };
  /** Cut the rendered body to this fraction of its length (1: whole). */
  keep: number;
  closing: boolean;
  /** Sent as the Content-Type's boundary (may differ from the one used). */
  declaredBoundary: string | null;
}

export interface RequestPlan {
  operation: string;
  method: string;
  target: string;
  headers: [string, string][];
  body: BodyPlan;
}

// ---------------------------------------------------------------- rendering

function renderPiece(p: JsonPiece): string {
  if ("text" in p) return p.text;
  if ("deep" in p) {
    const close = p.open === "[" ? "]" : "}";
    const open = p.open === "[" ? "[" : '{"a":';
    return p.open === "["
      ? open.repeat(p.deep) + close.repeat(p.deep)
      : open.repeat(p.deep) + "1" + close.repeat(p.deep);
  }
  if ("array" in p) return `[${new Array(p.array).fill(p.item).join(",")}]`;
  return JSON.stringify(p.char.repeat(p.string));
}

function renderMultipart(m: MultipartPlan): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of m.fields) {
    parts.push(
      Buffer.from(`--${m.boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
    );
  }
  if (m.file) {
    parts.push(
      Buffer.from(
        `--${m.boundary}\r\nContent-Disposition: form-data; name="${m.file.name}"; filename="x.png"\r\n` +
          `Content-Type: ${m.file.type}\r\n\r\n`,
      ),
      Buffer.from(m.file.hex, "hex"),
      Buffer.from("\r\n"),
    );
  }
  if (m.closing) parts.push(Buffer.from(`--${m.boundary}--\r\n`));
  const whole = Buffer.concat(parts);
  return whole.subarray(0, Math.floor(whole.length * m.keep));
}

export function renderBody(b: BodyPlan): Buffer | undefined {
  if ("none" in b) return undefined;
  if ("text" in b) return Buffer.from(b.text, "utf8");
  if ("hex" in b) return Buffer.from(b.hex, "hex");
  if ("multipart" in b) return renderMultipart(b.multipart);
  const fields = b.json.map(([k, v]) => `${JSON.stringify(k)}:${renderPiece(v)}`).join(",");
  return Buffer.from(`${b.prefix ?? "{"}${fields}${b.suffix ?? "}"}`, "utf8");
}

export function render(plan: RequestPlan): RawRequest {
  return { method: plan.method, target: plan.target, headers: plan.headers, body: renderBody(plan.body) };
}

// ---------------------------------------------------------------- generators

const long = (char: string, min: number, max: number) => fc.integer({ min, max }).map((n) => char.repeat(n));

/** Strings as they appear in a URL: raw (unencoded, anything) or percent-encoded, and known troublemakers. */
export const hostileUrlText = (): fc.Arbitrary<string> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(
        "%ZZ",
        "%",
        "%E0%A4%A",
        "%C0%AF",
        "%FF%FE",
        "%00",
        "a%00b",
        "%uD800",
        "%%",
        "abc%2",
        "..",
        ".",
        "%2e%2e",
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "../../etc/passwd",
        "..%2F..%2F",
        "%2F",
        "\u0000",
        "a\u0000b",
        "%0d%0aSet-Cookie:%20x=1",
        "__proto__",
        "constructor",
        "prototype",
        "1e309",
        "-1",
        "null",
        "💥",
        "\u202e",
        "%F0%9F%92%A5",
      ),
    },
    fc.string({ unit: "grapheme", maxLength: 30 }).map(encodeURIComponent),
    fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{0,30}$/),
    long("a", 150, 300),
    long("%41", 50, 2000),
    // Rarer: what the HTTP parser itself refuses (raw control characters, a request line over 16 KB).
    fc.constantFrom("a b", "a\tb", "\u0001", "é", "💥raw"),
    long("b", 17000, 20000),
  );

const validPathValues = (m: DemoManifest): Record<string, string[]> => ({
  round_id: [m.rounds.open, m.rounds.full, m.rounds.private],
  store_id: [String(m.stores.alice_store), String(m.stores.blogger_store)],
  job_id: ["00000000-0000-4000-8000-000000000000"],
  name: ["x.png", "a".repeat(64) + ".jpg"],
  file: ["swagger-ui.css", "index.css"],
});

function pathValue(name: string, m: DemoManifest): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom(...(validPathValues(m)[name] ?? ["x"])) },
    { weight: 4, arbitrary: hostileUrlText() },
  );
}

function queryString(op: Json): fc.Arbitrary<string> {
  const names = ((op.parameters ?? []) as Json[]).filter((p) => p.in === "query").map((p) => String(p.name));
  const hostileKeys = [
    "__proto__[polluted]",
    "constructor[prototype][polluted]",
    "__proto__.polluted",
    "a[__proto__][polluted]",
    "toString",
    "hasOwnProperty",
  ];
  const pair = fc.tuple(
    fc.oneof(
      fc.constantFrom("q", ...names, ...names.map((n) => `${n}[]`), ...names.map((n) => `${n}[a][b]`)),
      fc.constantFrom(...hostileKeys),
      hostileUrlText(),
    ),
    fc.oneof(fc.constantFrom("2.2.0", "ios", "android", "1", "", "true"), hostileUrlText()),
  );
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant("") },
    {
      weight: 4,
      arbitrary: fc
        .array(pair, { maxLength: 6 })
        .map((ps) => "?" + ps.map(([k, v]) => `${k}=${v}`).join("&")),
    },
    { weight: 1, arbitrary: fc.integer({ min: 500, max: 3000 }).map((n) => "?" + "a=1&".repeat(n)) },
    { weight: 1, arbitrary: hostileUrlText().map((t) => `?${t}`) },
  );
}

function target(o: Operation, m: DemoManifest, hostile: "path" | "query" | "both"): fc.Arbitrary<string> {
  const segments = o.path.split(/(\{[^}]+\})/).filter((s) => s !== "");
  const pieces = segments.map((s) =>
    s.startsWith("{")
      ? hostile === "query"
        ? fc.constant(validPathValues(m)[s.slice(1, -1)]?.[0] ?? "x")
        : pathValue(s.slice(1, -1), m)
      : fc.constant(s),
  );
  if (hostile === "path") return fc.tuple(...pieces).map((ps) => ps.join(""));
  return fc
    .tuple(
      fc.tuple(...pieces),
      queryString(o.op),
      fc.constantFrom("", "", "", "", "", "", "/", "//", "#frag"),
    )
    .map(([ps, q, tail]) => ps.join("") + q + tail);
}

const headerText = (): fc.Arbitrary<string> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom("", " ", "null", "undefined", "%ZZ", "\u00ff\u00fe", "é", "a".repeat(9000)),
    },
    { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
    // What the HTTP parser refuses: control characters, headers over 16 KB.
    { weight: 1, arbitrary: fc.constantFrom("a\u0000b", "\u0001", "a\rb", "💥") },
    { weight: 1, arbitrary: long("x", 17000, 20000) },
  );

function credentials(o: Operation, m: DemoManifest): fc.Arbitrary<[string, string][]> {
  const bearer = fc.oneof(
    { weight: 6, arbitrary: fc.constant(`Bearer ${m.users.alice.access_token}`) },
    { weight: 1, arbitrary: fc.constant(`bearer   ${m.users.bob.access_token}  `) },
    { weight: 1, arbitrary: fc.constant(`Bearer ${m.users.removed.access_token}`) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        "Bearer",
        "Bearer ",
        "Bearer x.y.z",
        "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
        "Basic dXNlcjpwYXNz",
        `Token ${m.users.alice.access_token}`,
        `Bearer ${m.users.alice.access_token}x`,
        `Bearer ${m.users.alice.access_token} ${m.users.alice.access_token}`,
        `Bearer ${"a".repeat(9000)}`,
      ),
    },
    { weight: 1, arbitrary: headerText().map((t) => `Bearer ${t}`) },
    { weight: 1, arbitrary: headerText() },
  );
  const apiKey = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(m.api_keys.app, m.api_keys.notifications) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        "ak.",
        "ak.0123456789abcdef.",
        `ak.0123456789abcdef.${"A".repeat(43)}`,
        `${m.api_keys.app}x`,
        m.api_keys.notifications.toUpperCase(),
        `Bearer ${m.api_keys.app}`,
      ),
    },
    { weight: 1, arbitrary: headerText() },
  );
  const security = JSON.stringify(o.op.security ?? []);
  const main = security.includes("APIKeyHeader")
    ? apiKey.map((k): [string, string] => ["x-api-key", k])
    : bearer.map((b): [string, string] => ["Authorization", b]);
  return fc.oneof(
    { weight: 8, arbitrary: main.map((h) => [h]) },
    { weight: 1, arbitrary: fc.constant([] as [string, string][]) },
    {
      weight: 1,
      arbitrary: fc.tuple(bearer, apiKey).map(([b, k]): [string, string][] => [
        ["Authorization", b],
        ["x-api-key", k],
      ]),
    },
  );
}

const contentTypes = [
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=utf-16",
  "APPLICATION/JSON",
  "text/plain",
  "text/html",
  "application/x-www-form-urlencoded",
  "application/octet-stream",
  "image/png",
  "multipart/form-data",
  "multipart/form-data; boundary=",
  "multipart/form-data; boundary=XyZ",
  'multipart/form-data; boundary="a b"',
  "multipart/mixed; boundary=XyZ",
  "*/*",
  ";;;",
  "application/json; boundary=XyZ",
];

function extraHeaders(o: Operation): fc.Arbitrary<[string, string][]> {
  const headerParams = ((o.op.parameters ?? []) as Json[])
    .filter((p) => p.in === "header")
    .map((p) => String(p.name));
  const named = fc.tuple(
    fc.constantFrom(
      ...headerParams,
      "X-Request-ID",
      "X-Correlation-ID",
      "X-Forwarded-For",
      "Accept",
      "Accept-Encoding",
      "Origin",
      "Range",
      "Cookie",
    ),
    headerText(),
  );
  const random = fc.tuple(fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/), headerText());
  return fc.array(fc.oneof(named, random), { maxLength: 3 });
}

const hostileNumbers = [
  "1e309",
  "-1e309",
  "1e-400",
  "-0",
  "123456789012345678901234567890",
  "0.1e1",
  "9007199254740993",
  "1E2",
];

function jsonValue(): fc.Arbitrary<JsonPiece> {
  return fc.oneof(
    {
      weight: 3,
      arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => ({ text: JSON.stringify(v) ?? "null" })),
    },
    { weight: 2, arbitrary: fc.constantFrom(...hostileNumbers).map((text) => ({ text })) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(
          '"\\u0000"',
          '"a\\u0000b"',
          '"\\ud800"',
          '"💥"',
          '{"__proto__":{"polluted":"yes"}}',
          '{"constructor":{"prototype":{"polluted":"yes"}}}',
          '[{"__proto__":{"polluted":"yes"}}]',
          '{"toString":1,"valueOf":2,"hasOwnProperty":3}',
          "true",
          "null",
          "[]",
          "{}",
          "[null]",
          '[1,"a",{}]',
        )
        .map((text) => ({ text })),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        deep: fc.oneof(
          fc.integer({ min: 1, max: 100 }),
          fc.integer({ min: 100, max: 2000 }),
          fc.integer({ min: 2000, max: 8000 }),
        ),
        open: fc.constantFrom("[" as const, "{" as const),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        array: fc.integer({ min: 1000, max: 60000 }),
        item: fc.constantFrom('"x"', "1", "null", "[]", '"00000000-0000-4000-8000-000000000000"'),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        string: fc.integer({ min: 1000, max: 300000 }),
        char: fc.constantFrom("a", "é", "\u0000", "💥"),
      }),
    },
  );
}

function jsonBody(o: Operation): fc.Arbitrary<BodyPlan> {
  const schema = o.op.requestBody?.content?.["application/json"]?.schema ?? {};
  const object = (schema.anyOf?.[0] ?? schema) as Json;
  const names = Object.keys((object.properties ?? {}) as Json);
  const key = fc.oneof(
    { weight: 5, arbitrary: names.length > 0 ? fc.constantFrom(...names) : fc.constant("x") },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "__proto__",
        "constructor",
        "prototype",
        "toString",
        "",
        "\u0000",
        "💥",
        "$$root",
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
  );
  const object_ = fc.record({
    json: fc.array(fc.tuple(key, jsonValue()), { maxLength: 5 }),
    prefix: fc.constantFrom(undefined, undefined, undefined, "\ufeff{", "[{", " \n\t{"),
    suffix: fc.constantFrom(undefined, undefined, undefined, "", "}}", "},", "]", ",}"),
  });
  return fc.oneof(
    { weight: 8, arbitrary: object_ },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            "",
            " ",
            "null",
            "[]",
            '"str"',
            "1e309",
            "true",
            "{",
            "{]",
            '{"a":}',
            "nul",
            "\u0000",
            "{}\u0000",
          ),
          fc.string({ maxLength: 50 }),
        )
        .map((text) => ({ text })),
    },
    {
      weight: 1,
      // Invalid UTF-8 inside and around a JSON document.
      arbitrary: fc
        .constantFrom("c328", "ff", "fffe", "eda080", "c0af", "f4908080", "00", "80")
        .chain((bad) =>
          fc.constantFrom(
            Buffer.concat([
              Buffer.from('{"title":"'),
              Buffer.from(bad, "hex"),
              Buffer.from('","user_ids":["a"]}'),
            ]).toString("hex"),
            Buffer.concat([Buffer.from(bad, "hex"), Buffer.from("{}")]).toString("hex"),
            Buffer.concat([Buffer.from('{"'), Buffer.from(bad, "hex"), Buffer.from('":1}')]).toString("hex"),
          ),
        )
        .map((hex) => ({ hex })),
    },
    { weight: 1, arbitrary: fc.constant({ none: true as const }) },
  );
}

// ---------------------------------------------------------------- free-form objects

/**
 * Names a document store, a query language or a JavaScript object treats specially: MongoDB's and
 * NeDB's field-name rules (`.` anywhere, a leading `$`), operators, and what assignment into a plain
 * object turns into a prototype change or a shadowed method. Every free-form object of the API document
 * gets them as its names (docs/decisions/0028-multicast-request.md).
 */
export const HOSTILE_NAMES = [
  "a.b",
  ".",
  "..",
  ".a",
  "a.",
  "$",
  "$x",
  "$set",
  "$where",
  "x$y",
  "__proto__",
  "constructor",
  "prototype",
  "hasOwnProperty",
  "toString",
  "valueOf",
  "__defineGetter__",
  "_id",
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "💥",
] as const;

type Segment = string | number;

/**
 * Where a schema holds free-form objects: an object with `additionalProperties` or `patternProperties`
 * (names the client chooses) or without fixed properties, or a schema that allows any value (`{}`), as
 * paths from the schema's root (a list's items as index 0). Alternatives (`anyOf`, `oneOf`) are searched.
 */
export function freeFormPaths(schema: Json | undefined, at: Segment[] = []): Segment[][] {
  if (!schema || typeof schema !== "object") return [];
  const found: Segment[][] = [];
  for (const alternative of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])] as Json[])
    found.push(...freeFormPaths(alternative, at));
  const typed = schema.type !== undefined || schema.anyOf || schema.oneOf || schema.enum || schema.const;
  const freeObject =
    schema.type === "object" &&
    (schema.patternProperties !== undefined ||
      (schema.additionalProperties !== undefined && schema.additionalProperties !== false) ||
      schema.properties === undefined);
  if (!typed || freeObject) found.push(at);
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Json))
    found.push(...freeFormPaths(property as Json, [...at, name]));
  if (schema.items) found.push(...freeFormPaths(schema.items as Json, [...at, 0]));
  return found.filter((p, i) => found.findIndex((q) => JSON.stringify(q) === JSON.stringify(p)) === i);
}

/** Every free-form object of a request body, for each operation of the document that has one. */
export function freeFormObjectsOf(doc: Json): { operation: string; paths: Segment[][] }[] {
  return operationsOf(doc)
    .map((o) => ({ operation: `${o.method} ${o.path}`, paths: freeFormPaths(jsonSchemaOf(o)) }))
    .filter((x) => x.paths.length > 0);
}

const jsonSchemaOf = (o: Operation): Json | undefined =>
  o.op.requestBody?.content?.["application/json"]?.schema as Json | undefined;

/** An object given as its entries, so that a name such as `__proto__` is written out as an entry. */
class Entries {
  constructor(readonly entries: [string, unknown][]) {}
}

/** JSON text of a value whose objects may be Entries (never assigned into a plain object). */
function textOf(v: unknown): string {
  if (v instanceof Entries)
    return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${textOf(x)}`).join(",")}}`;
  if (Array.isArray(v)) return `[${v.map(textOf).join(",")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${textOf(x)}`)
      .join(",")}}`;
  return JSON.stringify(v) ?? "null";
}

/** The smallest value a schema accepts (its required parts only), so the rest of a request is sane. */
export function saneValue(schema: Json | undefined): unknown {
  if (!schema || typeof schema !== "object") return null;
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alternatives) return saneValue(alternatives.find((a) => a.type !== "null") ?? alternatives[0]);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return (schema.enum as unknown[])[0];
  switch (schema.type) {
    case "string":
      return typeof schema.pattern === "string" && schema.pattern.startsWith("^https?")
        ? "https://example.com/p.png"
        : "x".repeat(Math.max(1, Number(schema.minLength ?? 1)));
    case "integer":
    case "number":
      return Number(schema.minimum ?? 1);
    case "boolean":
      return true;
    case "null":
      return null;
    case "array":
      return Array.from({ length: Number(schema.minItems ?? 0) }, (_, i) => {
        const item = saneValue(schema.items as Json);
        return typeof item === "string" && schema.uniqueItems ? `${item}${i}` : item;
      });
    case "object": {
      const out: Record<string, unknown> = {};
      const required = new Set((schema.required ?? []) as string[]);
      for (const [name, property] of Object.entries((schema.properties ?? {}) as Json))
        if (required.has(name)) out[name] = saneValue(property as Json);
      return out;
    }
    default:
      return "x";
  }
}

/** The schema at `path` within `schema` (the first alternative that has it). */
function schemaAt(schema: Json | undefined, path: Segment[]): Json | undefined {
  if (!schema || path.length === 0) return schema;
  for (const alternative of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])] as Json[]) {
    const found = schemaAt(alternative, path);
    if (found) return found;
  }
  const [head, ...rest] = path;
  if (typeof head === "number") return schema.items ? schemaAt(schema.items as Json, rest) : undefined;
  const property = (schema.properties as Json | undefined)?.[head] as Json | undefined;
  return property ? schemaAt(property, rest) : undefined;
}

/** A value an entry of a free-form object accepts (mostly), or one that no schema of it takes. */
function freeFormValue(schema: Json | undefined): fc.Arbitrary<unknown> {
  const entrySchema =
    (Object.values((schema?.patternProperties ?? {}) as Json)[0] as Json | undefined) ??
    (typeof schema?.additionalProperties === "object" ? (schema.additionalProperties as Json) : undefined);
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(entrySchema ? saneValue(entrySchema) : "v") },
    { weight: 2, arbitrary: fc.constantFrom<unknown>("v", 1, true, "") },
    {
      weight: 1,
      arbitrary: fc.constantFrom<unknown>(
        new Entries([["polluted", "yes"]]),
        new Entries([["prototype", new Entries([["polluted", "yes"]])]]),
        [1],
        null,
      ),
    },
  );
}

/** A free-form object named with HOSTILE_NAMES (and sometimes a sane name beside them). */
function hostileObject(schema: Json | undefined): fc.Arbitrary<Entries> {
  const name = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom<string>(...HOSTILE_NAMES) },
    { weight: 1, arbitrary: fc.constantFrom("promo", "screen") },
  );
  return fc
    .uniqueArray(fc.tuple(name, freeFormValue(schema)), { minLength: 1, maxLength: 6, selector: ([n]) => n })
    .map((entries) => new Entries(entries));
}

/** `root` with `value` put at `path` (lists and objects along the way made as needed). */
function placed(root: unknown, path: Segment[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (typeof head === "number") {
    const list = Array.isArray(root) ? [...root] : [];
    list[head] = placed(list[head], rest, value);
    return list;
  }
  const object = root !== null && typeof root === "object" && !Array.isArray(root) ? root : {};
  return { ...(object as Record<string, unknown>), [head]: placed((object as Json)[head], rest, value) };
}

/**
 * A body that is sane but for the free-form objects of the operation's schema (one of them, or all),
 * each named with HOSTILE_NAMES: so those names reach the service, its store and its push transport.
 */
export function freeFormBody(o: Operation): fc.Arbitrary<BodyPlan> {
  const schema = jsonSchemaOf(o);
  const paths = freeFormPaths(schema);
  if (paths.length === 0) return saneBody(o);
  const chosen = fc.oneof(fc.constantFrom(...paths.map((p) => [p])), fc.constant(paths));
  return chosen.chain((targets) =>
    fc.tuple(...targets.map((p) => hostileObject(schemaAt(schema, p)))).map((objects) => {
      let body: unknown = saneValue(schema);
      targets.forEach((p, i) => (body = placed(body, p, objects[i])));
      const top = body instanceof Entries ? body.entries : Object.entries(body as Record<string, unknown>);
      return { json: top.map(([k, v]): [string, JsonPiece] => [k, { text: textOf(v) }]) };
    }),
  );
}

function multipartBody(o: Operation): fc.Arbitrary<BodyPlan> {
  const schema = o.op.requestBody?.content?.["multipart/form-data"]?.schema ?? {};
  const names = Object.keys((schema.properties ?? {}) as Json).filter((n) => n !== "main_picture");
  const valid: Record<string, string> = {
    name: "Jazz",
    price: "100",
    event_type: "online",
    duration: "60",
    participants_limit: "10",
    start_time: "2031-01-01T19:00:00+03:00",
  };
  const value = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...Object.values(valid)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        ...hostileNumbers,
        "",
        "\u0000",
        "💥",
        "offline",
        "-1",
        "NaN",
        "Infinity",
        "2000-01-01T00:00:00Z",
        "javascript:alert(1)",
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 1, arbitrary: long("z", 5000, 70000) },
  );
  const fieldName = fc.oneof(
    { weight: 6, arbitrary: names.length > 0 ? fc.constantFrom(...names) : fc.constant("x") },
    {
      weight: 1,
      arbitrary: fc.constantFrom("__proto__", "constructor", "main_picture", "", 'a"b', "💥", "a.b", "$x"),
    },
  );
  const png = "89504e470d0a1a0a0000000d4948445200000001000000010806000000";
  const plan = fc.record({
    boundary: fc.constantFrom("XyZ", "----b", "a".repeat(70)),
    fields: fc.oneof(
      fc.constant(Object.entries(valid)),
      fc.array(fc.tuple(fieldName, value), { maxLength: 8 }),
      fc
        .integer({ min: 41, max: 200 })
        .map((n) => Array.from({ length: n }, (_, i): [string, string] => [`f${i}`, "v"])),
    ),
    file: fc.option(
      fc.record({
        name: fc.constantFrom("main_picture", "main_picture", "other"),
        type: fc.constantFrom("image/png", "image/jpeg", "text/plain", "", "application/octet-stream"),
        hex: fc.constantFrom(png, "ffd8ffe000104a464946", "00", "", "deadbeef".repeat(100)),
      }),
      { nil: undefined },
    ),
    keep: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
    closing: fc.boolean(),
    declaredBoundary: fc.constantFrom<string | null>(null, null, null, "other"),
  });
  return plan.map((multipart) => ({ multipart }));
}

function body(o: Operation): fc.Arbitrary<BodyPlan> {
  const content = o.op.requestBody?.content ?? {};
  if (content["multipart/form-data"]) {
    return fc.oneof({ weight: 5, arbitrary: multipartBody(o) }, { weight: 1, arbitrary: jsonBody(o) });
  }
  if (content["application/json"]) return jsonBody(o);
  // Routes without a body get one now and then.
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant({ none: true as const }) },
    { weight: 1, arbitrary: jsonBody(o) },
  );
}

const otherMethods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "BREW", "get"];

/** What one request is hostile in; the rest of it is sane, so the hostile part reaches the code behind. */
type Focus =
  "path" | "query" | "credentials" | "headers" | "content-type" | "body" | "free-form" | "everything";

/** A hostile request for one operation (mostly its own method, with valid credentials mostly). */
export function hostileRequest(o: Operation, m: DemoManifest): fc.Arbitrary<RequestPlan> {
  const validCredentials: [string, string][] = JSON.stringify(o.op.security ?? []).includes("APIKeyHeader")
    ? [["x-api-key", o.path.startsWith("/notifications") ? m.api_keys.notifications : m.api_keys.app]]
    : [["Authorization", `Bearer ${m.users.alice.access_token}`]];
  const hasPathParams = o.path.includes("{");
  const hasBody = o.op.requestBody !== undefined;
  const hasFreeForm = freeFormPaths(jsonSchemaOf(o)).length > 0;
  const focus = fc.oneof(
    { weight: hasFreeForm ? 3 : 0, arbitrary: fc.constant<Focus>("free-form") },
    { weight: hasPathParams ? 3 : 0, arbitrary: fc.constant<Focus>("path") },
    { weight: 1, arbitrary: fc.constantFrom<Focus>("query", "credentials", "headers", "content-type") },
    { weight: hasBody ? 4 : 1, arbitrary: fc.constant<Focus>("body") },
    { weight: 1, arbitrary: fc.constant<Focus>("everything") },
  );
  return focus.chain((f) => {
    const on = (...parts: Focus[]) => f === "everything" || parts.includes(f);
    return fc
      .record({
        method: on("everything")
          ? fc.oneof(
              { weight: 3, arbitrary: fc.constant(o.method) },
              { weight: 1, arbitrary: fc.constantFrom(...otherMethods) },
            )
          : fc.constant(o.method),
        target: on("path", "query")
          ? target(o, m, f === "path" ? "path" : f === "query" ? "query" : "both")
          : target(o, m, "query").map((t) => t.split("?")[0]),
        credentials: on("credentials") ? credentials(o, m) : fc.constant(validCredentials),
        contentType: on("content-type")
          ? fc.option(fc.constantFrom(...contentTypes), { nil: undefined, freq: 6 })
          : fc.constant(undefined),
        extra: on("headers") ? extraHeaders(o) : fc.constant([] as [string, string][]),
        body: on("body", "content-type") ? body(o) : f === "free-form" ? freeFormBody(o) : saneBody(o),
      })
      .map(({ method, target, credentials, contentType, extra, body }) => {
        const headers: [string, string][] = [...credentials, ...extra];
        let type = contentType;
        if (type === undefined && "multipart" in body) {
          type = `multipart/form-data; boundary=${body.multipart.declaredBoundary ?? body.multipart.boundary}`;
        } else if (type === undefined && !("none" in body)) {
          type = "application/json";
        }
        if (type !== undefined) headers.push(["Content-Type", type]);
        return { operation: `${o.method} ${o.path}`, method, target, headers, body };
      });
  });
}

/** A body the route accepts the form of (its content may still be refused). */
function saneBody(o: Operation): fc.Arbitrary<BodyPlan> {
  const content = o.op.requestBody?.content ?? {};
  if (content["multipart/form-data"]) {
    return multipartBody(o).map((b) =>
      "multipart" in b
        ? { multipart: { ...b.multipart, keep: 1, closing: true, declaredBoundary: null } }
        : b,
    );
  }
  if (content["application/json"]) return fc.constant({ json: [] });
  return fc.constant({ none: true as const });
}
