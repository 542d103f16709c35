/**
 * The Redis ACL users and MongoDB users of a deployment, one per service, each with only what it uses.
 * `renderRedisStart` writes deploy/redis/start.sh (compose's Redis: the ACL file from the environment,
 * then redis-server) and `renderMongoInit` deploy/mongo/init-users.js (compose's MongoDB, at its first
 * start); the cluster tier starts its Redis with the same rules. A unit test keeps the files in step.
 */
import { OPS_USER, SERVICE_USERS, type ServiceUser } from "./nats-auth";

/** The services that keep documents (a store of their own in MongoDB): all but the gateway. */
export const MONGO_USERS = SERVICE_USERS.filter((s) => s !== "gateway");

/**
 * The Redis keys a service touches: the cacher's entries of its own actions (`<ns>-cache-<service>.…`,
 * app/broker-options.ts; a service caches and cleans only its own actions), the readiness check's
 * key, and for the gateway the rate-limit counters (`<ns>-ratelimit:…`, services/gateway/rate-limit.ts).
 */
export function redisKeysOf(user: ServiceUser | typeof OPS_USER, namespace: string): string[] {
  const ns = namespace || "rounds";
  if (user === OPS_USER) return [`${ns}-*`];
  return [
    `${ns}-cache-${user}.*`,
    // The readiness check writes it (shared/runtime/readiness.ts), in every process.
    `${ns}-cache-health:ready`,
    ...(user === "gateway" ? [`${ns}-ratelimit:*`] : []),
  ];
}

/**
 * A user's ACL rules, without its password: its keys, no pub/sub channels, and the commands of the
 * read, write, keyspace, transaction and connection categories except the dangerous ones (KEYS,
 * FLUSHALL, CONFIG, DEBUG, MONITOR…), plus INFO for ioredis's ready check.
 */
export function redisRulesOf(user: ServiceUser | typeof OPS_USER, namespace: string): string {
  return [
    "resetkeys",
    ...redisKeysOf(user, namespace).map((k) => `~${k}`),
    "resetchannels",
    "-@all",
    "+@read",
    "+@write",
    "+@keyspace",
    "+@transaction",
    "+@connection",
    "-@dangerous",
    "+info",
  ].join(" ");
}

export const REDIS_USERS = [...SERVICE_USERS, OPS_USER] as const;

/** The environment variable a Redis user's password comes from. */
export const redisPasswordEnvOf = (user: string): string => `REDIS_${user.toUpperCase()}_PASSWORD`;
/** The environment variable a MongoDB user's password comes from. */
export const mongoPasswordEnvOf = (user: string): string => `MONGO_${user.toUpperCase()}_PASSWORD`;

/** deploy/redis/start.sh: the default user off, one user per service, passwords from the environment. */
export function renderRedisStart(namespace: string): string {
  const lines = REDIS_USERS.map(
    (u) => `  echo "user ${u} on >$${redisPasswordEnvOf(u)} ${redisRulesOf(u, namespace)}"`,
  );
  return [
    "#!/bin/sh",
    "# Starts Redis with one ACL user per service (and ops), each limited to its own keys; the default",
    "# user is off, so a client without a user and password is refused. Passwords come from the",
    `# environment (${redisPasswordEnvOf("<user>")}). Generated from shared/ops/store-users.ts by`,
    "# `npm run -s deploy:config`: change that module, not this file.",
    "set -eu",
    "umask 077",
    "acl=/tmp/users.acl",
    "{",
    '  echo "user default off"',
    ...lines,
    '} > "$acl"',
    'exec redis-server --aclfile "$acl" "$@"',
    "",
  ].join("\n");
}

/** deploy/mongo/init-users.js: one user per service with readWrite on the platform's database. */
export function renderMongoInit(database: string): string {
  const users = MONGO_USERS.map(
    (u) =>
      `  { user: ${JSON.stringify(u)}, pwd: process.env.${mongoPasswordEnvOf(u)}, roles: [{ role: "readWrite", db: ${JSON.stringify(database)} }] },`,
  );
  return [
    "// Runs once, when MongoDB starts on an empty data folder (/docker-entrypoint-initdb.d): one user per",
    "// service that keeps documents, with readWrite on the platform's database and nothing else. Passwords",
    `// come from the environment (${mongoPasswordEnvOf("<user>")}). Generated from shared/ops/store-users.ts`,
    "// by `npm run -s deploy:config`: change that module, not this file.",
    `const platform = db.getSiblingDB(${JSON.stringify(database)});`,
    "for (const u of [",
    ...users,
    "]) {",
    "  if (!u.pwd) throw new Error(`no password for the MongoDB user ${u.user}`);",
    "  platform.createUser(u);",
    "}",
    "",
  ].join("\n");
}
