/**
 * LOG_FORMAT=json lines: Moleculer's own "json" formatter (`{ts, level, msg, nodeID, ns, mod}`, one JSON
 * object a line), except that a line logged with a plain object first (the gateway's access log) carries
 * that object's fields at the top level, where a collector indexes them, rather than printed into `msg`.
 * A formatter function is the Console logger's documented way to shape a line.
 */
export type PrintArgs = (args: unknown[]) => unknown[];

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype;

export function jsonLine(
  type: string,
  args: unknown[],
  bindings: Record<string, unknown> | undefined,
  { printArgs }: { printArgs: PrintArgs },
): string[] {
  const fields = isPlainObject(args[0]) ? args[0] : null;
  return [
    JSON.stringify({
      ts: Date.now(),
      level: type,
      msg: printArgs(fields ? args.slice(1) : args).join(" "),
      ...bindings,
      ...fields,
    }),
  ];
}
