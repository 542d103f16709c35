import { silenceHookWarnings, useHook, type InternalsHook } from "../../../../shared/runtime/internals";

/** A hook that can never apply (its library's version is outside its range). */
const outOfRange = (): InternalsHook<object> => ({
  name: "nats-abandoned-dials",
  library: "moleculer",
  versions: ">=99.0.0",
  check: () => [],
  apply: () => undefined,
  remove: () => undefined,
});

describe("silenceHookWarnings", () => {
  it("when a process has silenced hook warnings (the CLI), then a hook left off warns nowhere, not even as a process warning", () => {
    const warn = jest.fn();
    const emitted = jest.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    try {
      silenceHookWarnings();
      expect(useHook(outOfRange(), {}, { off: [], warn })).toBe(false);
      expect(useHook(outOfRange(), {}, { off: [] })).toBe(false);
      expect(warn).not.toHaveBeenCalled();
      expect(emitted).not.toHaveBeenCalled();
    } finally {
      emitted.mockRestore();
    }
  });
});
