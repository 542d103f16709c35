/**
 * Who may say what on NATS: one user per service, plus `ops` for the operations CLI and the tests, each
 * allowed only the subjects of Moleculer's layout (`MOL-<ns>.<CMD>[.<nodeID>]`, transit and the NATS
 * transporter) and of the JetStream streams (@moleculer/channels) it needs. `renderNatsConf` writes the
 * nats-server configuration from it: deploy/nats/nats.conf (compose, and what an operator's NATS runs)
 * and the private server of the cluster tier, so that the two cannot drift (a unit test compares them).
 *
 * What NATS can restrict here: which subjects a user may publish or subscribe to. A call's action name
 * travels in the payload (the subject is `REQ.<nodeID>`), so which actions a peer may call is limited
 * only by which nodes it may address. Node ids begin with their service (`<service>.<host>-<pid>`,
 * app/broker-options.ts), so a service's user takes calls only on `REQ.<service>.>` and may send calls
 * only to the services it calls (CALLEES). What it cannot restrict: the payloads. A user that may
 * announce itself (INFO, every node must) can claim services it does not run, and the sender named in a
 * DISCONNECT or HEARTBEAT is not checked (docs/decisions/0134-broker-and-store-credentials.md).
 */

/** Each service's NATS user, named as the service; `ops` is the operations CLI's (and the tests'). */
export const SERVICE_USERS = [
  "gateway",
  "auth",
  "users",
  "rounds",
  "stores",
  "settings",
  "notifier",
] as const;
export type ServiceUser = (typeof SERVICE_USERS)[number];
export const OPS_USER = "ops";

/**
 * The services each service calls actions of (besides its own replicas): the gateway's routes, and the
 * calls between services (shared/contracts). A call missing here times out in the cluster tier.
 */
export const CALLEES: Record<ServiceUser, readonly ServiceUser[]> = {
  gateway: ["auth", "users", "rounds", "stores", "settings", "notifier"],
  auth: ["users"],
  users: [],
  rounds: ["stores", "users"],
  stores: ["rounds"],
  settings: [],
  notifier: ["users"],
};

/**
 * JetStream channels (without the namespace prefix): the ones each service consumes (it creates their
 * streams, its durable consumer, and the dead-letter stream) and the ones it publishes to.
 */
export const CHANNEL_USE: Record<ServiceUser, { consumes: readonly string[]; publishes: readonly string[] }> =
  {
    gateway: { consumes: [], publishes: [] },
    auth: { consumes: [], publishes: [] },
    users: { consumes: ["round.member.joined"], publishes: [] },
    rounds: { consumes: ["store.event.created"], publishes: ["round.member.joined"] },
    stores: { consumes: [], publishes: ["store.event.created"] },
    settings: { consumes: [], publishes: [] },
    notifier: { consumes: ["notifier.jobs"], publishes: ["notifier.jobs"] },
  };

/** The dead-letter queue of every channel (app/broker-options.ts). */
export const DEAD_LETTER = "DEAD_LETTER";

/** The environment variable nats-server reads a user's password from. */
export const passwordEnvOf = (user: string): string => `NATS_${user.toUpperCase()}_PASSWORD`;

export interface Permissions {
  publish: string[];
  subscribe: string[];
}

export interface NatsAuthOptions {
  /** NAMESPACE of the deployment. */
  namespace: string;
  /**
   * Tests only: every service may call the ops node, where the cluster tier hosts stand-in services.
   * Never in a deployment: the ops node then could be made to host services the others call.
   */
  opsHostsServices?: boolean;
}

/** `MOL-<ns>` (Moleculer's transit prefix) and the channels' prefix (`<ns>.`, empty without a namespace). */
const prefixes = (namespace: string) => ({
  mol: namespace ? `MOL-${namespace}` : "MOL",
  chan: namespace ? `${namespace}.` : "",
});

/** A stream's name, as @moleculer/channels derives it from its subject. */
const streamOf = (subject: string): string => subject.split(".").join("_");

