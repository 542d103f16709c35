/**
 * The guard every hook into a library's internals goes through (shared/runtime/internals): a hook is
 * applied only inside its versions, with everything it touches present, and not forced off; otherwise
 * the library keeps its own behaviour, with one warning naming the hook.
 */
import { ServiceBroker } from "moleculer";
import {
  inRange,
  installedVersion,
  isWrapped,
  removeHook,
  unwrap,
  useHook,
  wrap,
  type InternalsHook,
} from "../../../../shared/runtime/internals";
import { loadConfig, loadSetting, retiredSettingsIn } from "../../../../shared/config";
import { ConfigError } from "../../../../shared/errors";

class Greeter {
  greet(name: string): string {
    return `hello ${name}`;
  }
}

/** A hook on a Greeter-like object that shouts, written for moleculer 0.14 (installed here). */
function shoutHook(
  overrides: Partial<InternalsHook<{ greet?: unknown }>> = {},
): InternalsHook<{ greet?: unknown }> {
  return {
    name: "nats-abandoned-dials",
    library: "moleculer",
    versions: ">=0.14.0 <0.15.0",
    check: (t) => (typeof t.greet === "function" ? [] : ["greet()"]),
    apply: (t) => wrap(t as Greeter, "greet", (original) => (name: string) => original(name).toUpperCase()),
    remove: (t) => unwrap(t as Greeter, "greet"),
    ...overrides,
  };
}

describe("version ranges", () => {
  it.each([
    ["2.29.3", ">=2.29.0 <3.0.0", true],
    ["3.0.0", ">=2.29.0 <3.0.0", false],
    ["2.28.9", ">=2.29.0 <3.0.0", false],
    ["0.14.36", ">=0.14.0 <0.15.0", true],
    ["4.1.2", "4.1.2", true],
    ["4.1.3", "=4.1.2", false],
    ["24.0.0", ">22.12.0 <=24.0.0", true],
    ["2.30.0-beta.1", ">=2.29.0 <3.0.0", false],
    ["2.29.3", "^2.29.0", true],
    ["3.0.0", "^2.29.0", false],
    ["v2.29.3", ">=2.29.0 <3.0.0", true],
    ["2.29", ">=2.29.0 <3.0.0", false],
    ["2.29.3", ">=2.29.0 <3.0.0 || >=4.0.0", true],
    ["2.29.3", "not a range", false],
    ["2.29.3", "", false],
  ])("when %s is checked against '%s', then in range is %s", (version, range, expected) => {
    expect(inRange(version, range)).toBe(expected);
  });

  it("when a package does not export its package.json (moleculer), then its version is still read", () => {
    expect(installedVersion("moleculer")).toBe(ServiceBroker.MOLECULER_VERSION);
    expect(installedVersion("node")).toBe(process.versions.node);
    expect(installedVersion("no-such-package-here")).toBeNull();
  });
});

