/**
 * The project's single ajv instance. Every JSON Schema (request params, responses, event payloads) is
 * compiled here, and `AjvValidator` plugs it into the broker so action `params` are JSON Schemas.
 */
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { Validators } from "moleculer";
import { boundIssues, MAX_ISSUES, type ValidationIssue } from "../errors";

export const ajv = new Ajv({
  allErrors: true, // report every bad field at once, as FastAPI does
  useDefaults: true,
  coerceTypes: false,
  verbose: true, // keeps the offending value on each error: it becomes `input`
  strict: false,
});
addFormats(ajv);

const compiled = new WeakMap<object, ValidateFunction>();

/** Compiles once per schema object; hot paths call the returned function only. */
export function compileSchema(schema: object): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn;
}

function pathOf(instancePath: string): (string | number)[] {
  if (instancePath === "") return [];
  return instancePath
    .slice(1)
    .split("/")
    .map((seg) => seg.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg));
}

const typeNames: Record<string, [string, string]> = {
  string: ["string_type", "Input should be a valid string"],
  integer: ["int_type", "Input should be a valid integer"],
  number: ["float_type", "Input should be a valid number"],
  boolean: ["bool_type", "Input should be a valid boolean"],
  array: ["list_type", "Input should be a valid list"],
  object: ["dict_type", "Input should be a valid dictionary"],
  null: ["none_required", "Input should be None"],
};

const quoteList = (values: unknown[]): string => {
  const quoted = values.map((v) => `'${String(v)}'`);
  return quoted.length > 1
    ? `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`
    : quoted.join("");
};

/** Translates one ajv error into FastAPI's error entry (type names as pydantic v2 spells them). */
export function toIssue(err: ErrorObject): ValidationIssue {
  const loc = pathOf(err.instancePath);
  const input = err.data;
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case "required":
      return { type: "missing", loc: [...loc, String(p.missingProperty)], msg: "Field required", input };
    case "type": {
      const wanted = String(p.type).split(",")[0];
      const [type, msg] = typeNames[wanted] ?? ["type_error", `Input should be of type ${wanted}`];
      return { type, loc, msg, input };
    }
    case "enum":
      return { type: "enum", loc, msg: `Input should be ${quoteList(p.allowedValues as unknown[])}`, input };
    case "const":
      return { type: "literal_error", loc, msg: `Input should be ${quoteList([p.allowedValue])}`, input };
    case "minLength":
      return {
        type: "string_too_short",
        loc,
        msg: `String should have at least ${p.limit} characters`,
        input,
      };
    case "maxLength":
      return { type: "string_too_long", loc, msg: `String should have at most ${p.limit} characters`, input };
    case "minimum":
      return {
        type: "greater_than_equal",
        loc,
        msg: `Input should be greater than or equal to ${p.limit}`,
        input,
      };
    case "exclusiveMinimum":
      return { type: "greater_than", loc, msg: `Input should be greater than ${p.limit}`, input };
    case "maximum":
      return { type: "less_than_equal", loc, msg: `Input should be less than or equal to ${p.limit}`, input };
    case "exclusiveMaximum":
      return { type: "less_than", loc, msg: `Input should be less than ${p.limit}`, input };
    case "minItems":
      return { type: "too_short", loc, msg: `List should have at least ${p.limit} items`, input };
    case "maxItems":
      return { type: "too_long", loc, msg: `List should have at most ${p.limit} items`, input };
    case "pattern":
      return {
        type: "string_pattern_mismatch",
        loc,
        msg: `String should match pattern '${p.pattern}'`,
        input,
      };
    case "additionalProperties":
      return {
        type: "extra_forbidden",
        loc: [...loc, String(p.additionalProperty)],
        msg: "Extra inputs are not permitted",
        input: (input as Record<string, unknown> | undefined)?.[String(p.additionalProperty)],
      };
    case "format":
      return { type: "value_error", loc, msg: `Input should be a valid ${p.format}`, input };
    default:
      return { type: "value_error", loc, msg: err.message ?? "Invalid value", input };
  }
}

/**
 * ajv reports every branch of an anyOf/oneOf plus the anyOf itself. Pydantic reports one entry per field:
 * drop the anyOf itself, the "or null" branch of a nullable field when another error stands at the same
 * place, merge the `const` branches of a union of literals into one message naming every allowed value,
 * and keep one entry per location and type.
 */
export function toIssues(errors: ErrorObject[] | null | undefined): ValidationIssue[] {
  const list = (errors ?? []).filter((e) => e.keyword !== "anyOf" && e.keyword !== "oneOf");
  const isNullBranch = (e: ErrorObject) =>
    e.keyword === "type" && (e.params as { type?: string }).type === "null";
  const constValues = new Map<string, unknown[]>();
  for (const e of list) {
    if (e.keyword !== "const") continue;
    const values = constValues.get(e.instancePath) ?? [];
    values.push((e.params as { allowedValue: unknown }).allowedValue);
    constValues.set(e.instancePath, values);
  }
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  for (const err of list) {
    if (
      isNullBranch(err) &&
      list.some((o) => o !== err && o.instancePath === err.instancePath && !isNullBranch(o))
    )
      continue;
    const issue =
      err.keyword === "const"
        ? { ...toIssue(err), msg: `Input should be ${quoteList(constValues.get(err.instancePath) ?? [])}` }
        : toIssue(err);
    const key = `${JSON.stringify(issue.loc)}|${issue.type}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
    if (issues.length >= MAX_ISSUES) break;
  }
  // Bounded here, where they are made: the error packet crosses the transporter (see boundIssues).
  return boundIssues(issues);
}

/** Validates `data` against `schema`; returns true or the FastAPI-shaped issues. */
export function check(schema: object, data: unknown): true | ValidationIssue[] {
  const fn = compileSchema(schema);
  return fn(data) ? true : toIssues(fn.errors);
}

/** The broker's validator: action and event `params` are JSON Schemas checked by the shared ajv. */
export class AjvValidator extends Validators.Base {
  override compile(schema: object) {
    const fn = compileSchema(schema);
    return (params: unknown) => (fn(params) ? true : toIssues(fn.errors));
  }

  override validate(params: unknown, schema: object): boolean {
    return check(schema, params) === true;
  }

  override convertSchemaToMoleculer(schema: object): object {
    return schema;
  }
}
