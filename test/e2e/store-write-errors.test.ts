// Tier: one process only (the embedded store's disk failed through fs in this process).
/**
 * A full disk under the embedded store, as clients and operators meet it: joins and refreshes are
 * answered 507 with a detail that says storage is full (never 500), each failure is counted on
 * /metrics by store and code, the log has one line per store, not one per request, and service is back
 * once space is freed, with nothing of the refused requests kept (a refused refresh rotated nothing).
 * The disk fails through fs (test/support/failing-writes); the store's files are on disk here.
 */
// First: the failing disk's stand-ins must be in place before NeDB is loaded (see the module).
import { failWritesIn } from "../support/failing-writes";
import { dbDir } from "../../shared/storage";
import { freePort } from "../support/brokers";
import { api, newUser, startSystem, type System } from "../support/system";

let sys: System;
let metricsPort: number;
beforeAll(async () => {
  metricsPort = await freePort();
  sys = await startSystem({
    env: { METRICS_PORT: String(metricsPort), LOG_LEVEL: "warn" },
  });
});
afterAll(() => sys.stop());

/** The value of store_write_errors_total for one store and code (0 when absent). */
async function writeErrors(store: string, code: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const series = text
    .split("\n")
    .filter((l) => l.startsWith("store_write_errors_total{"))
    .find((l) => l.includes(`store="${store}"`) && l.includes(`code="${code}"`));
  return series ? Number(series.slice(series.lastIndexOf(" ") + 1)) : 0;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends `request` again while it is answered 507, for at most 5 s. */
async function untilStored<T extends { status: number }>(request: () => Promise<T>): Promise<T> {
  let res = await request();
  for (const deadline = Date.now() + 5000; res.status === 507 && Date.now() < deadline;) {
    await sleep(200);
    res = await request();
  }
  return res;
}

describe("a full disk under the embedded store", () => {
  it("when joins and refreshes meet a full disk, then 507 saying storage is full, counted on /metrics and logged once per store; once space is freed they succeed, and the refused refresh rotated nothing", async () => {
    const user = await newUser(sys.broker, "full-disk");
    const round = sys.manifest.rounds.open;
    const join = () => api(sys, "POST", `/rounds/${round}/join`, { token: user.access_token, json: null });
    const refresh = () =>
      api(sys, "POST", "/auth/refresh-token", {
        token: user.access_token,
        json: { refresh_token: user.refresh_token },
      });
    const errors = jest.spyOn(console, "error").mockImplementation(() => undefined);
    const warnings = jest.spyOn(console, "warn").mockImplementation(() => undefined);
    const disk = failWritesIn(dbDir(sys.config), "ENOSPC");
    try {
      for (let i = 0; i < 5; i++) {
        const joined = await join();
        expect(joined.status).toBe(507);
        expect(joined.body).toEqual({
          detail: "Insufficient storage: the server's storage is full, so the change could not be saved",
        });
        expect(joined.headers.get("retry-after")).toBeNull();
        const refreshed = await refresh();
        expect(refreshed.status).toBe(507);
        expect(refreshed.body.detail).toMatch(/storage is full/);
      }
      expect(await writeErrors("rounds", "ENOSPC")).toBeGreaterThanOrEqual(5);
      expect(await writeErrors("refresh_families", "ENOSPC")).toBeGreaterThanOrEqual(5);
      const lines = errors.mock.calls.map((args) => args.join(" "));
      for (const store of ["rounds", "refresh_families"]) {
        const about = lines.filter((l) => l.includes(`Store writes fail: ${store} (`));
        expect(about).toHaveLength(1);
        expect(about[0]).toContain(`${dbDir(sys.config)}/${store}.db`);
        expect(about[0]).toContain("ENOSPC");
      }
      expect(lines.filter((l) => /Internal Server Error|Unexpected error/.test(l))).toEqual([]);
    } finally {
      disk.restore();
    }

    // Space is freed: each store checks its file again at most a second after its last check.
    expect((await untilStored(join)).status).toBe(200);
    expect((await untilStored(refresh)).status).toBe(200);
    const recovered = warnings.mock.calls.map((args) => args.join(" "));
    for (const store of ["rounds", "refresh_families"]) {
      expect(recovered.filter((l) => l.includes(`Store writes succeed again: ${store} (`))).toHaveLength(1);
    }
    errors.mockRestore();
    warnings.mockRestore();
  });
});
