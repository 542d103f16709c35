/**
 * Offline schema checks of the deployment files, for the unit tier (no cluster, no Docker, no network).
 *
 * Kubernetes: each document against kubernetes-models, two ways. Its validators (the API's OpenAPI
 * schemas: required fields, types, enums, formats) do not refuse a field they do not know, which is what
 * the API server does (`kubectl apply --validate=strict`, the default). So each document is also written
 * as an object literal typed by the model's interface and given to the TypeScript compiler: an object
 * literal may only name known properties, at every depth, so a misspelt or misplaced field is refused.
 * kubernetes-models 4.x: 5.x ships only ES modules behind `import`-only exports, which Jest's CommonJS
 * runtime cannot load.
 *
 * Compose: the file (YAML merge keys resolved, as compose reads it) against the Compose Specification's
 * JSON schema, which refuses unknown keys but `x-` extensions. The schema is the copy of the
 * specification's compose-spec.json that dclint (a maintained compose linter) ships in its package's
 * schemas/ folder, validated here with the project's ajv.
 */
import fs from "node:fs";
import path from "node:path";
import Ajv from "ajv";
import ts from "typescript";

const root = path.resolve(__dirname, "../../..");

export interface K8sDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** kubernetes-models' module of a kind: `apps/v1` → `kubernetes-models/apps/v1/Deployment`. */
const modelModule = (doc: K8sDoc) => `kubernetes-models/${doc.apiVersion}/${doc.kind}`;

/** What kubernetes-models' validator says of each document: "" when valid. */
export function modelErrors(docs: K8sDoc[]): string[] {
  return docs.map((doc) => {
    const model = require(modelModule(doc))[doc.kind] as new (d: unknown) => { validate(): void };
    try {
      new model(doc).validate();
      return "";
    } catch (err) {
      return `${doc.kind} ${doc.metadata.name}: ${(err as Error).message}`;
    }
  });
}

/**
 * The TypeScript compiler's errors for the documents written as object literals typed by
 * kubernetes-models' interfaces (`IDeployment`, …): an unknown field, a wrong type or a missing required
 * one, each named with its document.
 */
export function typeErrors(docs: K8sDoc[]): string[] {
  const file = path.join(root, "manifests.check.ts");
  const lines: string[] = [];
  const owner: string[] = [];
  docs.forEach((doc, i) => {
    const body = [
      `import type { I${doc.kind} as T${i} } from ${JSON.stringify(modelModule(doc))};`,
      `export const doc${i}: T${i} = ${JSON.stringify(doc, null, 1)};`,
    ].join("\n");
    for (const line of body.split("\n")) {
      lines.push(line);
      owner.push(`${doc.kind} ${doc.metadata.name}`);
    }
  });
  const text = lines.join("\n");
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    // The models' declarations and ES2022's own, not the DOM's: only what the check needs to load.
    lib: ["lib.es2022.d.ts"],
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    path.resolve(name) === file
      ? ts.createSourceFile(name, text, version)
      : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file)!;
  return ts.getPreEmitDiagnostics(program, source).map((d) => {
    const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
    return `${owner[line] ?? "?"}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
}

/** The Compose Specification's JSON schema as dclint ships it, and the package's version. */
export function composeSchema(): { schema: object; source: string } {
  const dir = path.dirname(require.resolve("dclint/package.json"));
  const version = (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string })
    .version;
  return {
    schema: JSON.parse(fs.readFileSync(path.join(dir, "schemas/compose.schema.json"), "utf8")) as object,
    source: `dclint ${version}`,
  };
}

/** ajv's errors for a compose file's content against the specification's schema (empty when valid). */
export function composeErrors(compose: unknown): string[] {
  // strict: false is about the schema (annotation keywords ajv does not know), not the data, which the
  // schema itself holds strictly (additionalProperties: false, patternProperties for `x-`).
  const ajv = new Ajv({ allErrors: true, strict: false });
  // The schema names draft-07 by its https address, which ajv's draft-07 does not go by: the same draft.
  const { $schema: _draft, ...schema } = composeSchema().schema as { $schema?: string };
  const validate = ajv.compile(schema);
  if (validate(compose)) return [];
  return (validate.errors ?? []).map(
    (e) => `${e.instancePath || "/"} ${e.message ?? ""} ${JSON.stringify(e.params)}`,
  );
}
