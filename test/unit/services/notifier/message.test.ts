/** The FCM message of a multicast: string coercion of data values, reserved keys, the 4 KB payload limit. */
import { FCM_PAYLOAD_LIMIT, buildMessage, checkMessage } from "../../../../services/notifier/message";

type MessageParams = Parameters<typeof buildMessage>[0];

/** Bytes the message of `p` takes, as checkMessage measures them. */
const sizeOf = (p: MessageParams) => Buffer.byteLength(JSON.stringify(buildMessage(p)));

/** A message whose single data value is padded with `char` so that it takes exactly `bytes` bytes. */
function messageOfSize(bytes: number, char = "x"): MessageParams {
  const base: MessageParams = { title: "Hello", keys: { pad: "" } };
  const room = bytes - sizeOf(base);
  const charBytes = Buffer.byteLength(char);
  if (room < 0 || room % charBytes !== 0) throw new Error(`cannot pad to ${bytes} bytes with "${char}"`);
  return { title: "Hello", keys: { pad: char.repeat(room / charBytes) } };
}

describe("buildMessage", () => {
  it("when only a title is given, then the message has the title alone: no body, image or data", () => {
    const message = buildMessage({ title: "Sale" });
    expect(message).toEqual({ notification: { title: "Sale" } });
    expect(message.notification).not.toHaveProperty("body");
    expect(message.notification).not.toHaveProperty("imageUrl");
    expect(message).not.toHaveProperty("data");
  });

  it("when desc and picture are given, then they become body and imageUrl", () => {
    expect(buildMessage({ title: "Sale", desc: "50% off", picture: "https://cdn.example/p.png" })).toEqual({
      notification: { title: "Sale", body: "50% off", imageUrl: "https://cdn.example/p.png" },
    });
  });

  it("when desc and picture are null, then neither appears in the notification", () => {
    const message = buildMessage({ title: "Sale", desc: null, picture: null, keys: null });
    expect(message).toEqual({ notification: { title: "Sale" } });
  });

  it("when keys hold numbers and booleans, then the data carries their text and strings unchanged", () => {
    const message = buildMessage({
      title: "t",
      keys: { count: 3, ratio: 0.5, negative: -7, on: true, off: false, text: "x", empty: "" },
    });
    expect(message.data).toEqual({
      count: "3",
      ratio: "0.5",
      negative: "-7",
      on: "true",
      off: "false",
      text: "x",
      empty: "",
    });
    for (const value of Object.values(message.data ?? {})) expect(typeof value).toBe("string");
  });

  it("when key names are . $ __proto__ constructor prototype, then each is an own data entry and nothing gains a prototype", () => {
    const keys = JSON.parse(
      '{"a.b":"1","$x":2,"__proto__":"p","constructor":"c","prototype":true}',
    ) as Record<string, string | number | boolean>;
    const message = buildMessage({ title: "t", keys });
    const data = message.data!;
    expect(Object.getPrototypeOf(data)).toBeNull();
    expect(Object.keys(data)).toEqual(["a.b", "$x", "__proto__", "constructor", "prototype"]);
    expect(JSON.parse(JSON.stringify(message.data))).toEqual(
      JSON.parse('{"a.b":"1","$x":"2","__proto__":"p","constructor":"c","prototype":"true"}'),
    );
    expect(JSON.stringify(message)).toContain('"__proto__":"p"');
    expect(({} as Record<string, unknown>).p).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("a.b");
  });

  it("when a job's key pairs are given, then they are the data, in order, over any keys object", () => {
    const message = buildMessage({
      title: "t",
      keys: { ignored: "x" },
      keyPairs: [
        ["__proto__", "1"],
        ["a.b", 2],
      ],
    });
    expect(Object.entries(message.data!)).toEqual([
      ["__proto__", "1"],
      ["a.b", "2"],
    ]);
  });

  it("when keys is an empty object, then the message has no data at all", () => {
    expect(buildMessage({ title: "t", keys: {} })).not.toHaveProperty("data");
  });
});

