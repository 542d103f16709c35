/**
 * The operations CLI's command line: every command, its arguments and flags, described once here, so
 * that the parser (Node's util.parseArgs) and the help text cannot disagree. A wrong command line is a
 * UsageError (exit 2 in bin/ctl.ts), told in one line.
 */
import { parseArgs } from "node:util";

export class UsageError extends Error {
  constructor(message: string) {
    // Node's parser writes some of its messages over several lines: a usage error is one.
    super(message.replace(/\s*\n\s*/g, " "));
    this.name = "UsageError";
  }
}

export interface FlagSpec {
  /** Without the dashes: `--phone` is "phone". */
  name: string;
  /** The value's placeholder in the help (`--phone <phone>`); absent for a flag without a value. */
  value?: string;
  required?: boolean;
  /** The only values accepted, if the flag is one of a few. */
  choices?: readonly string[];
  description: string;
}

export interface CommandSpec {
  /** One or two words: "token", "user add". */
  name: string;
  /** The positional arguments' placeholders, in order; each is required. */
  args: readonly string[];
  flags: readonly FlagSpec[];
  description: string;
}

export const PLATFORMS = ["android", "ios", "ru_store"] as const;
export const API_KEY_SCOPES = ["app", "notifications"] as const;

export const COMMANDS = [
  {
    name: "seed",
    args: [],
    flags: [
      {
        name: "reset",
        description:
          "delete the embedded store's files (or drop the MONGO_URI database) first; needs the server stopped",
      },
    ],
    description: "load the demo dataset and print its manifest (written to DATA_DIR/demo-manifest.json too)",
  },
  {
    name: "token",
    args: ["<user_id>"],
    flags: [],
    description: "print a new token set (access and refresh token) for a user",
  },
  {
    name: "user add",
    args: [],
    flags: [
      { name: "phone", value: "<phone>", required: true, description: "phone number, e.g. +79001234567" },
      { name: "username", value: "<username>", required: true, description: "unique user name" },
      { name: "first", value: "<name>", description: "first name" },
      { name: "last", value: "<name>", description: "last name" },
      { name: "avatar", value: "<url>", description: "URL of the avatar picture" },
    ],
    description: "create a user and print its profile",
  },
  {
    name: "user remove",
    args: ["<user_id>"],
    flags: [],
    description: "mark a user removed and revoke their refresh tokens",
  },
  {
    name: "friends add",
    args: ["<user_id>", "<user_id>"],
    flags: [],
    description: "make two users friends",
  },
  {
    name: "apikey add",
    args: [],
    flags: [
      {
        name: "scope",
        value: "<scope>",
        required: true,
        choices: API_KEY_SCOPES,
        description: "what the key may call",
      },
      { name: "label", value: "<label>", description: "a note to recognise the key by" },
    ],
    description: "create an API key and print it (the key is shown this once)",
  },
  {
    name: "apikey revoke",
    args: ["<key_id>"],
    flags: [],
    description: "revoke an API key by its id",
  },
  {
    name: "app-version set",
    args: [],
    flags: [
      {
        name: "platform",
        value: "<platform>",
        required: true,
        choices: PLATFORMS,
        description: "the app's platform",
      },
      { name: "current", value: "<version>", required: true, description: "the latest version" },
      { name: "min", value: "<version>", required: true, description: "the oldest version still supported" },
    ],
    description: "set a platform's current and minimum app versions",
  },
  {
    name: "device add",
    args: ["<user_id>", "<token>"],
    flags: [],
    description: "register a push registration token for a user",
  },
  {
    name: "device import",
    args: ["<file>"],
    flags: [],
    description: 'register many push registration tokens: one "<user_id> <token>" per line of <file>',
  },
] as const satisfies readonly CommandSpec[];

export type CommandName = (typeof COMMANDS)[number]["name"];

export interface ParsedCommand {
  name: CommandName;
  /** The positional arguments, in the order of the spec's `args`. */
  args: string[];
  /** The flags given: a string for a flag with a value, true for one without. */
  flags: Record<string, string | true>;
}

export type CommandLine = { help: string } | { command: ParsedCommand };

const specs: readonly CommandSpec[] = COMMANDS;

/** One command's usage line: `user add --phone <phone> --username <username> [--first <name>] …`. */
function usageLine(spec: CommandSpec): string {
  const flags = spec.flags.map((f) => {
    const text = f.value ? `--${f.name} ${f.value}` : `--${f.name}`;
    return f.required ? text : `[${text}]`;
  });
  return [spec.name, ...spec.args, ...flags].join(" ");
}

