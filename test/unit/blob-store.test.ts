/**
 * LocalBlobStore on a temporary folder: uploads are staged as they stream in, committed under a random
 * name, discarded or removed; nothing outside the media folder is ever reachable by name.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { LocalBlobStore } from "../../services/stores/blob-store";
import { PayloadTooLargeError } from "../../shared/errors";
import { chunksOf, picture } from "./pictures";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HOUR = 3600_000;

let root: string;
let dir: string;
let blobs: LocalBlobStore;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "blob-store-"));
  dir = path.join(root, "media");
  blobs = new LocalBlobStore(dir);
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

const staging = (): string[] => fs.readdirSync(path.join(dir, ".staging"));
const mediaFiles = (): string[] => fs.readdirSync(dir).filter((f) => f !== ".staging");
const streamOf = (buf: Buffer, chunk = 4096): Readable => Readable.from(chunksOf(buf, chunk));

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

describe("LocalBlobStore construction", () => {
  it("when it is created on a folder that does not exist, then the folder and its staging folder are made", () => {
    expect(fs.statSync(dir).isDirectory()).toBe(true);
    expect(fs.statSync(path.join(dir, ".staging")).isDirectory()).toBe(true);
  });
});

describe("LocalBlobStore.stage", () => {
  it("when a PNG streams in, then it lands in a staging file with its size and sniffed type", async () => {
    const bytes = picture("png", 50_000);
    const staged = await blobs.stage(streamOf(bytes), 1_000_000);
    expect(staged.stagedId).toMatch(UUID);
    expect(staged.size).toBe(bytes.length);
    expect(staged.mime).toBe("image/png");
    expect(staging()).toEqual([staged.stagedId]);
    expect(fs.readFileSync(path.join(dir, ".staging", staged.stagedId)).equals(bytes)).toBe(true);
    expect(mediaFiles()).toEqual([]);
  });

  it("when the picture arrives one byte at a time, then its type is still sniffed from the first bytes", async () => {
    const bytes = picture("webp", 40);
    const staged = await blobs.stage(streamOf(bytes, 1), 1000);
    expect(staged.mime).toBe("image/webp");
    expect(staged.size).toBe(40);
  });

  it("when the bytes are a JPEG, then the sniffed type is image/jpeg", async () => {
    expect((await blobs.stage(streamOf(picture("jpeg", 100)), 1000)).mime).toBe("image/jpeg");
  });

  it("when the bytes are no image (text sent as image/png), then it is staged with mime null", async () => {
    const staged = await blobs.stage(streamOf(Buffer.from("definitely not a picture")), 1000);
    expect(staged.mime).toBeNull();
    expect(staged.size).toBe(24);
    expect(staging()).toEqual([staged.stagedId]);
  });

  it("when the stream is empty, then it is staged with size 0 and no type", async () => {
    const staged = await blobs.stage(Readable.from([]), 1000);
    expect(staged).toMatchObject({ size: 0, mime: null });
  });

  it("when the picture is exactly maxBytes, then it is accepted", async () => {
    const staged = await blobs.stage(streamOf(picture("png", 2048), 100), 2048);
    expect(staged.size).toBe(2048);
  });

  it("when the picture is one byte over maxBytes, then a PayloadTooLargeError (413) is thrown and no staging file is left", async () => {
    const err = await blobs.stage(streamOf(picture("png", 2049), 100), 2048).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as PayloadTooLargeError).code).toBe(413);
    expect(staging()).toEqual([]);
    await sleep(50);
    expect(staging()).toEqual([]);
  });

  it("when the source never ends, then staging stops as soon as maxBytes is passed", async () => {
    let pulled = 0;
    const endless = new Readable({
      read() {
        pulled += 1;
        this.push(pulled === 1 ? picture("png", 1024) : Buffer.alloc(1024));
      },
    });
    await expect(blobs.stage(endless, 10 * 1024)).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(pulled).toBeLessThan(40);
    expect(endless.destroyed).toBe(true);
    await sleep(50);
    expect(staging()).toEqual([]);
  });

  it("when the source stream errors midway, then the error is rethrown and no staging file is left", async () => {
    let sent = 0;
    const failing = new Readable({
      read() {
        sent += 1;
        if (sent <= 3) this.push(picture("png", 1000));
        else this.destroy(new Error("connection reset"));
      },
    });
    await expect(blobs.stage(failing, 1_000_000)).rejects.toThrow("connection reset");
    expect(staging()).toEqual([]);
    await sleep(50);
    expect(staging()).toEqual([]);
  });

  it("when the source stream errors before any byte, then no staging file is left", async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error("aborted"));
      },
    });
    await expect(blobs.stage(failing, 1000)).rejects.toThrow("aborted");
    await sleep(50);
    expect(staging()).toEqual([]);
  });

  it("when two uploads are staged at once, then each gets its own staging file", async () => {
    const [a, b] = await Promise.all([
      blobs.stage(streamOf(picture("png", 3000), 500), 10_000),
      blobs.stage(streamOf(picture("jpeg", 4000), 500), 10_000),
    ]);
    expect(a.stagedId).not.toBe(b.stagedId);
    expect(staging().sort()).toEqual([a.stagedId, b.stagedId].sort());
  });
});

describe("LocalBlobStore.commit", () => {
  it("when a staged PNG is committed, then it moves into place under a random .png name, byte-identical", async () => {
    const bytes = picture("png", 20_000);
    const staged = await blobs.stage(streamOf(bytes), 100_000);
    const name = await blobs.commit(staged.stagedId, "image/png");
    expect(name).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.png$/);
    expect(name).not.toContain(staged.stagedId);
    expect(staging()).toEqual([]);
    expect(mediaFiles()).toEqual([name]);
    expect(fs.readFileSync(path.join(dir, name)).equals(bytes)).toBe(true);
  });

  it.each([
    ["jpeg", "image/jpeg", "jpg"],
    ["webp", "image/webp", "webp"],
  ] as const)("when a %s is committed, then its name ends in .%s", async (kind, mime, ext) => {
    const staged = await blobs.stage(streamOf(picture(kind, 500)), 1000);
    expect(await blobs.commit(staged.stagedId, mime)).toMatch(new RegExp(`^[0-9a-f-]{36}\\.${ext}$`));
  });

  it("when the same content is uploaded twice, then the two commits get different names", async () => {
    const bytes = picture("png", 500);
    const a = await blobs.commit((await blobs.stage(streamOf(bytes), 1000)).stagedId, "image/png");
    const b = await blobs.commit((await blobs.stage(streamOf(bytes), 1000)).stagedId, "image/png");
    expect(a).not.toBe(b);
    expect(mediaFiles().sort()).toEqual([a, b].sort());
  });

  it("when the staged id is not a staged id (a path), then commit refuses it and moves nothing", async () => {
    fs.writeFileSync(path.join(dir, "victim"), "x");
    await expect(blobs.commit("../victim", "image/png")).rejects.toThrow("Bad staged id");
    expect(fs.existsSync(path.join(dir, "victim"))).toBe(true);
  });

  it("when the staged id is well-formed but unknown, then commit fails and creates no file", async () => {
    await expect(blobs.commit("00000000-0000-4000-8000-000000000000", "image/png")).rejects.toThrow();
    expect(mediaFiles()).toEqual([]);
  });
});

describe("LocalBlobStore.discard and remove", () => {
  it("when a staged file is discarded, then it is gone and cannot be committed any more", async () => {
    const staged = await blobs.stage(streamOf(picture("png", 500)), 1000);
    await blobs.discard(staged.stagedId);
    expect(staging()).toEqual([]);
    await expect(blobs.commit(staged.stagedId, "image/png")).rejects.toThrow();
  });

  it("when an unknown staged id is discarded, then it resolves quietly", async () => {
    await expect(blobs.discard("00000000-0000-4000-8000-000000000000")).resolves.toBeUndefined();
  });

  it("when discard is given a path instead of a staged id, then nothing outside staging is deleted", async () => {
    fs.writeFileSync(path.join(dir, "keep.png"), "x");
    await blobs.discard("../keep.png");
    expect(fs.existsSync(path.join(dir, "keep.png"))).toBe(true);
  });

  it("when a committed picture is removed, then it is gone and open returns null", async () => {
    const name = await blobs.commit(
      (await blobs.stage(streamOf(picture("png", 500)), 1000)).stagedId,
      "image/png",
    );
    await blobs.remove(name);
    expect(mediaFiles()).toEqual([]);
    await expect(blobs.open(name)).resolves.toBeNull();
  });

  it("when remove is given a name outside the media folder, then that file is not deleted", async () => {
    const outside = path.join(root, "outside.png");
    fs.writeFileSync(outside, "x");
    await blobs.remove("../outside.png");
    expect(fs.existsSync(outside)).toBe(true);
  });

  it("when remove is given a staged file's path, then the staged file is not deleted", async () => {
    const staged = await blobs.stage(streamOf(picture("png", 500)), 1000);
    await blobs.remove(`.staging/${staged.stagedId}`);
    expect(staging()).toEqual([staged.stagedId]);
  });
});

describe("LocalBlobStore.open", () => {
  it("when a committed picture is opened, then its bytes, size and type come back", async () => {
    const bytes = picture("jpeg", 30_000);
    const name = await blobs.commit((await blobs.stage(streamOf(bytes), 100_000)).stagedId, "image/jpeg");
    const blob = await blobs.open(name);
    expect(blob).not.toBeNull();
    expect(blob?.size).toBe(bytes.length);
    expect(blob?.mime).toBe("image/jpeg");
    expect((await readAll(blob!.stream)).equals(bytes)).toBe(true);
  });

  it("when an unknown name is opened, then it is null", async () => {
    await expect(blobs.open("00000000-0000-4000-8000-000000000000.png")).resolves.toBeNull();
  });

  it("when a name outside the media folder is opened (../x.png), then it is null even though the file exists", async () => {
    fs.writeFileSync(path.join(root, "x.png"), picture("png", 100));
    await expect(blobs.open("../x.png")).resolves.toBeNull();
  });

  it("when a staged file is opened through .staging/, then it is null", async () => {
    const staged = await blobs.stage(streamOf(picture("png", 100)), 1000);
    await expect(blobs.open(`.staging/${staged.stagedId}`)).resolves.toBeNull();
    await expect(blobs.open(`.staging/${staged.stagedId}.png`)).resolves.toBeNull();
  });

  it("when a hidden or non-picture name is opened, then it is null", async () => {
    fs.writeFileSync(path.join(dir, ".hidden.png"), picture("png", 100));
    fs.writeFileSync(path.join(dir, "notes.txt"), "text");
    fs.writeFileSync(path.join(dir, "anim.gif"), "GIF89a");
    await expect(blobs.open(".hidden.png")).resolves.toBeNull();
    await expect(blobs.open("notes.txt")).resolves.toBeNull();
    await expect(blobs.open("anim.gif")).resolves.toBeNull();
  });
});

describe("LocalBlobStore.sweep", () => {
  const stageAged = async (ageMs: number): Promise<string> => {
    const staged = await blobs.stage(streamOf(picture("png", 100)), 1000);
    const when = new Date(Date.now() - ageMs);
    fs.utimesSync(path.join(dir, ".staging", staged.stagedId), when, when);
    return staged.stagedId;
  };

  it("when staged files are older and younger than an hour, then only the older ones are removed", async () => {
    const old = await stageAged(2 * HOUR);
    const older = await stageAged(48 * HOUR);
    const fresh = await stageAged(30 * 60_000);
    const justNow = await stageAged(0);
    expect(blobs.sweep()).toBe(2);
    expect(staging().sort()).toEqual([fresh, justNow].sort());
    expect(staging()).not.toContain(old);
    expect(staging()).not.toContain(older);
  });

  it("when committed pictures are older than an hour, then sweep leaves them alone", async () => {
    const name = await blobs.commit(
      (await blobs.stage(streamOf(picture("png", 100)), 1000)).stagedId,
      "image/png",
    );
    const when = new Date(Date.now() - 10 * HOUR);
    fs.utimesSync(path.join(dir, name), when, when);
    expect(blobs.sweep()).toBe(0);
    expect(mediaFiles()).toEqual([name]);
  });

  it("when sweep is given a later now, then files become stale relative to it", async () => {
    const id = await stageAged(0);
    expect(blobs.sweep(Date.now() + 30 * 60_000)).toBe(0);
    expect(blobs.sweep(Date.now() + 2 * HOUR)).toBe(1);
    expect(staging()).not.toContain(id);
  });

  it("when nothing is staged, then sweep removes nothing", () => {
    expect(blobs.sweep()).toBe(0);
  });
});
