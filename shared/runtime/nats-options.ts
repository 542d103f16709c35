/**
 * How a process connects to NATS, for Moleculer's transporter and for the channels middleware's own
 * JetStream connection alike: the servers of TRANSPORTER, the user and password of NATS_USER and
 * NATS_PASSWORD, and TLS when TRANSPORTER says `tls://` or NATS_TLS_DIR is given.
 *
 * Both libraries would take credentials from a `nats://user:pass@host` address too, but differently
 * (Moleculer passes them on still percent-encoded, the channels adapter drops them), and an address is
 * what gets logged: credentials therefore live only in their own settings (shared/config refuses them
 * in an address), and these options are built without `url`, so neither library parses one.
 */
import fs from "node:fs";
import path from "node:path";
import type { ConnectionOptions } from "nats";
import type { Config } from "../config";

type NatsSettings = Pick<Config, "transporter" | "natsUser" | "natsPassword" | "natsTlsDir">;

/** The files of NATS_TLS_DIR that are there (shared/config checked the folder at start). */
function tlsFiles(dir: string): { caFile?: string; certFile?: string; keyFile?: string } {
  if (dir === "") return {};
  const file = (name: string) => (fs.existsSync(path.join(dir, name)) ? path.join(dir, name) : undefined);
  const caFile = file("ca.crt");
  const certFile = file("tls.crt");
  return {
    ...(caFile ? { caFile } : {}),
    ...(certFile ? { certFile, keyFile: path.join(dir, "tls.key") } : {}),
  };
}

/** The replies this process awaits arrive under `_INBOX.<user>.`, a prefix NATS lets only that user read. */
export const inboxPrefixOf = (user: string): string => `_INBOX.${user}`;

export function natsConnectionOptions(config: NatsSettings): ConnectionOptions {
  const urls = config.transporter
    .split(",")
    .map((u) => u.trim())
    .filter(Boolean);
  const tls = urls.some((u) => /^tls:\/\//i.test(u)) || config.natsTlsDir !== "";
  return {
    // host:port; whether the link is TLS is the `tls` option's to say (nats.js reads no scheme here).
    servers: urls.map((u) => new URL(u).host),
    ...(config.natsUser
      ? { user: config.natsUser, pass: config.natsPassword, inboxPrefix: inboxPrefixOf(config.natsUser) }
      : {}),
    // With `tls` set, nats.js refuses a server that offers no TLS rather than talking in clear.
    ...(tls
      ? {
          tls: tlsFiles(config.natsTlsDir),
        }
      : {}),
  };
}
