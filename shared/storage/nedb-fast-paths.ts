/**
 * Two of NeDB's per-write costs, done the cheap way with the same results (what they cost a token
 * refresh: docs/decisions/0052-nedb-write-path.md):
 * - `serializeLine` writes NeDB's line format (`{"$$date": ms}` for dates) without `JSON.stringify`'s
 *   replacer callback, which NeDB calls for every key and value. Keys need no check here: NeDB checked
 *   them when the document was inserted or modified.
 * - `updateInPlace` (the nedb-index-update hook, shared/storage/nedb-internals) makes an index update whose key did not change swap the document in its tree
 *   node, where NeDB deletes the key (rebalancing the tree) and inserts it again, in every index, on
 *   every update.
 */

/** The two functions of NeDB's `lib/model` the index swap compares keys with. */
export interface NedbModel {
  compareThings(a: unknown, b: unknown): number;
  getDotValue(doc: unknown, field: string): unknown;
}

type Doc = Record<string, unknown>;
type Pair = { oldDoc: Doc; newDoc: Doc };

interface TreeNode {
  key?: unknown;
  data: Doc[];
  left?: TreeNode | null;
  right?: TreeNode | null;
}

/** What the swap reads of a NeDB index and of its tree (@seald-io/binary-search-tree's nodes). */
export interface NedbIndex {
  _fields: string[];
  sparse: boolean;
  tree: { tree: TreeNode };
  update(oldDoc: Doc | Pair[], newDoc?: Doc): void;
}

/** A document as NeDB writes it to its file: dates become `{"$$date": ms}`, the rest is plain JSON. */
function plain(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return { $$date: value.getTime() };
  if (Array.isArray(value)) return value.map(plain);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = plain((value as Record<string, unknown>)[key]);
  return out;
}

/** The same line as NeDB's `model.serialize` for a document NeDB has already checked. */
export const serializeLine = (doc: unknown): string => JSON.stringify(plain(doc));

const scalarKey = (key: unknown): boolean =>
  key === null || key === undefined || typeof key !== "object" || key instanceof Date;

function nodeOf(model: NedbModel, index: NedbIndex, key: unknown): TreeNode | null {
  let node: TreeNode | null | undefined = index.tree.tree;
  while (node && Object.prototype.hasOwnProperty.call(node, "key")) {
    const order = model.compareThings(key, node.key);
    if (order === 0) return node;
    node = order < 0 ? node.left : node.right;
  }
  return null;
}

/** Swaps `from` for `to` where the index holds it, when both have the same single scalar key. */
function swap(model: NedbModel, index: NedbIndex, from: Doc, to: Doc): boolean {
  if (index._fields.length !== 1) return false; // compound keys: NeDB's own way
  const field = index._fields[0] as string;
  const oldKey = model.getDotValue(from, field);
  const newKey = model.getDotValue(to, field);
  if (!scalarKey(oldKey) || !scalarKey(newKey)) return false; // array keys index one node per element
  if (index.sparse && oldKey === undefined && newKey === undefined) return true; // never indexed
  if ((oldKey === undefined) !== (newKey === undefined)) return false;
  if (model.compareThings(oldKey, newKey) !== 0) return false;
  const node = nodeOf(model, index, oldKey);
  const at = node ? node.data.indexOf(from) : -1;
  if (!node || at < 0) return false;
  node.data[at] = to;
  return true;
}

/**
 * NeDB's `Index.prototype.update`, wrapped: what cannot be swapped goes through NeDB's own update, and
 * if that throws (a unique key taken), the swaps made are undone first, so the index is as it was, as
 * NeDB's rollback across indexes expects.
 */
export function updateInPlace(model: NedbModel, nedbUpdate: NedbIndex["update"]): NedbIndex["update"] {
  return function update(this: NedbIndex, oldDoc: Doc | Pair[], newDoc?: Doc) {
    const pairs = Array.isArray(oldDoc) ? oldDoc : [{ oldDoc, newDoc: newDoc as Doc }];
    const swapped: Pair[] = [];
    const rest: Pair[] = [];
    for (const pair of pairs) (swap(model, this, pair.oldDoc, pair.newDoc) ? swapped : rest).push(pair);
    if (rest.length === 0) return;
    try {
      nedbUpdate.call(this, rest);
    } catch (err) {
      for (const pair of swapped) swap(model, this, pair.newDoc, pair.oldDoc);
      throw err;
    }
  };
}
