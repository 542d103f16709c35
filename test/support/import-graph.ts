/**
 * The project's import graph, read from its TypeScript sources: every relative import, `export ... from`,
 * `require` and dynamic `import()`, type-only ones included (they vanish from the JavaScript, yet they
 * still tie two modules together), resolved as TypeScript and Node resolve them here (`x.ts`, `x/index.ts`).
 * Package imports are left out: a package cannot point back into the project.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, posix } from "node:path";
import ts from "typescript";

/** Files by path relative to the repository root, with forward slashes. */
export interface SourceTree {
  /** The sources whose imports are read. */
  files: string[];
  read(file: string): string;
  /** Whether an import may name this path (any file of the repository, not only `files`). */
  isFile(file: string): boolean;
}

/** Each source and the project files it imports. */
export type ImportGraph = Map<string, string[]>;

/** The module specifiers a source names, in any of the forms above; comments are not read. */
export function importSpecifiers(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** The file a relative specifier names from `from`, or null when it names none. */
export function resolveRelative(
  from: string,
  specifier: string,
  isFile: (file: string) => boolean,
): string | null {
  const base = posix.normalize(posix.join(posix.dirname(from), specifier));
  const candidates = [`${base}.ts`, base, `${base}/index.ts`, `${base}.js`, `${base}.json`];
  return candidates.find(isFile) ?? null;
}

/** The graph of `tree`'s relative imports, and the imports that name no file ("from: specifier"). */
export function importGraph(tree: SourceTree): { graph: ImportGraph; unresolved: string[] } {
  const graph: ImportGraph = new Map();
  const unresolved: string[] = [];
  for (const file of tree.files) {
    const targets: string[] = [];
    for (const specifier of importSpecifiers(tree.read(file))) {
      if (!specifier.startsWith(".")) continue;
      const target = resolveRelative(file, specifier, tree.isFile);
      if (target) targets.push(target);
      else unresolved.push(`${file}: ${specifier}`);
    }
    graph.set(file, targets);
  }
  return { graph, unresolved };
}

/** The TypeScript sources (not declarations) under `folders` of the repository at `root`. */
export function sourceTree(root: string, folders: string[]): SourceTree {
  const files: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = `${folder}/${entry.name}`;
      if (entry.isDirectory() && entry.name !== "node_modules") walk(path);
      else if (entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))
        files.push(path);
    }
  };
  for (const folder of folders) walk(folder);
  return {
    files: files.sort(),
    read: (file) => readFileSync(join(root, file), "utf8"),
    isFile: (file) => {
      try {
        return statSync(join(root, file)).isFile();
      } catch {
        return false;
      }
    },
  };
}

/** Imports from a file under `shared/` to a file outside it ("from → to"). */
export function importsLeavingShared(graph: ImportGraph): string[] {
  const leaving: string[] = [];
  for (const [from, targets] of graph) {
    if (!from.startsWith("shared/")) continue;
    for (const to of targets) if (!to.startsWith("shared/")) leaving.push(`${from} → ${to}`);
  }
  return leaving;
}

/**
 * One cycle per group of files that import each other (strongly connected components, Tarjan), each as
 * the path from its first file around and back to it, e.g. ["a.ts", "b.ts", "a.ts"].
 */
export function importCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];

  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group = new Set<string>();
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.add(member);
    } while (member !== file);
    if (group.size > 1 || graph.get(file)!.includes(file)) cycles.push(cycleWithin(graph, group));
  };

  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles;
}

/** The shortest path from the group's first file back to it through the group (breadth first). */
function cycleWithin(graph: ImportGraph, group: Set<string>): string[] {
  const start = [...group].sort()[0];
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0 && !previous.has(start)) {
    const file = queue.shift()!;
    for (const next of graph.get(file) ?? []) {
      if (!group.has(next) || previous.has(next)) continue;
      previous.set(next, file);
      queue.push(next);
    }
  }
  const between: string[] = [];
  for (let file = previous.get(start)!; file !== start; file = previous.get(file)!) between.unshift(file);
  return [start, ...between, start];
}
