/**
 * Credentials of NATS, Redis and MongoDB (docs/decisions/0134-broker-and-store-credentials.md): their own
 * settings, never in an address; the options that carry them to each client; the node ids NATS
 * permissions rely on; the users and permissions rendered for nats-server.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { brokerOptions, nodeIdOf } from "../../../../app/broker-options";
import { loadConfig } from "../../../../shared/config";
import {
  CALLEES,
  CHANNEL_USE,
  opsPermissions,
  permissionsOf,
  SERVICE_USERS,
} from "../../../../shared/ops/nats-auth";
import { redisKeysOf, redisRulesOf } from "../../../../shared/ops/store-users";
import { natsConnectionOptions } from "../../../../shared/runtime/nats-options";
import { ReconnectingNatsTransporter } from "../../../../shared/runtime/nats-transporter";
import { redisClientOptions } from "../../../../shared/runtime/redis-options";
import { connectionOptions } from "../../../../shared/storage/mongo";
import { Channels } from "../../../../shared/runtime/channels";
import { JOBS_CHANNEL } from "../../../../services/notifier.service";

/** A fresh folder holding empty files of these names. */
const tlsDir = (...names: string[]): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nats-tls-"));
  for (const name of names) fs.writeFileSync(path.join(dir, name), "");
  return dir;
};

const refusal = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as Error).message;
  }
  return "accepted";
};

describe("credential settings", () => {
  it("when an address carries a user and password, then start is refused naming the setting, without the password", () => {
    const cases: Array<[string, string, RegExp]> = [
      [
        "TRANSPORTER",
        "nats://auth:s3cretpw@nats:4222",
        /^TRANSPORTER must not carry credentials: set NATS_USER/,
      ],
      ["TRANSPORTER", "nats://a:4222,nats://auth:s3cretpw@b:4222", /^TRANSPORTER must not carry credentials/],
      ["CACHER", "redis://users:s3cretpw@redis:6379", /^CACHER must not carry credentials: set REDIS_USER/],
      [
        "MONGO_URI",
        "mongodb://rounds:s3cretpw@m1:27017,m2:27017/rounds",
        /^MONGO_URI must not carry credentials/,
      ],
    ];
    for (const [env, value, message] of cases) {
      const text = refusal({ [env]: value });
      expect({ env, text }).toEqual({ env, text: expect.stringMatching(message) });
      expect(text).not.toContain("s3cretpw");
    }
  });

  it("when a password comes without its user, or a client certificate without its key, then start is refused", () => {
    expect(refusal({ NATS_PASSWORD: "p1" })).toBe("NATS_PASSWORD is set without NATS_USER");
    expect(refusal({ REDIS_PASSWORD: "p1" })).toBe("REDIS_PASSWORD is set without REDIS_USER");
    expect(refusal({ MONGO_PASSWORD: "p1" })).toBe("MONGO_PASSWORD is set without MONGO_USER");
    expect(refusal({ TRANSPORTER: "redis://r:6379" })).toMatch(
      /^TRANSPORTER must be nats:\/\/host:port or tls:/,
    );
  });

  it("when a process has a NATS user, then its node id begins with the user; without one, with its one service; else it is host and pid", () => {
    const host = os
      .hostname()
      .toLowerCase()
      .replace(/[.*>\s]/g, "-");
    const all = ["gateway", "auth", "users"];
    expect(nodeIdOf({ natsUser: "ops", services: all })).toBe(`ops.${host}-${process.pid}`);
    expect(nodeIdOf({ natsUser: "", services: ["notifier"] })).toBe(`notifier.${host}-${process.pid}`);
    expect(nodeIdOf({ natsUser: "", services: all })).toBe(`${host}-${process.pid}`);
  });

  it("when a process starts a second broker with the same user, then the second id differs by a suffix", () => {
    const config = loadConfig({ NATS_USER: "ops", NATS_PASSWORD: "p1", TRANSPORTER: "nats://n:4222" });
    const first = brokerOptions(config).nodeID as string;
    const second = brokerOptions(config).nodeID as string;
    expect(second).not.toBe(first);
    expect(second.startsWith("ops.")).toBe(true);
  });
});

