/**
 * The methods the gateway's aliases take on a path, for a 405's `Allow`: read from the gateway's own
 * alias table (moleculer-web keeps its resolved aliases to itself), and matched as moleculer-web matches
 * an alias (path-to-regexp's defaults: case-insensitive, `:name` one segment, a trailing slash allowed,
 * and a path whose escapes cannot be decoded matching nothing).
 */
export type AllowedMethods = (url: string) => string[];

interface Entry {
  method: string;
  re: RegExp;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `GET /rounds/:round_id` → GET and a pattern whose groups are the path's parameters. */
function entryOf(key: string): Entry {
  const [method, path] = key.split(" ");
  const segments = path.split("/").map((s) => (s.startsWith(":") ? "([^/]+?)" : escapeRegExp(s)));
  return { method, re: new RegExp(`^${segments.join("/")}/?$`, "i") };
}

function decodable(groups: string[]): boolean {
  try {
    for (const g of groups) decodeURIComponent(g);
    return true;
  } catch {
    return false;
  }
}

/** `aliasKeys`: moleculer-web's alias keys, "METHOD /path". */
export function allowedMethodsOf(aliasKeys: readonly string[]): AllowedMethods {
  const entries = aliasKeys.map(entryOf);
  return (url) => {
    const allowed = new Set<string>();
    for (const { method, re } of entries) {
      const m = re.exec(url);
      if (m && decodable(m.slice(1))) allowed.add(method);
    }
    return [...allowed];
  };
}
