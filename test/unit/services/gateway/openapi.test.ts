/**
 * The API document itself: valid OpenAPI 3.1 (checked by an OpenAPI validator from npm), complete (every
 * route of the spec and the extensions, both security schemes, the multipart upload), and faithful to
 * the interface's field tables (test/fixtures/spec-fields.json, the section 2 tables of the interface
 * description 1.0.0): required keys, nullability and types.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openApi } from "../../../support/contract";

type Json = Record<string, any>;
const root = path.resolve(__dirname, "../../../..");

interface SpecRow {
  field: string;
  type: string;
  required: string;
  notes: string;
}
/** The field tables of the interface description, kept with the project as a fixture. */
const specFields = JSON.parse(fs.readFileSync(path.join(root, "test/fixtures/spec-fields.json"), "utf8")) as {
  tables: Record<string, SpecRow[]>;
  lists: Record<string, { field: string; type: string }[]>;
};

function validate(doc: Json): { valid: boolean; errors?: unknown } {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "openapi-")), "doc.json");
  fs.writeFileSync(file, JSON.stringify(doc));
  // The validator is an ES module; its CLI runs it in a process of its own.
  const cli = path.join(root, "node_modules/@seriousme/openapi-schema-validator/bin/validate-api-cli.js");
  const res = spawnSync(process.execPath, [cli, file], { encoding: "utf8" });
  return JSON.parse(res.stdout);
}