describe("the options that carry them", () => {
  const nats = {
    transporter: "nats://n1:4222, nats://n2:4223",
    natsUser: "rounds",
    natsPassword: "p%40:/ss",
    natsTlsDir: "",
  };

  it("when NATS settings are given, then the connection has the servers, the password as it is, and the user's own inbox prefix", () => {
    expect(natsConnectionOptions(nats)).toEqual({
      servers: ["n1:4222", "n2:4223"],
      user: "rounds",
      pass: "p%40:/ss",
      inboxPrefix: "_INBOX.rounds",
    });
    expect(natsConnectionOptions({ ...nats, natsUser: "", natsPassword: "" })).toEqual({
      servers: ["n1:4222", "n2:4223"],
    });
  });

  it("when TRANSPORTER is tls:// or NATS_TLS_DIR is given, then the connection asks for TLS with the folder's files", () => {
    expect(natsConnectionOptions({ ...nats, transporter: "tls://n1:4222" }).tls).toEqual({});
    const all = tlsDir("ca.crt", "tls.crt", "tls.key");
    expect(natsConnectionOptions({ ...nats, natsTlsDir: all }).tls).toEqual({
      caFile: path.join(all, "ca.crt"),
      certFile: path.join(all, "tls.crt"),
      keyFile: path.join(all, "tls.key"),
    });
    const caOnly = tlsDir("ca.crt");
    expect(natsConnectionOptions({ ...nats, natsTlsDir: caOnly }).tls).toEqual({
      caFile: path.join(caOnly, "ca.crt"),
    });
    expect(natsConnectionOptions(nats).tls).toBeUndefined();
  });

  it("when NATS_TLS_DIR lacks its files, or a retired TLS file setting is given, then start is refused naming what to do", () => {
    expect(refusal({ NATS_TLS_DIR: path.join(os.tmpdir(), "no-such-tls-dir") })).toMatch(
      /^NATS_TLS_DIR is not a folder/,
    );
    expect(refusal({ NATS_TLS_DIR: tlsDir() })).toMatch(/must hold ca.crt, or tls.crt and tls.key/);
    expect(refusal({ NATS_TLS_DIR: tlsDir("tls.crt") })).toBe(
      "NATS_TLS_DIR's tls.crt and tls.key go together",
    );
    expect(refusal({ NATS_TLS_DIR: tlsDir("ca.crt") })).toBe("accepted");
    expect(refusal({ NATS_TLS_CA: "/ca.pem" })).toMatch(/^NATS_TLS_CA replaced by NATS_TLS_DIR/);
  });

  it("when the broker options are built, then the transporter gets the same options, never a URL to parse", () => {
    const certs = tlsDir("ca.crt");
    const config = loadConfig({
      TRANSPORTER: "tls://n1:4222",
      NATS_USER: "users",
      NATS_PASSWORD: "pw1",
      NATS_TLS_DIR: certs,
      SERVICES: "users",
    });
    const transporter = brokerOptions(config).transporter;
    expect(transporter).toBeInstanceOf(ReconnectingNatsTransporter);
    expect((transporter as unknown as { opts: object }).opts).toEqual({
      servers: ["n1:4222"],
      user: "users",
      pass: "pw1",
      inboxPrefix: "_INBOX.users",
      tls: { caFile: path.join(certs, "ca.crt") },
      // Moleculer's own defaults for NATS.
      preserveBuffers: true,
      maxReconnectAttempts: -1,
    });
    expect(brokerOptions(loadConfig({})).transporter).toBeUndefined();
  });

  it("when Redis and MongoDB credentials are given, then their clients get them apart from the address", () => {
    const config = loadConfig({ CACHER: "redis://r:6379", REDIS_USER: "auth", REDIS_PASSWORD: "pw2" });
    const cacher = brokerOptions(config).cacher as { options: { redis: Record<string, unknown> } };
    expect(cacher.options.redis).toMatchObject({
      host: "r",
      port: "6379",
      username: "auth",
      password: "pw2",
    });
    expect(redisClientOptions("redis://r:6379")).not.toHaveProperty("password");
    expect(connectionOptions({ mongoUser: "auth", mongoPassword: "pw3" }).auth).toEqual({
      username: "auth",
      password: "pw3",
    });
    expect(connectionOptions({ mongoUser: "", mongoPassword: "" }).auth).toBeUndefined();
  });
});

