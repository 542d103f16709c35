import { resolve } from "node:path";
import {
  importCycles,
  importGraph,
  importsLeavingShared,
  importSpecifiers,
  sourceTree,
  type SourceTree,
} from "../../../support/import-graph";

/** An in-memory tree: the checks below must find what they look for, or their silence proves nothing. */
function tree(sources: Record<string, string>, otherFiles: string[] = []): SourceTree {
  const files = new Set([...Object.keys(sources), ...otherFiles]);
  return { files: Object.keys(sources), read: (file) => sources[file], isFile: (file) => files.has(file) };
}

describe("the import graph of the project's sources", () => {
  // The composition root (app/), the entry points and the tests import everything else; shared/ nothing.
  const folders = ["app", "bench", "bin", "services", "shared", "test"];
  const project = sourceTree(resolve(__dirname, "../../../.."), folders);
  const { graph, unresolved } = importGraph(project);

  it("when the sources are read, then every walked folder has files and every relative import names a file", () => {
    for (const folder of folders) expect(project.files.some((f) => f.startsWith(`${folder}/`))).toBe(true);
    expect(graph.get("app/broker.ts")).toContain("services/rounds.service.ts");
    expect(unresolved).toEqual([]);
  });

  it("when a file under shared/ imports, then it imports only shared/ (never services/ nor the composition root)", () => {
    expect(importsLeavingShared(graph)).toEqual([]);
  });

  it("when imports are followed, type-only ones included, then no file comes back to itself", () => {
    expect(importCycles(graph)).toEqual([]);
  });
});

describe("the import graph checks", () => {
  it("when a source imports in any form, then every specifier is read and commented ones are not", () => {
    const source = [
      'import type { A } from "./a";',
      'export type { B } from "./b";',
      'export * from "./c";',
      'const d = require("./d");',
      'const e = import("./e");',
      'import "./f";',
      '// import { g } from "./g";',
      'import { Errors } from "moleculer";',
    ].join("\n");
    expect(importSpecifiers(source)).toEqual(["./a", "./b", "./c", "./d", "./e", "./f", "moleculer"]);
  });

  it("when a specifier names a file or a folder with an index, then it resolves to it; when neither, then it is unresolved", () => {
    const { graph, unresolved } = importGraph(
      tree({ "services/x.service.ts": 'import "../shared/outbox"; import "./x/y"; import "./missing";' }, [
        "shared/outbox/index.ts",
        "services/x/y.ts",
      ]),
    );
    expect(graph.get("services/x.service.ts")).toEqual(["shared/outbox/index.ts", "services/x/y.ts"]);
    expect(unresolved).toEqual(["services/x.service.ts: ./missing"]);
  });

  it("when a file under shared/ imports services/ or app/, then each such import is reported", () => {
    const { graph } = importGraph(
      tree({
        "shared/runtime/a.ts": 'import { b } from "./b"; import S from "../../services/s.service";',
        "shared/runtime/b.ts": 'import type { Opts } from "../../app/broker-options";',
        "services/s.service.ts": 'import { b } from "../shared/runtime/b";',
        "app/broker-options.ts": "",
      }),
    );
    expect(importsLeavingShared(graph)).toEqual([
      "shared/runtime/a.ts → services/s.service.ts",
      "shared/runtime/b.ts → app/broker-options.ts",
    ]);
  });

  it("when two files import each other's types only, then that cycle is reported from its first file", () => {
    const { graph } = importGraph(
      tree({
        "shared/outbox/relay.ts": 'import type { Entry } from "./index";',
        "shared/outbox/index.ts": 'export { Relay } from "./relay";',
      }),
    );
    expect(importCycles(graph)).toEqual([
      ["shared/outbox/index.ts", "shared/outbox/relay.ts", "shared/outbox/index.ts"],
    ]);
  });

  it("when a cycle runs through several files or a file imports itself, then each is reported once", () => {
    const { graph } = importGraph(
      tree({
        "a.ts": 'import "./b";',
        "b.ts": 'import "./c"; import "./d";',
        "c.ts": 'import "./a";',
        "d.ts": "",
        "e.ts": 'import "./e";',
      }),
    );
    expect(importCycles(graph)).toEqual([
      ["a.ts", "b.ts", "c.ts", "a.ts"],
      ["e.ts", "e.ts"],
    ]);
  });

  it("when files import one another without coming back, then there is no cycle", () => {
    const { graph } = importGraph(
      tree({ "a.ts": 'import "./b"; import "./c";', "b.ts": 'import "./c";', "c.ts": "" }),
    );
    expect(importCycles(graph)).toEqual([]);
  });
});