/** One command's help: its usage, what it does, and each flag. */
export function commandHelp(spec: CommandSpec): string {
  const lines = [`  ${usageLine(spec)}`, `      ${spec.description}`];
  for (const f of spec.flags) {
    const choices = f.choices ? ` (${f.choices.join(", ")})` : "";
    const text = f.value ? `--${f.name} ${f.value}` : `--${f.name}`;
    lines.push(`      ${text.padEnd(22)} ${f.description}${choices}`);
  }
  return lines.join("\n");
}

const HEADER = `Usage: npm run -s ctl -- <command> [arguments] [flags]   (built, as in the image: node dist/bin/ctl.js …)

Embedded mode (no TRANSPORTER): a running server takes the command on DATA_DIR/admin.sock; with the
server stopped the CLI works on DATA_DIR itself. With TRANSPORTER set it joins the cluster as a node.
Flags come after the command's words; --help (-h) after any command describes it alone. The answer is
JSON on stdout; a failure is one line on stderr and exit 1, a wrong command line one line and exit 2.`;

/** The help for every command whose words start with `words` (all of them for none). */
export function helpText(words: readonly string[] = []): string {
  const prefix = words.join(" ");
  const chosen = specs.filter((s) => prefix === "" || s.name === prefix || s.name.startsWith(`${prefix} `));
  return `${HEADER}\n\nCommands:\n${chosen.map(commandHelp).join("\n\n")}\n`;
}

/** The leading words of `argv`, up to the first flag. */
const leadingWords = (argv: readonly string[]): string[] => {
  const end = argv.findIndex((a) => a.startsWith("-"));
  return argv.slice(0, end === -1 ? argv.length : end);
};

/** The command named by the first one or two words, preferring two ("user add" over a "user"). */
function findSpec(words: readonly string[]): CommandSpec | undefined {
  return (
    specs.find((s) => words.length >= 2 && s.name === `${words[0]} ${words[1]}`) ??
    specs.find((s) => s.name === words[0])
  );
}

const seeHelp = (what: string) => `run "ctl ${what}--help" for usage`;

/** Reads a command line (without node and the script): a command to run, or help to print. */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  const words = leadingWords(argv);
  const spec = findSpec(words);
  const wantsHelp = argv.includes("--help") || argv.includes("-h");
  if (!spec) {
    if (!words[0]) {
      if (wantsHelp) return { help: helpText() };
      throw new UsageError(`no command given; ${seeHelp("")}`);
    }
    // A group's first word alone ("user") or with an unknown second one ("user frob").
    const subs = specs.filter((s) => s.name.startsWith(`${words[0]} `)).map((s) => s.name.split(" ")[1]);
    if (subs.length === 0) throw new UsageError(`unknown command "${words[0]}"; ${seeHelp("")}`);
    if (wantsHelp) return { help: helpText(words.slice(0, 1)) };
    const what = words[1]
      ? `unknown command "${words[0]} ${words[1]}"; known:`
      : `"${words[0]}" needs one of`;
    throw new UsageError(`${what} ${subs.join(", ")}; ${seeHelp(`${words[0]} `)}`);
  }
  if (wantsHelp) return { help: helpText(spec.name.split(" ")) };

  const rest = argv.slice(spec.name.split(" ").length);
  const options = Object.fromEntries(
    spec.flags.map((f) => [f.name, { type: f.value ? ("string" as const) : ("boolean" as const) }]),
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${spec.name}: ${(err as Error).message}; ${seeHelp(`${spec.name} `)}`);
  }
  const fail = (message: string): never => {
    throw new UsageError(`${spec.name}: ${message}; ${seeHelp(`${spec.name} `)}`);
  };
  if (parsed.positionals.length !== spec.args.length) {
    fail(
      spec.args.length === 0
        ? `takes no arguments, got ${parsed.positionals.join(" ")}`
        : `needs ${spec.args.join(" ")}, got ${parsed.positionals.length} argument(s)`,
    );
  }
  const flags: Record<string, string | true> = {};
  for (const f of spec.flags) {
    const value = parsed.values[f.name];
    if (value === undefined || value === false) {
      if (f.required) fail(`--${f.name} is required`);
      continue;
    }
    if (typeof value === "string") {
      if (value === "") fail(`--${f.name} needs a value`);
      if (f.choices && !f.choices.includes(value)) fail(`--${f.name} must be one of ${f.choices.join(", ")}`);
      flags[f.name] = value;
    } else {
      flags[f.name] = true;
    }
  }
  return { command: { name: spec.name as CommandName, args: parsed.positionals, flags } };
}
