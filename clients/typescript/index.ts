/**
 * The typed client of the Rounds API: openapi-fetch over the types openapi-typescript generates from
 * openapi.json (`npm run client:generate` writes schema.d.ts; never edit it by hand). Every path, parameter,
 * body and answer is typed from the same document the gateway serves.
 */
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "./schema";

export type { components, operations, paths };
/** The body of every error but 422 (`{"detail": "..."}`). */
export type ErrorBody = components["schemas"]["ErrorBody"];
/** The body of a 422 (`{"detail": [{"loc", "msg", "type"}]}`). */
export type ValidationErrorBody = components["schemas"]["ValidationErrorBody"];

export interface RoundsClientOptions extends ClientOptions {
  /** An access token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** An API key, sent as `x-api-key` (app settings, multicast). */
  apiKey?: string;
}

/** A client for one base URL and one set of credentials. */
export function createRoundsClient({
  token,
  apiKey,
  headers,
  ...options
}: RoundsClientOptions): Client<paths> {
  const credentials: Record<string, string> = {};
  if (token) credentials.Authorization = `Bearer ${token}`;
  if (apiKey) credentials["x-api-key"] = apiKey;
  return createClient<paths>({ ...options, headers: { ...credentials, ...(headers as object) } });
}
