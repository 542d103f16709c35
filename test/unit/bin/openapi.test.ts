import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { OPENAPI_FILE, openApiText } from "../../../bin/openapi";

const root = path.join(__dirname, "../../..");

describe("openapi.json", () => {
  it("when the routes or their schemas change, then the committed document is regenerated (npm run docs:openapi)", () => {
    expect(fs.readFileSync(OPENAPI_FILE, "utf8")).toBe(openApiText());
  });

  it("when an operation can be refused, then it declares a 4XX answer (only the probes cannot be)", () => {
    const doc = JSON.parse(openApiText()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    const without = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => !Object.keys(op.responses).some((s) => s.startsWith("4")))
        .map(([method]) => `${method.toUpperCase()} ${p}`),
    );
    expect(without).toEqual(["GET /health", "GET /health/ready"]);
  });

  it("when openapi.json changes, then the typed client's types are regenerated (npm run client:generate)", () => {
    const generated = execFileSync(
      process.execPath,
      [path.join(root, "node_modules/openapi-typescript/bin/cli.js"), "openapi.json"],
      { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
    );
    expect(fs.readFileSync(path.join(root, "clients/typescript/schema.d.ts"), "utf8")).toBe(generated);
  }, 30_000);
});
