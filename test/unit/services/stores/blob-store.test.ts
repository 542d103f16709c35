/**
 * LocalBlobStore on a temporary folder: uploads are staged as they stream in, committed under a random
 * name, discarded or removed; nothing outside the media folder is ever reachable by name.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { LocalBlobStore } from "../../../../services/stores/blob-store";
import { PayloadTooLargeError, UploadInterruptedError } from "../../../../shared/errors";
import { chunksOf, picture } from "../../support/pictures";

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
      // What the source reads ahead is its own buffer, not staging's doing: pinned to 16 KiB because
      // Node 22 raised the default from 16 to 64 KiB, which alone lets ~130 chunks be pulled.
      highWaterMark: 16 * 1024,
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

describe("LocalBlobStore.sweepStaged", () => {
  const stageAged = async (ageMs: number): Promise<string> => {
    const staged = await blobs.stage(streamOf(picture("png", 100)), 1000);
    const when = new Date(Date.now() - ageMs);
    fs.utimesSync(path.join(dir, ".staging", staged.stagedId), when, when);
    return staged.stagedId;
  };

  it("when staged files are older and younger than the retention, then only the older ones are removed", async () => {
    const old = await stageAged(2 * HOUR);
    const older = await stageAged(48 * HOUR);
    const fresh = await stageAged(30 * 60_000);
    const justNow = await stageAged(0);
    await expect(blobs.sweepStaged(HOUR)).resolves.toBe(2);
    expect(staging().sort()).toEqual([fresh, justNow].sort());
    expect(staging()).not.toContain(old);
    expect(staging()).not.toContain(older);
  });

  it("when committed pictures are older than the retention, then the staged sweep leaves them alone", async () => {
    const name = await blobs.commit(
      (await blobs.stage(streamOf(picture("png", 100)), 1000)).stagedId,
      "image/png",
    );
    const when = new Date(Date.now() - 10 * HOUR);
    fs.utimesSync(path.join(dir, name), when, when);
    await expect(blobs.sweepStaged(HOUR)).resolves.toBe(0);
    expect(mediaFiles()).toEqual([name]);
  });

  it("when the sweep is given a later now, then files become stale relative to it", async () => {
    const id = await stageAged(0);
    await expect(blobs.sweepStaged(HOUR, Date.now() + 30 * 60_000)).resolves.toBe(0);
    await expect(blobs.sweepStaged(HOUR, Date.now() + 2 * HOUR)).resolves.toBe(1);
    expect(staging()).not.toContain(id);
  });

  it("when an upload is still open (being received), then the sweep leaves its file however old", async () => {
    const id = await blobs.begin();
    await blobs.append(id, picture("png", 100), 1000);
    await expect(blobs.sweepStaged(HOUR, Date.now() + 2 * HOUR)).resolves.toBe(0);
    expect(staging()).toEqual([id]);
    await blobs.discard(id);
  });

  it("when a file was left by a killed process (no open upload knows it), then it is removed once stale", async () => {
    fs.writeFileSync(path.join(dir, ".staging", "0b1c2d3e-0000-4000-8000-000000000000"), "half a picture");
    await expect(blobs.sweepStaged(HOUR, Date.now() + 2 * HOUR)).resolves.toBe(1);
    expect(staging()).toEqual([]);
  });

  it("when nothing is staged, then the sweep removes nothing", async () => {
    await expect(blobs.sweepStaged(HOUR)).resolves.toBe(0);
  });
});

describe("LocalBlobStore.sweepOrphans", () => {
  const placeAged = async (ageMs: number): Promise<string> => {
    const name = await blobs.commit(
      (await blobs.stage(streamOf(picture("png", 100)), 1000)).stagedId,
      "image/png",
    );
    const when = new Date(Date.now() - ageMs);
    fs.utimesSync(path.join(dir, name), when, when);
    return name;
  };

  it("when a picture in place is older than the retention and no item shows it, then it is removed; shown or young ones stay", async () => {
    const orphan = await placeAged(2 * HOUR);
    const shown = await placeAged(2 * HOUR);
    const young = await placeAged(10 * 60_000);
    const asked: string[] = [];
    const removed = await blobs.sweepOrphans(HOUR, async (name) => {
      asked.push(name);
      return name === shown;
    });
    expect(removed).toEqual([orphan]);
    expect(mediaFiles().sort()).toEqual([shown, young].sort());
    // A young picture may belong to an event being created right now: not even asked about.
    expect(asked).not.toContain(young);
  });

  it("when the folder holds other files (staging, dotfiles, folders, other types), then the sweep touches none of them", async () => {
    const staged = (await blobs.stage(streamOf(picture("png", 100)), 1000)).stagedId;
    fs.mkdirSync(path.join(dir, "demo"));
    fs.writeFileSync(path.join(dir, "demo", "x.jpg"), "x");
    fs.writeFileSync(path.join(dir, ".hidden.png"), "x");
    fs.writeFileSync(path.join(dir, "notes.txt"), "x");
    const removed = await blobs.sweepOrphans(0, async () => false, Date.now() + 2 * HOUR);
    expect(removed).toEqual([]);
    expect(staging()).toEqual([staged]);
    expect(fs.readdirSync(path.join(dir, "demo"))).toEqual(["x.jpg"]);
    expect(mediaFiles().sort()).toEqual([".hidden.png", "demo", "notes.txt"]);
  });
});

describe("LocalBlobStore chunked uploads (begin, append, finish)", () => {
  const appendAll = async (id: string, bytes: Buffer, chunk: number, max = 1_000_000) => {
    for (const part of chunksOf(bytes, chunk)) await blobs.append(id, part, max);
  };

  it("when an upload begins, then an empty staging file exists under a fresh staged id", async () => {
    const id = await blobs.begin();
    expect(id).toMatch(UUID);
    expect(staging()).toEqual([id]);
    expect(fs.statSync(path.join(dir, ".staging", id)).size).toBe(0);
    await blobs.discard(id);
  });

  it("when an upload begins with sha256 asked, then finish reports the SHA-256 of exactly the bytes appended", async () => {
    const bytes = picture("png", 300_000);
    const id = await blobs.begin({ sha256: true });
    await appendAll(id, bytes, 65_536);
    const staged = await blobs.finish(id);
    expect(staged.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(staged.size).toBe(bytes.length);
    await blobs.discard(id);
  });

  it("when chunks are appended and the upload finished, then the staged file is byte-identical with its size and type", async () => {
    const bytes = picture("jpeg", 100_000);
    const id = await blobs.begin();
    await appendAll(id, bytes, 16_384);
    const staged = await blobs.finish(id);
    expect(staged).toEqual({ stagedId: id, size: bytes.length, mime: "image/jpeg" });
    expect(fs.readFileSync(path.join(dir, ".staging", id)).equals(bytes)).toBe(true);
  });

  it("when the first bytes arrive one per chunk, then the type is still sniffed", async () => {
    const id = await blobs.begin();
    await appendAll(id, picture("webp", 30), 1);
    expect((await blobs.finish(id)).mime).toBe("image/webp");
  });

  it("when a finished upload is committed, then the picture moves into place byte-identical", async () => {
    const bytes = picture("png", 50_000);
    const id = await blobs.begin();
    await appendAll(id, bytes, 7000);
    await blobs.finish(id);
    const name = await blobs.commit(id, "image/png");
    expect(staging()).toEqual([]);
    expect(fs.readFileSync(path.join(dir, name)).equals(bytes)).toBe(true);
  });

  it("when the bytes are not an image, then finish reports mime null", async () => {
    const id = await blobs.begin();
    await blobs.append(id, Buffer.from("hello, I am text"), 1000);
    expect(await blobs.finish(id)).toMatchObject({ size: 16, mime: null });
  });

  it("when nothing is appended, then finish reports size 0", async () => {
    const id = await blobs.begin();
    expect(await blobs.finish(id)).toEqual({ stagedId: id, size: 0, mime: null });
  });

  it("when the appended total reaches exactly maxBytes, then it is accepted", async () => {
    const id = await blobs.begin();
    await appendAll(id, picture("png", 4096), 1024, 4096);
    expect((await blobs.finish(id)).size).toBe(4096);
  });

  it("when an append passes maxBytes, then PayloadTooLargeError, the staging file is deleted and the upload closed", async () => {
    const id = await blobs.begin();
    await blobs.append(id, picture("png", 3000), 4096);
    const err = await blobs.append(id, Buffer.alloc(1097), 4096).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as PayloadTooLargeError).code).toBe(413);
    expect(staging()).toEqual([]);
    await expect(blobs.append(id, Buffer.alloc(1), 4096)).rejects.toBeInstanceOf(UploadInterruptedError);
    await expect(blobs.finish(id)).rejects.toBeInstanceOf(UploadInterruptedError);
  });

  it("when append or finish name an upload that was never begun, then they fail", async () => {
    const id = "00000000-0000-4000-8000-000000000000";
    await expect(blobs.append(id, Buffer.alloc(1), 10)).rejects.toBeInstanceOf(UploadInterruptedError);
    await expect(blobs.finish(id)).rejects.toBeInstanceOf(UploadInterruptedError);
  });

  it("when an open upload is discarded, then its file is gone and later chunks are refused", async () => {
    const id = await blobs.begin();
    await blobs.append(id, picture("png", 500), 1000);
    await blobs.discard(id);
    expect(staging()).toEqual([]);
    await expect(blobs.append(id, Buffer.alloc(1), 1000)).rejects.toBeInstanceOf(UploadInterruptedError);
  });

  it("when an upload is finished, then it cannot be appended to any more", async () => {
    const id = await blobs.begin();
    await blobs.finish(id);
    await expect(blobs.append(id, Buffer.alloc(1), 1000)).rejects.toBeInstanceOf(UploadInterruptedError);
    expect(staging()).toEqual([id]);
  });

  it("when two uploads run at once, then their chunks do not mix", async () => {
    const a = picture("png", 20_000);
    const b = picture("jpeg", 20_000);
    const [ida, idb] = await Promise.all([blobs.begin(), blobs.begin()]);
    await Promise.all([appendAll(ida, a, 3000), appendAll(idb, b, 5000)]);
    await Promise.all([blobs.finish(ida), blobs.finish(idb)]);
    expect(fs.readFileSync(path.join(dir, ".staging", ida)).equals(a)).toBe(true);
    expect(fs.readFileSync(path.join(dir, ".staging", idb)).equals(b)).toBe(true);
  });

  describe("when the sender goes silent", () => {
    afterEach(() => {
      jest.useRealTimers();
    });

    it("when no chunk arrives for a minute, then the upload is discarded; each chunk restarts that minute", async () => {
      jest.useFakeTimers({ doNotFake: ["setImmediate", "nextTick", "queueMicrotask"] });
      const id = await blobs.begin();
      jest.advanceTimersByTime(50_000);
      await blobs.append(id, picture("png", 100), 1000);
      jest.advanceTimersByTime(50_000); // 100 s after begin, 50 s after the last chunk
      expect(staging()).toEqual([id]);
      await expect(blobs.append(id, Buffer.alloc(10), 1000)).resolves.toBeUndefined();
      jest.advanceTimersByTime(60_001);
      jest.useRealTimers();
      await eventually(() => expect(staging()).toEqual([]));
      await expect(blobs.append(id, Buffer.alloc(1), 1000)).rejects.toBeInstanceOf(UploadInterruptedError);
    });

    it("when an upload is finished, then the idle timer no longer deletes its staged file", async () => {
      jest.useFakeTimers({ doNotFake: ["setImmediate", "nextTick", "queueMicrotask"] });
      const id = await blobs.begin();
      await blobs.finish(id);
      jest.advanceTimersByTime(120_000);
      jest.useRealTimers();
      await sleep(50);
      expect(staging()).toEqual([id]);
    });
  });
});

async function eventually(assertion: () => void, timeoutMs = 1000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      assertion();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(10);
    }
  }
}