describe("useHook", () => {
  const settings = (off: string[] = []) => {
    const warnings: string[] = [];
    return { warnings, off, warn: (m: string) => warnings.push(m) };
  };

  it("when in range, present and not forced off, then it is applied, and removed again", () => {
    const target = new Greeter();
    const s = settings();
    const hook = shoutHook();
    expect(useHook(hook, target, s)).toBe(true);
    expect(target.greet("ann")).toBe("HELLO ANN");
    expect(isWrapped(target.greet)).toBe(true);
    // A second use changes nothing more (no double wrap).
    expect(useHook(hook, target, s)).toBe(true);
    expect(target.greet("ann")).toBe("HELLO ANN");
    removeHook(hook, target);
    expect(target.greet("ann")).toBe("hello ann");
    expect(s.warnings).toEqual([]);
  });

  it.each([
    ["forced off by name", shoutHook(), ["nats-abandoned-dials"], /forced off by INTERNALS_HOOKS_OFF/],
    ["forced off with all", shoutHook(), ["all"], /forced off/],
    [
      "out of its versions",
      shoutHook({ versions: ">=0.15.0 <0.16.0" }),
      [],
      /moleculer 0\.14\.\d+ is outside the versions it was written for \(>=0\.15\.0 <0\.16\.0\)/,
    ],
    ["of a library not installed", shoutHook({ library: "no-such-package-here" }), [], /cannot be read/],
    ["missing what it touches", shoutHook({ check: () => ["greet()"] }), [], /lacks greet\(\)/],
    [
      "with a check that throws",
      shoutHook({
        check: () => {
          throw new TypeError("x is undefined");
        },
      }),
      [],
      /its check failed: x is undefined/,
    ],
    [
      "failing half-way through applying",
      shoutHook({
        apply: (t) => {
          wrap(t as Greeter, "greet", (o) => (n: string) => o(n).toUpperCase());
          throw new Error("boom");
        },
      }),
      [],
      /applying it failed: boom/,
    ],
  ])(
    "when a hook is %s, then the library's own behaviour stays, with one warning naming it",
    (_, hook, off, why) => {
      const target = new Greeter();
      const s = settings(off);
      expect(useHook(hook, target, s)).toBe(false);
      expect(useHook(hook, new Greeter(), s)).toBe(false);
      expect(target.greet("ann")).toBe("hello ann");
      expect(isWrapped(target.greet)).toBe(false);
      expect(s.warnings).toHaveLength(1);
      expect(s.warnings[0]).toContain("'nats-abandoned-dials'");
      expect(s.warnings[0]).toMatch(why);
    },
  );

  it("when the warning itself cannot be written, then the start goes on", () => {
    const hook = shoutHook({ check: () => ["greet()"] });
    const warn = () => {
      throw new Error("stderr closed");
    };
    expect(useHook(hook, new Greeter(), { off: [], warn })).toBe(false);
  });
});

describe("INTERNALS_HOOKS_OFF", () => {
  it("when unset, then no hook is forced off", () => {
    expect(loadConfig({}).internalsHooksOff).toEqual([]);
    expect(loadSetting("internalsHooksOff", {})).toEqual([]);
  });

  it("when it names hooks or all, then those are forced off", () => {
    expect(loadConfig({ INTERNALS_HOOKS_OFF: " nats-abandoned-dials " }).internalsHooksOff).toEqual([
      "nats-abandoned-dials",
    ]);
    expect(loadSetting("internalsHooksOff", { INTERNALS_HOOKS_OFF: "all" })).toEqual(["all"]);
  });

  it("when it names a hook that was retired, then the name is ignored and the start warns of it", () => {
    const env = { INTERNALS_HOOKS_OFF: "upload-scavenge, nats-abandoned-dials" };
    expect(loadConfig(env).internalsHooksOff).toEqual(["nats-abandoned-dials"]);
    expect(retiredSettingsIn(env)).toEqual([
      expect.stringMatching(/^INTERNALS_HOOKS_OFF names 'upload-scavenge', a hook no longer there: .*0025/),
    ]);
    expect(retiredSettingsIn({ INTERNALS_HOOKS_OFF: "nats-abandoned-dials" })).toEqual([]);
    expect(
      loadConfig({ INTERNALS_HOOKS_OFF: "liveness,nedb-serialize,v8-pretenuring" }).internalsHooksOff,
    ).toEqual([]);
    expect(retiredSettingsIn({ INTERNALS_HOOKS_OFF: "liveness" })).toEqual([
      expect.stringMatching(/^INTERNALS_HOOKS_OFF names 'liveness', a hook no longer there: .*heartbeats/),
    ]);
  });

  it("when it names a hook that does not exist, then start-up fails naming it and the known ones", () => {
    expect(() => loadConfig({ INTERNALS_HOOKS_OFF: "nats-abandoned-dials,nats-batchin" })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ INTERNALS_HOOKS_OFF: "nats-batchin" })).toThrow(
      /names among .*nats-abandoned-dials.* got "nats-batchin"/,
    );
  });
});