describe("checkMessage", () => {
  it("when the message is small and its keys are ordinary, then there is no issue", () => {
    expect(
      checkMessage({ title: "t", desc: "d", picture: "https://x.example/a.png", keys: { a: 1, b: "c" } }),
    ).toEqual([]);
  });

  it.each(["from", "message_type", "collapse_key", "notification", "priority", "to"])(
    "when keys use the reserved key %s, then one value_error points at that key",
    (key) => {
      expect(checkMessage({ title: "t", keys: { [key]: "v", fine: "v" } })).toEqual([
        {
          type: "value_error",
          loc: ["keys", key],
          msg: `Value error, '${key}' is a reserved FCM data key`,
          input: key,
        },
      ]);
    },
  );

  it.each(["google.c.a.e", "google.sent_time", "gcm.notification.title", "gcm.n.e"])(
    "when a key starts with google. or gcm. (%s), then it is refused as reserved",
    (key) => {
      const issues = checkMessage({ title: "t", keys: { [key]: "1" } });
      expect(issues).toHaveLength(1);
      expect(issues[0]).toMatchObject({ type: "value_error", loc: ["keys", key] });
    },
  );

  it("when several reserved keys are used, then each gets its own issue", () => {
    const issues = checkMessage({ title: "t", keys: { from: "a", "gcm.x": "b", ok: "c", to: "d" } });
    expect(issues.map((i) => i.loc)).toEqual([
      ["keys", "from"],
      ["keys", "gcm.x"],
      ["keys", "to"],
    ]);
  });

  it("when a key merely contains a reserved word, then it is accepted", () => {
    expect(checkMessage({ title: "t", keys: { from_user: "1", my_google: "2", "x.gcm.y": "3" } })).toEqual(
      [],
    );
  });

  it("when the payload takes exactly the limit, then it passes; one byte more, then it is a 422 issue", () => {
    const atLimit = messageOfSize(FCM_PAYLOAD_LIMIT);
    expect(sizeOf(atLimit)).toBe(FCM_PAYLOAD_LIMIT);
    expect(checkMessage(atLimit)).toEqual([]);

    const over = messageOfSize(FCM_PAYLOAD_LIMIT + 1);
    expect(checkMessage(over)).toEqual([
      {
        type: "value_error",
        loc: [],
        msg: `Value error, title, desc, picture and keys take ${FCM_PAYLOAD_LIMIT + 1} bytes; FCM allows ${FCM_PAYLOAD_LIMIT}`,
        input: null,
      },
    ]);
  });

  it("when text is multi-byte, then the limit counts UTF-8 bytes, not characters", () => {
    const cyrillic = messageOfSize(FCM_PAYLOAD_LIMIT + 2, "ж"); // 2 bytes a character
    const characters = JSON.stringify(buildMessage(cyrillic)).length;
    expect(characters).toBeLessThan(FCM_PAYLOAD_LIMIT); // short in characters…
    expect(checkMessage(cyrillic)).toHaveLength(1); // …but over in bytes
    expect(checkMessage(cyrillic)[0].msg).toContain(`${FCM_PAYLOAD_LIMIT + 2} bytes`);
  });

  it("when title, desc and picture alone are long, then they count towards the limit too", () => {
    const p: MessageParams = {
      title: "t".repeat(200),
      desc: "d".repeat(1000),
      picture: `https://x.example/${"p".repeat(2030)}`,
      keys: { k: "v".repeat(1000) },
    };
    expect(sizeOf(p)).toBeGreaterThan(FCM_PAYLOAD_LIMIT);
    expect(checkMessage(p)).toEqual([expect.objectContaining({ type: "value_error", loc: [] })]);
    expect(checkMessage({ ...p, keys: null })).toEqual([]);
  });

  it("when a key is reserved and the payload is too large, then both issues are reported", () => {
    const big = messageOfSize(FCM_PAYLOAD_LIMIT + 10);
    const issues = checkMessage({ ...big, keys: { ...big.keys, from: "x" } });
    expect(issues.map((i) => i.loc)).toEqual([["keys", "from"], []]);
  });
});