export function permissionsOf(user: ServiceUser, opts: NatsAuthOptions): Permissions {
  const { mol, chan } = prefixes(opts.namespace);
  // Discovery and heartbeats, broadcast and to any node; events and answers to any node.
  const publish = [
    ...["DISCOVER", "INFO", "HEARTBEAT", "DISCONNECT", "PING"].map((c) => `${mol}.${c}`),
    ...["DISCOVER", "INFO", "PING", "PONG", "EVENT", "RES"].map((c) => `${mol}.${c}.>`),
    // Calls only to its own service's nodes and the ones it calls.
    ...[user, ...CALLEES[user], ...(opts.opsHostsServices ? [OPS_USER] : [])].map((s) => `${mol}.REQ.${s}.>`),
    "$JS.API.INFO",
  ];
  // Broadcasts, and what is addressed to its own nodes.
  const subscribe = [
    ...["DISCOVER", "INFO", "HEARTBEAT", "DISCONNECT", "PING"].map((c) => `${mol}.${c}`),
    ...["DISCOVER", "INFO", "PING", "PONG", "EVENT", "REQ", "RES"].map((c) => `${mol}.${c}.${user}.>`),
    `_INBOX.${user}.>`,
  ];
  const { consumes, publishes } = CHANNEL_USE[user];
  for (const ch of publishes) publish.push(`${chan}${ch}`);
  if (consumes.length > 0) {
    publish.push("$JS.API.STREAM.NAMES", `${chan}${DEAD_LETTER}`);
    for (const subject of [...consumes.map((c) => `${chan}${c}`), `${chan}${DEAD_LETTER}`]) {
      const stream = streamOf(subject);
      publish.push(
        `$JS.API.STREAM.CREATE.${stream}`,
        `$JS.API.STREAM.INFO.${stream}`,
        `$JS.API.CONSUMER.CREATE.${stream}`,
        `$JS.API.CONSUMER.CREATE.${stream}.>`,
        `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.>`,
        `$JS.API.CONSUMER.INFO.${stream}.>`,
        `$JS.ACK.${stream}.>`,
      );
    }
    // Push consumers deliver to `<ns>.<nodeID>.…` (the channel's consumer id), its node id its own.
    subscribe.push(`${chan}${user}.>`);
  }
  return { publish: [...new Set(publish)], subscribe: [...new Set(subscribe)] };
}

/** The operations CLI and the tests: all of the namespace, and JetStream's API to inspect its streams. */
export function opsPermissions(opts: NatsAuthOptions): Permissions {
  const { mol, chan } = prefixes(opts.namespace);
  const namespaceWide = [`${mol}.>`, ...(chan ? [`${chan}>`] : [])];
  return {
    publish: [...namespaceWide, "$JS.API.>", "$JS.ACK.>"],
    subscribe: [...namespaceWide, "_INBOX.>"],
  };
}

export const ALL_USERS = [...SERVICE_USERS, OPS_USER] as const;

export function permissionsFor(user: string, opts: NatsAuthOptions): Permissions {
  if (user === OPS_USER) return opsPermissions(opts);
  return permissionsOf(user as ServiceUser, opts);
}

export interface NatsConfOptions extends NatsAuthOptions {
  /** Where the server listens, e.g. 0.0.0.0:4222. */
  listen: string;
  /** JetStream's folder. */
  storeDir: string;
}

const quoted = (s: string) => JSON.stringify(s);
const list = (items: string[], indent: string) =>
  `[\n${items.map((i) => `${indent}  ${quoted(i)}`).join("\n")}\n${indent}]`;

/** The nats-server configuration: JetStream, and the users above with passwords from the environment. */
export function renderNatsConf(opts: NatsConfOptions): string {
  const users = ALL_USERS.map((user) => {
    const p = permissionsFor(user, opts);
    return [
      `    {`,
      `      user: ${quoted(user)}`,
      `      password: $${passwordEnvOf(user)}`,
      `      permissions: {`,
      `        publish: { allow: ${list(p.publish, "        ")} }`,
      `        subscribe: { allow: ${list(p.subscribe, "        ")} }`,
      `      }`,
      `    }`,
    ].join("\n");
  });
  return [
    `# nats-server configuration of the rounds platform (namespace ${quoted(opts.namespace)}): JetStream, and one`,
    `# user per service plus "ops" (the operations CLI), each allowed only its subjects. Generated from`,
    `# shared/ops/nats-auth.ts by \`npm run -s deploy:config\`: change that module, not this file.`,
    `# Every password comes from nats-server's environment (${passwordEnvOf("<user>")}), letters and digits`,
    `# starting with a letter. There is no anonymous access: a client without a user and password is refused.`,
    `# TLS: add a block such as  tls { cert_file: "/etc/nats/tls/tls.crt", key_file: "/etc/nats/tls/tls.key" }`,
    `# and give the processes a tls:// TRANSPORTER (and NATS_TLS_DIR for a private CA): docs/operations.md.`,
    `listen: ${quoted(opts.listen)}`,
    `jetstream {`,
    `  store_dir: ${quoted(opts.storeDir)}`,
    `}`,
    `authorization {`,
    `  users: [`,
    users.join("\n"),
    `  ]`,
    `}`,
    ``,
  ].join("\n");
}

/** What deploy/nats/nats.conf is rendered with (compose's NATS; the operator's NATS in Kubernetes). */
export const DEPLOYED_NATS: NatsConfOptions = {
  namespace: "rounds",
  listen: "0.0.0.0:4222",
  storeDir: "/data",
};