describe("the NATS users and permissions", () => {
  const opts = { namespace: "rounds" };

  it("when any service's permissions are read, then it takes calls only on its own nodes and calls only the services it calls", () => {
    for (const user of SERVICE_USERS) {
      const p = permissionsOf(user, opts);
      expect(p.subscribe.filter((s) => s.startsWith("MOL-rounds.REQ."))).toEqual([
        `MOL-rounds.REQ.${user}.>`,
      ]);
      expect(p.publish.filter((s) => s.startsWith("MOL-rounds.REQ.")).sort()).toEqual(
        [user, ...CALLEES[user]].map((s) => `MOL-rounds.REQ.${s}.>`).sort(),
      );
      // Nothing outside the namespace's subjects, its own inbox and the JetStream API of its streams.
      for (const s of [...p.publish, ...p.subscribe]) {
        expect({ user, s, ok: /^(MOL-rounds\.|rounds\.|\$JS\.(API|ACK)\.|_INBOX\.)/.test(s) }).toEqual({
          user,
          s,
          ok: true,
        });
      }
      expect(p.subscribe).toContain(`_INBOX.${user}.>`);
      expect(p.subscribe.filter((s) => s.startsWith("_INBOX."))).toEqual([`_INBOX.${user}.>`]);
      expect([...p.publish, ...p.subscribe].some((s) => /REQB|EVENTB|^>$|^\$JS\.API\.>$/.test(s))).toBe(
        false,
      );
    }
    expect(permissionsOf("notifier", opts).publish).not.toContain("MOL-rounds.REQ.auth.>");
  });

  it("when the channels are read, then each service may publish only to the streams it produces and manage only the ones it consumes", () => {
    expect(permissionsOf("stores", opts).publish).toContain("rounds.store.event.created");
    expect(permissionsOf("stores", opts).publish).not.toContain("rounds.round.member.joined");
    expect(permissionsOf("users", opts).publish).toContain(
      "$JS.API.CONSUMER.INFO.rounds_round_member_joined.>",
    );
    expect(permissionsOf("users", opts).publish.some((s) => s.includes("notifier_jobs"))).toBe(false);
    expect(permissionsOf("gateway", opts).publish.filter((s) => s.startsWith("$JS."))).toEqual([
      "$JS.API.INFO",
    ]);
  });

  it("when the services' own channels are compared with the table, then each consumes exactly the channels it declares", async () => {
    expect(
      [
        ...CHANNEL_USE.users.consumes,
        ...CHANNEL_USE.rounds.consumes,
        ...CHANNEL_USE.notifier.consumes,
      ].sort(),
    ).toEqual([Channels.roundMemberJoined, Channels.storeEventCreated, JOBS_CHANNEL].sort());
    const { serviceSchema } = await import("../../../../app/broker");
    for (const user of SERVICE_USERS) {
      const schema = serviceSchema(user) as { channels?: Record<string, unknown> };
      expect({ user, consumes: Object.keys(schema.channels ?? {}).sort() }).toEqual({
        user,
        consumes: [...CHANNEL_USE[user].consumes].sort(),
      });
    }
  });

  it("when ops's permissions are read, then they cover the namespace and JetStream's API, and nothing of another namespace", () => {
    expect(opsPermissions(opts)).toEqual({
      publish: ["MOL-rounds.>", "rounds.>", "$JS.API.>", "$JS.ACK.>"],
      subscribe: ["MOL-rounds.>", "rounds.>", "_INBOX.>"],
    });
  });

  it("when the Redis users are read, then each service reaches only its cache entries (the gateway also its rate counters), without dangerous commands", () => {
    expect(redisKeysOf("rounds", "rounds")).toEqual(["rounds-cache-rounds.*", "rounds-cache-health:ready"]);
    expect(redisKeysOf("gateway", "rounds")).toEqual([
      "rounds-cache-gateway.*",
      "rounds-cache-health:ready",
      "rounds-ratelimit:*",
    ]);
    expect(redisRulesOf("auth", "rounds")).toMatch(
      /^resetkeys ~rounds-cache-auth\.\* ~rounds-cache-health:ready resetchannels -@all .* -@dangerous \+info$/,
    );
  });
});
