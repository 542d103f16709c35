import fs from "node:fs";
import path from "node:path";
import { configSchema } from "../../../shared/config";

describe("configuration table of docs/operations.md", () => {
  const doc = fs.readFileSync(path.resolve(__dirname, "../../../docs/operations.md"), "utf8");
  const start = doc.indexOf("<!-- config-table:start -->");
  const end = doc.indexOf("<!-- config-table:end -->");
  const table = doc.slice(start, end);

  it("when read, then it has the generated table's markers in order", () => {
    expect(start).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
  });

  it.each(Object.values(configSchema).map((e) => [e.env, e]))(
    "when %s is a setting, then the table documents it with its default and description",
    (env, e) => {
      const rows = table.split("\n").map((line) => line.split("|").map((cell) => cell.trim()));
      const row = rows.find((cells) => cells[1] === `\`${env}\``);
      expect(row).toBeDefined();
      expect(row?.[2]).toBe(e.default === "" ? "(empty)" : `\`${e.default}\``);
      expect(row?.[3]).toBe(e.doc);
    },
  );

  it("when each setting's description is read, then it is a phrase that keeps the table narrow", () => {
    const long = Object.values(configSchema).filter((e) => e.doc.length > 60 || e.doc.includes("|"));
    expect(long.map((e) => e.env)).toEqual([]);
  });
});
