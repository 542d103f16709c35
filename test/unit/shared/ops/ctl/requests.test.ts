import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { MAX_REQUEST_BYTES } from "../../../../../shared/ops/ctl/protocol";
import { planOf, readDevices } from "../../../../../shared/ops/ctl/requests";

describe("planOf", () => {
  it("when a command is one call, then its flags become the request's fields and its result is the output", () => {
    const plan = planOf({
      name: "user add",
      args: [],
      flags: { phone: "+7900", username: "dana", first: "Dana" },
    });
    expect(plan.requests).toEqual([
      {
        command: "user add",
        params: {
          phone: "+7900",
          username: "dana",
          first_name: "Dana",
          last_name: undefined,
          avatar_url: undefined,
        },
      },
    ]);
    expect(plan.output([{ id: "u1" }])).toEqual({ id: "u1" });
  });

  it("when devices are imported, then each request is a page within the socket's bound and the output sums what was added", () => {
    const devices = Array.from({ length: 25_000 }, (_, i) => ({ user_id: `u${i}`, token: `t${i}` }));
    const plan = planOf({ name: "device import", args: ["devices.txt"], flags: {} }, () => devices);
    const sizes = plan.requests.map((r) => (r.params.devices as unknown[]).length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(25_000);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10_000);
    for (const r of plan.requests)
      expect(Buffer.byteLength(JSON.stringify(r))).toBeLessThan(MAX_REQUEST_BYTES);
    expect(plan.requests.every((r) => r.command === "device import")).toBe(true);
    expect(plan.output(sizes.map((n, i) => ({ added: i === 0 ? n - 1 : n })))).toEqual({
      read: 25_000,
      added: 24_999,
    });
  });
});

describe("readDevices", () => {
  it("when a file has pairs, blank and malformed lines, then only the pairs are read", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "devices-"));
    const file = path.join(dir, "devices.txt");
    fs.writeFileSync(file, "u1 t1\n\n  u2\tt2  \nonly-one\nu3 t3 extra\n");
    try {
      expect(readDevices(file)).toEqual([
        { user_id: "u1", token: "t1" },
        { user_id: "u2", token: "t2" },
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
