/**
 * Reading what a service stored, for assertions. In one process that is the store itself; in the cluster
 * each service process owns its NeDB files, so the test reads a snapshot of the file with NeDB's own
 * parser and matcher, never opening it as a datastore (loading would compact the file under the owner).
 */
import fs from "node:fs";
import path from "node:path";
import type { Filter } from "../../shared/storage/port";

const model = require("@seald-io/nedb/lib/model") as {
  deserialize(line: string): Record<string, unknown>;
  match(doc: unknown, query: Filter): boolean;
};

export interface CollectionReader<T> {
  find(filter: Filter): Promise<T[]>;
  count(filter: Filter): Promise<number>;
}

export interface StoreReader {
  collection<T extends { _id: string | number }>(name: string): CollectionReader<T>;
}

/** The documents of one NeDB file as its owner sees them: the last line per id wins, deletions remove. */
export function readNedbFile(file: string): Record<string, unknown>[] {
  if (!fs.existsSync(file)) return [];
  const byId = new Map<unknown, Record<string, unknown>>();
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const doc = model.deserialize(line);
    if (doc.$$indexCreated !== undefined || doc.$$indexRemoved !== undefined) continue;
    if (doc.$$deleted === true) byId.delete(doc._id);
    else byId.set(doc._id, doc);
  }
  return [...byId.values()];
}

export function nedbFolderReader(dir: string): StoreReader {
  return {
    collection<T>(name: string): CollectionReader<T> {
      const find = async (filter: Filter) =>
        readNedbFile(path.join(dir, `${name}.db`)).filter((d) => model.match(d, filter)) as T[];
      return { find, count: async (filter) => (await find(filter)).length };
    },
  };
}
