import { COMMANDS, parseCommandLine, UsageError } from "../../../../../shared/ops/ctl/args";

const command = (...argv: string[]) => {
  const line = parseCommandLine(argv);
  if (!("command" in line)) throw new Error("expected a command");
  return line.command;
};

const usageError = (...argv: string[]): string => {
  try {
    parseCommandLine(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error("expected a usage error");
};

describe("parseCommandLine", () => {
  it("when a command has positional arguments, then they come back in order", () => {
    expect(command("token", "u1")).toEqual({ name: "token", args: ["u1"], flags: {} });
    expect(command("friends", "add", "u1", "u2")).toEqual({
      name: "friends add",
      args: ["u1", "u2"],
      flags: {},
    });
    expect(command("device", "import", "devices.txt").args).toEqual(["devices.txt"]);
  });

  it("when flags are given with a space or an equals sign, then both are read", () => {
    expect(command("user", "add", "--phone", "+79001234567", "--username=dana", "--first", "Dana")).toEqual({
      name: "user add",
      args: [],
      flags: { phone: "+79001234567", username: "dana", first: "Dana" },
    });
  });

  it("when a flag takes no value, then it is true when given and absent otherwise", () => {
    expect(command("seed", "--reset").flags).toEqual({ reset: true });
    expect(command("seed").flags).toEqual({});
  });

  it("when a flag has choices, then only those are accepted", () => {
    expect(command("apikey", "add", "--scope", "notifications").flags.scope).toBe("notifications");
    expect(usageError("apikey", "add", "--scope", "admin")).toMatch(
      /--scope must be one of app, notifications/,
    );
    expect(usageError("app-version", "set", "--platform", "web", "--current", "1", "--min", "1")).toMatch(
      /--platform must be one of android, ios, ru_store/,
    );
  });

  it.each([
    [["apikey", "add"], /apikey add: --scope is required/],
    [["token"], /token: needs <user_id>, got 0 argument/],
    [["token", "a", "b"], /token: needs <user_id>, got 2 argument/],
    [["seed", "extra"], /seed: takes no arguments/],
    [["seed", "--force"], /seed: Unknown option '--force'/],
    [["user", "add", "--phone"], /user add: Option '--phone <value>' argument missing/],
    [["user", "add", "--phone", "--username", "x"], /argument is ambiguous/],
    [["user", "add", "--phone", "", "--username", "x"], /--phone needs a value/],
    [["user"], /"user" needs one of add, remove/],
    [["user", "frob"], /unknown command "user frob"; known: add, remove/],
    [["frob"], /unknown command "frob"/],
    [[], /no command given/],
  ])("when the command line is %j, then it is a usage error in one line", (argv, message) => {
    const text = usageError(...argv);
    expect(text).toMatch(message);
    expect(text).not.toMatch(/\n/);
    expect(text).toMatch(/run "ctl .*--help" for usage/);
  });

  it("when --help is asked alone, then the help names every command and every flag with its description", () => {
    const line = parseCommandLine(["--help"]);
    expect("help" in line).toBe(true);
    const help = (line as { help: string }).help;
    for (const spec of COMMANDS) {
      expect(help).toContain(spec.name);
      expect(help).toContain(spec.description);
      for (const flag of spec.flags) {
        expect(help).toContain(`--${flag.name}`);
        expect(help).toContain(flag.description);
      }
    }
  });

  it("when --help follows a command or a group, then the help is of those commands alone", () => {
    const one = (parseCommandLine(["user", "add", "--help"]) as { help: string }).help;
    expect(one).toContain("--username <username>");
    expect(one).not.toContain("user remove");
    const group = (parseCommandLine(["apikey", "-h"]) as { help: string }).help;
    expect(group).toContain("apikey add");
    expect(group).toContain("apikey revoke");
    expect(group).not.toContain("token <user_id>");
    // Even where the rest of the line would be wrong.
    expect("help" in parseCommandLine(["token", "--help"])).toBe(true);
  });
});
