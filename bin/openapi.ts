/**
 * `npm run docs:openapi`: writes openapi.json, the API document the gateway serves at /openapi.json with the
 * default PUBLIC_URL, so that linters and client generators read it without starting the system. Then the
 * typed client's types are generated from it (`npm run client:generate`). test/unit/bin/openapi.test.ts
 * fails when the committed file is stale.
 */
import fs from "node:fs";
import path from "node:path";
import { buildOpenApi } from "../services/gateway/openapi";
import { routes } from "../services/gateway/routes";

export const OPENAPI_FILE = path.join(__dirname, "..", "openapi.json");

/** The document as committed: the gateway's own, two-space indented, one newline at the end. */
export const openApiText = (): string => `${JSON.stringify(buildOpenApi(routes, ""), null, 2)}\n`;

if (require.main === module) {
  fs.writeFileSync(OPENAPI_FILE, openApiText());
  process.stdout.write(`wrote ${path.relative(process.cwd(), OPENAPI_FILE)}\n`);
}
