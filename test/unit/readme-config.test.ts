import fs from "node:fs";
import path from "node:path";
import { configSchema } from "../../shared/config";

describe("README configuration table", () => {
  const readme = fs.readFileSync(path.resolve(__dirname, "../../README.md"), "utf8");

  it.each(Object.values(configSchema).map((e) => [e.env, e]))(
    "when %s is a setting, then the README documents it with its default",
    (env, e) => {
      const rows = readme.split("\n").map((line) => line.split("|").map((cell) => cell.trim()));
      const row = rows.find((cells) => cells[1] === `\`${env}\``);
      expect(row).toBeDefined();
      expect(row?.[2]).toBe(e.default === "" ? "(empty)" : `\`${e.default}\``);
    },
  );
});
