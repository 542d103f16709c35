/**
 * The contract check: every response the e2e tests receive is validated against the OpenAPI document's
 * schema for its route and status. A status the document does not list, or a body that drifts from it,
 * fails the test. Paths the document does not describe (unknown routes) are left to the test.
 */
import Ajv, { type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { buildOpenApi } from "../../services/gateway/openapi";
import { routes } from "../../services/gateway/routes";

type Json = Record<string, any>;

export const openApi = buildOpenApi(routes, "") as Json;

// A separate ajv: checking a response must never fill in defaults or otherwise touch it.
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);

const components = openApi.components.schemas as Json;
const resolve = (schema: Json): Json =>
  schema.$ref ? components[String(schema.$ref).split("/").pop() as string] : schema;

/**
 * The pattern of an OpenAPI path template, matched exactly; or, `asRouted`, as moleculer-web matches an
 * alias: letters in either case and up to two trailing slashes (it cuts one, then the alias allows one).
 */
export function templatePattern(template: string, asRouted = false): RegExp {
  const path = template.replace(/\{[^}]+\}/g, "[^/]+");
  return asRouted ? new RegExp(`^${path}/{0,2}$`, "i") : new RegExp(`^${path}$`);
}

const templates = Object.keys(openApi.paths).map((p) => ({ path: p, re: templatePattern(p) }));

const compiled = new Map<string, ValidateFunction>();

export function checkContract(
  method: string,
  url: string,
  status: number,
  contentType: string | null,
  body: unknown,
): void {
  const pathname = new URL(url, "http://x").pathname;
  const template = templates.find((t) => t.re.test(pathname));
  const operation = template && (openApi.paths[template.path] as Json)[method.toLowerCase()];
  if (!operation) return;
  const response = operation.responses[String(status)];
  if (!response) {
    throw new Error(
      `${method} ${template.path} answered ${status}, which the OpenAPI document does not list`,
    );
  }
  const media = response.content?.["application/json"];
  if (!media || !contentType?.includes("application/json")) return;
  const key = `${method} ${template.path} ${status}`;
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(resolve(media.schema));
    compiled.set(key, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `${key}: body drifts from the OpenAPI document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}

/** fetch(), with the response checked against the document like every api() call. */
export async function contractFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(url, init);
  const type = res.headers.get("content-type");
  const body = type?.includes("application/json") ? await res.clone().json() : null;
  checkContract(init.method ?? "GET", url, res.status, type, body);
  return res;
}
