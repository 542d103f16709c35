/**
 * The body fields each route hands on to its action, derived from the contracts' JSON Schemas (the
 * action's params schema, or the multipart form's), less what the path, the query and the headers
 * give: anything else a client sends is dropped at the gateway and never reaches a service, as
 * FastAPI's models ignore extra fields (decision 0037). A body may not name a path, query or header
 * parameter either (a body's `idempotency_key` is not an Idempotency-Key).
 */
import type { TSchema } from "@sinclair/typebox";
import { FILE_FIELD } from "./multipart";
import { pathParamsOf, routes, type RouteSpec } from "./routes";

const propertiesOf = (schema: TSchema | undefined): string[] =>
  Object.keys((schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});

/** The body fields of a route, in the order its schema lists them. */
export function bodyFieldsOf(spec: RouteSpec): readonly string[] {
  const elsewhere = new Set([
    ...pathParamsOf(spec),
    ...(spec.query ?? []),
    ...Object.values(spec.headers ?? {}),
    FILE_FIELD,
  ]);
  const schema = spec.body === "multipart" ? spec.doc.form : spec.doc.params;
  return propertiesOf(schema).filter((name) => !elsewhere.has(name));
}

const fieldsByAction = new Map(routes.map((r) => [r.action, bodyFieldsOf(r)]));

/**
 * The known fields of `body`, as own properties of a new object. Costs one look-up per known field,
 * whatever the body holds (a body of a million unknown names costs the same as an empty one).
 */
export function knownFields<T>(spec: RouteSpec, body: Record<string, T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const name of fieldsByAction.get(spec.action) ?? bodyFieldsOf(spec)) {
    if (Object.hasOwn(body, name)) out[name] = body[name];
  }
  return out;
}