describe("the OpenAPI document", () => {
  it("when validated as OpenAPI 3.1, then it is valid", () => {
    expect(openApi.openapi).toBe("3.1.0");
    expect(validate(openApi)).toEqual({ valid: true });
  });

  it("when a document is broken, then the same validator says so (the check can fail)", () => {
    const broken = { ...openApi, paths: { "/x": { get: { responses: { "200": { content: 5 } } } } } };
    expect(validate(broken).valid).toBe(false);
  });

  it("when listed, then it has every route of the spec and the extensions, with version 1.0.0", () => {
    expect(openApi.info.version).toBe("1.0.0");
    const ops = Object.entries(openApi.paths).flatMap(([p, item]) =>
      Object.keys(item as Json).map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(ops.sort()).toEqual(
      [
        "POST /rounds/{round_id}/join",
        "GET /rounds/{round_id}",
        "POST /auth/refresh-token",
        "POST /stores/{store_id}/events",
        "GET /users/friends",
        "GET /users/payments",
        "GET /app-settings",
        "POST /notifications/send-multicast",
        "GET /notifications/{job_id}",
        "GET /media/{name}",
        "GET /health",
        "GET /health/ready",
        "GET /.well-known/jwks.json",
      ].sort(),
    );
  });

  it("when it names security, then bearer and x-api-key are the schemes, per route as the spec's §5 table", () => {
    expect(openApi.components.securitySchemes).toEqual({
      HTTPBearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
      APIKeyHeader: { type: "apiKey", in: "header", name: "x-api-key" },
    });
    expect(openApi.paths["/rounds/{round_id}"].get.security).toEqual([{ HTTPBearer: [] }]);
    expect(openApi.paths["/app-settings"].get.security).toEqual([{ APIKeyHeader: [] }]);
    expect(openApi.paths["/notifications/send-multicast"].post.security).toEqual([{ APIKeyHeader: [] }]);
  });

  it("when it describes the store-event upload, then it is multipart with main_picture as binary", () => {
    const body =
      openApi.paths["/stores/{store_id}/events"].post.requestBody.content["multipart/form-data"].schema;
    expect(body.properties.main_picture).toEqual(
      expect.objectContaining({ type: "string", format: "binary" }),
    );
    expect(body.required).toEqual(expect.arrayContaining(["name", "price", "main_picture"]));
  });

  it("when it lists responses, then statuses are as the routes answer them", () => {
    const codes = (p: string, m: string) => Object.keys(openApi.paths[p][m].responses);
    expect(codes("/rounds/{round_id}/join", "post")).toEqual(
      expect.arrayContaining(["200", "401", "404", "409", "413", "422"]),
    );
    expect(codes("/notifications/send-multicast", "post")).toEqual(
      expect.arrayContaining(["202", "401", "403", "409", "422"]),
    );
    expect(codes("/stores/{store_id}/events", "post")).toEqual(
      expect.arrayContaining(["200", "400", "403", "404", "409", "413", "415", "422"]),
    );
  });
});

/** Rows of the field table of a section of the interface. */
function specTable(heading: string): SpecRow[] {
  const rows = specFields.tables[heading];
  if (!rows) throw new Error(`no field table for ${heading} in the fixture`);
  return rows;
}

const okSchema = (p: string, m: string, s = "200") =>
  openApi.paths[p][m].responses[s].content["application/json"].schema;
const round = () => okSchema("/rounds/{round_id}", "get");
const item = () => round().properties.item;
const variants = (s: Json): Json[] => (s.anyOf ? s.anyOf : [s]);
const nullable = (s: Json) => variants(s).some((v) => v.type === "null");
const core = (s: Json) => variants(s).find((v) => v.type !== "null") as Json;

function expectedType(type: string): string {
  const t = type.toLowerCase();
  if (t.startsWith("array")) return "array";
  if (t.startsWith("string")) return "string";
  if (t.startsWith("integer")) return "integer";
  if (t.startsWith("number")) return "number";
  if (t.startsWith("boolean")) return "boolean";
  return "object";
}

const tables: [string, () => Json][] = [
  ["2.1 Round", round],
  ["2.2 RoundOwner", () => round().properties.owner],
  ["2.3 RoundItem", item],
  ["2.4 ItemAsset", () => core(item().properties.assets).items],
  ["2.5 ProductCategory", () => core(item().properties.category)],
  ["2.6 ItemStore", () => item().properties.store],
  ["2.7 ItemLocation", () => core(item().properties.location)],
  ["2.8 GroupedAttributeValue", () => core(item().properties.attribute_values).items],
  ["2.9 RoundParticipant", () => core(round().properties.participant_statuses).items],
  ["2.11 RoundLocation", () => core(round().properties.locations).items],
];

describe("the document against the spec's field tables", () => {
  it.each(tables)(
    "when §%s is compared, then every field has its type, required-ness and nullability",
    (heading, schemaOf) => {
      const schema = schemaOf();
      const rows = specTable(heading);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        const prop = schema.properties[row.field];
        expect({ field: row.field, present: prop !== undefined }).toEqual({
          field: row.field,
          present: true,
        });
        expect({ field: row.field, type: core(prop).type }).toEqual({
          field: row.field,
          type: expectedType(row.type),
        });
        if (row.required.startsWith("yes"))
          expect({ field: row.field, required: schema.required.includes(row.field) }).toEqual({
            field: row.field,
            required: true,
          });
        if (/nullable/.test(`${row.type} ${row.notes}`))
          expect({ field: row.field, nullable: nullable(prop) }).toEqual({
            field: row.field,
            nullable: true,
          });
      }
    },
  );

  it("when §2.12 Store event is compared, then every listed field is in the response with its type", () => {
    const schema = okSchema("/stores/{store_id}/events", "post");
    for (const row of specTable("2.12 Store event")) {
      expect({ field: row.field, type: core(schema.properties[row.field] ?? {}).type }).toEqual({
        field: row.field,
        type: expectedType(row.type),
      });
    }
  });

  it.each([
    ["2.13 Friend", () => okSchema("/users/friends", "get").items],
    ["2.14 Payment", () => okSchema("/users/payments", "get").items],
    ["2.15 Token set", () => okSchema("/auth/refresh-token", "post")],
    ["2.16 App settings result", () => okSchema("/app-settings", "get")],
  ])(
    "when §%s (an inline list) is compared, then every named field has its type and is required",
    (heading, schemaOf) => {
      const fields = (specFields.lists[heading] ?? []).map((f) => [f.field, f.type]);
      expect(fields.length).toBeGreaterThan(2);
      const schema = schemaOf();
      for (const [field, type] of fields) {
        expect({ field, type: core(schema.properties[field] ?? {}).type }).toEqual({ field, type });
        expect({ field, required: (schema.required ?? []).includes(field) }).toEqual({
          field,
          required: true,
        });
      }
    },
  );
});
