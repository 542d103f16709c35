import { spawnSync } from "node:child_process";
import { PerformanceObserver } from "node:perf_hooks";
import { inRange, reasonNotToApply } from "../../../../shared/runtime/internals";
import {
  SCAVENGE_EVERY_BYTES,
  chunkPassed,
  isOwnScavenge,
  uploadScavengeHook,
  useUploadScavenge,
} from "../../../../shared/runtime/upload-scavenge";

const MB = 1024 * 1024;
/** A new chunk of `bytes` (each call another Buffer). */
const chunkOf = (bytes: number) => Buffer.alloc(bytes);

afterEach(() => uploadScavengeHook.remove({}));

describe("freeing an upload's chunks as they pass", () => {
  it("when the process was started without --expose-gc, then the hook stays off and one warning says why", () => {
    const warnings: string[] = [];
    const settings = { off: [], warn: (m: string) => warnings.push(m) };
    expect(useUploadScavenge(settings, {})).toBe(false);
    expect(useUploadScavenge(settings, {})).toBe(false);
    expect(warnings).toEqual([expect.stringMatching(/'upload-scavenge' not applied .*--expose-gc/)]);
    expect(() => chunkPassed(chunkOf(SCAVENGE_EVERY_BYTES))).not.toThrow();
  });

  it("when INTERNALS_HOOKS_OFF names it, then gc is never asked for", () => {
    const gc = jest.fn();
    expect(useUploadScavenge({ off: ["upload-scavenge"], warn: () => undefined }, { gc })).toBe(false);
    chunkPassed(chunkOf(2 * SCAVENGE_EVERY_BYTES));
    expect(gc).not.toHaveBeenCalled();
  });

  it("when chunks pass, then a young-generation collection is asked for at each SCAVENGE_EVERY_BYTES of them", () => {
    const gc = jest.fn();
    expect(useUploadScavenge({ off: [], warn: () => undefined }, { gc })).toBe(true);
    const chunk = SCAVENGE_EVERY_BYTES / 16;
    for (let i = 0; i < 16 * 3 - 1; i++) chunkPassed(chunkOf(chunk));
    expect(gc).toHaveBeenCalledTimes(2);
    expect(gc).toHaveBeenCalledWith({ type: "minor" });
    chunkPassed(chunkOf(chunk));
    expect(gc).toHaveBeenCalledTimes(3);
  });

  it("when one process's gateway and stores both pass the same chunk on, then it counts once", () => {
    const gc = jest.fn();
    expect(useUploadScavenge({ off: [], warn: () => undefined }, { gc })).toBe(true);
    for (let i = 0; i < 16 - 1; i++) {
      const chunk = chunkOf(SCAVENGE_EVERY_BYTES / 16);
      chunkPassed(chunk);
      chunkPassed(chunk);
    }
    expect(gc).not.toHaveBeenCalled();
    chunkPassed(chunkOf(SCAVENGE_EVERY_BYTES / 16));
    expect(gc).toHaveBeenCalledTimes(1);
  });

  it("when V8 scavenged on its own since the last SCAVENGE_EVERY_BYTES, then no scavenge is asked for", async () => {
    const gc = jest.fn();
    expect(useUploadScavenge({ off: [], warn: () => undefined }, { gc })).toBe(true);
    await scavengeOnItsOwn();
    chunkPassed(chunkOf(SCAVENGE_EVERY_BYTES));
    expect(gc).not.toHaveBeenCalled();
    chunkPassed(chunkOf(SCAVENGE_EVERY_BYTES));
    expect(gc).toHaveBeenCalledTimes(1);
  });
});

/** Allocates short-lived objects until V8 has run a scavenge and perf_hooks has reported it. */
async function scavengeOnItsOwn(): Promise<void> {
  let seen = false;
  const watch = new PerformanceObserver((list) => {
    if (list.getEntries().some(isOwnScavenge)) seen = true;
  });
  watch.observe({ entryTypes: ["gc"] });
  try {
    for (let round = 0; round < 200 && !seen; round++) {
      let junk: number[][] | null = Array.from({ length: 100_000 }, (_, i) => [i]);
      junk = null;
      void junk;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    watch.disconnect();
  }
  expect(seen).toBe(true);
}

/**
 * What the hook relies on that Node does not document: V8's gc function, given { type: "minor" }, runs
 * a scavenge (not a full collection) that perf_hooks reports as forced, so that it is not taken for one
 * of V8's own, and a scavenge frees young Buffers nothing refers to any more.
 */
describe("the upload-scavenge hook against the installed Node", () => {
  it("when Node is one it was written for, then it applies where gc is exposed", () => {
    expect(inRange(process.versions.node, uploadScavengeHook.versions)).toBe(true);
    expect(reasonNotToApply(uploadScavengeHook, { gc: () => undefined }, [])).toBeNull();
  });

  it("when gc({ type: 'minor' }) is called with unreferenced chunks in memory, then one scavenge frees them", () => {
    const script = `
      const { PerformanceObserver, constants } = require("node:perf_hooks");
      const kinds = [];
      const forced = (e) => (e.detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0;
      new PerformanceObserver((list) => list.getEntries().forEach((e) => kinds.push([e.detail.kind, forced(e)])))
        .observe({ entryTypes: ["gc"] });
      let chunks = [];
      for (let i = 0; i < 40; i++) chunks.push(Buffer.concat([Buffer.alloc(${MB / 8}), Buffer.alloc(${MB / 8})]));
      chunks = null;
      const before = process.memoryUsage().arrayBuffers;
      gc({ type: "minor" });
      // V8 releases the memory of swept Buffers on a helper thread, just after the scavenge.
      const started = Date.now();
      const report = () => {
        const after = process.memoryUsage().arrayBuffers;
        if (after >= ${MB} && Date.now() - started < 5000) return void setTimeout(report, 20);
        console.log(JSON.stringify({ before, after, kinds, minor: constants.NODE_PERFORMANCE_GC_MINOR }));
      };
      setTimeout(report, 20);
    `;
    const run = spawnSync(process.execPath, ["--expose-gc", "-e", script], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    const out = JSON.parse(run.stdout) as {
      before: number;
      after: number;
      kinds: [number, boolean][];
      minor: number;
    };
    expect(out.before).toBeGreaterThanOrEqual(10 * MB);
    expect(out.after).toBeLessThan(MB);
    expect(out.kinds).toEqual([[out.minor, true]]);
  });
});
