/**
 * Which folders a process must be able to write before it starts (shared/runtime/writable-folders): the
 * embedded store's DATA_DIR for any storing service, the pictures' folder for the stores service, and
 * nothing with MONGO_URI (documents in MongoDB, pictures in GridFS).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  ensureWritable,
  FolderNotWritableError,
  foldersToWrite,
} from "../../../../shared/runtime/writable-folders";

const base = { mongoUri: "", dataDir: "/var/lib/rounds" };

describe("foldersToWrite", () => {
  it("when the stores service runs on the embedded store, then DATA_DIR and DATA_DIR/media are needed", () => {
    expect(foldersToWrite({ ...base, services: ["stores"] }).map((f) => [f.setting, f.dir])).toEqual([
      ["DATA_DIR", "/var/lib/rounds"],
      ["DATA_DIR", "/var/lib/rounds/media"],
    ]);
  });

  it("when MONGO_URI is set, then no folder is needed, not even by the stores service", () => {
    expect(foldersToWrite({ ...base, mongoUri: "mongodb://m/r", services: ["stores", "auth"] })).toEqual([]);
  });

  it("when the process runs the gateway alone, then it needs no folder", () => {
    expect(foldersToWrite({ ...base, services: ["gateway"] })).toEqual([]);
  });
});

describe("ensureWritable", () => {
  it("when a folder cannot be made, then the error is one line naming the setting and the folder", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "writable-")), "file");
    fs.writeFileSync(file, "x");
    const dir = path.join(file, "media");
    let err: unknown;
    try {
      ensureWritable([{ setting: "DATA_DIR", dir, purpose: "uploaded pictures are kept there" }]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FolderNotWritableError);
    expect((err as Error).message).toMatch(
      new RegExp(`^DATA_DIR: ${dir} is not writable by this process \\(ENOTDIR\\)`),
    );
    expect((err as Error).message).not.toContain("\n");
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });

  it("when the folders can be written, then they are made and nothing is thrown", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "writable-"));
    const dir = path.join(root, "a", "b");
    ensureWritable([{ setting: "DATA_DIR", dir, purpose: "x" }]);
    expect(fs.statSync(dir).isDirectory()).toBe(true);
    fs.rmSync(root, { recursive: true, force: true });
  });
});
