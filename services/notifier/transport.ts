/**
 * Where pushes go. Production: firebase-admin (`sendEachForMulticast`), with credentials from the
 * standard Google variables. Without credentials (embedded default, demos): a log transport that records
 * what would have been sent and reports success. FCM_ENDPOINT sends firebase-admin's requests to another
 * host through its legacy HTTP/1.1 transport and a custom agent: the real firebase-admin code path,
 * pointed elsewhere. An https:// endpoint's certificate is checked as Google's would be; an http:// one
 * (a local fake FCM in tests and benches) is spoken to in plain HTTP, so no setting turns checks off.
 */
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import { applicationDefault, deleteApp, initializeApp, type App } from "firebase-admin/app";
import { getMessaging } from "firebase-admin/messaging";
import type { Config } from "../../shared/config";
import type { PushMessage } from "./message";

export interface TokenResult {
  success: boolean;
  /** firebase-admin's error code, e.g. "messaging/registration-token-not-registered". */
  code?: string;
  message?: string;
}

export interface PushTransport {
  readonly name: string;
  send(message: PushMessage, tokens: string[]): Promise<TokenResult[]>;
  close(): Promise<void>;
}

export class LogTransport implements PushTransport {
  readonly name = "log";
  constructor(private readonly log: (line: string) => void) {}

  async send(message: PushMessage, tokens: string[]): Promise<TokenResult[]> {
    this.log(`push (log transport): "${message.notification.title}" to ${tokens.length} device(s)`);
    return tokens.map(() => ({ success: true }));
  }

  async close(): Promise<void> {}
}

let appCounter = 0;

/**
 * The project named in requests to an FCM_ENDPOINT without Google credentials (a local fake, which reads
 * no project). With credentials, the project is the service account's own `project_id`: a push can only
 * go to the project the credentials belong to, so a setting naming another could only be wrong.
 */
export const STAND_IN_PROJECT_ID = "local-fcm";

export class FirebaseTransport implements PushTransport {
  readonly name = "firebase";
  private readonly app: App;
  private readonly agent: https.Agent | undefined;

  constructor(config: Pick<Config, "googleCredentials" | "fcmEndpoint">) {
    this.agent = config.fcmEndpoint ? agentFor(config.fcmEndpoint) : undefined;
    const credential = config.googleCredentials
      ? applicationDefault()
      : // Against FCM_ENDPOINT without Google credentials: a stand-in token the fake accepts.
        { getAccessToken: async () => ({ access_token: "local-fcm-token", expires_in: 3600 }) };
    const projectId = config.googleCredentials ? undefined : STAND_IN_PROJECT_ID;
    this.app = initializeApp(
      { credential, projectId, httpAgent: this.agent },
      `notifier-${process.pid}-${++appCounter}`,
    );
    if (this.agent) getMessaging(this.app).enableLegacyHttpTransport();
  }

  async send(message: PushMessage, tokens: string[]): Promise<TokenResult[]> {
    const res = await getMessaging(this.app).sendEachForMulticast({ ...message, tokens });
    return res.responses.map((r) =>
      r.success ? { success: true } : { success: false, code: r.error?.code, message: r.error?.message },
    );
  }

  async close(): Promise<void> {
    await deleteApp(this.app);
    this.agent?.destroy();
  }
}

/** Every connection goes to the endpoint, whatever host firebase-admin asks for. */
/**
 * An agent whose connections go to `endpoint` whatever host firebase-admin names: over TLS, checked, for
 * https://; over plain TCP for http:// (the client's HTTP/1.1 runs over either socket alike).
 */
function agentFor(endpoint: string): https.Agent {
  const url = new URL(endpoint);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 64 });
  const connect = (opts: tls.ConnectionOptions): net.Socket =>
    url.protocol === "http:"
      ? net.connect({ host: url.hostname, port: Number(url.port || 80) })
      : tls.connect({
          ...opts,
          host: url.hostname,
          port: Number(url.port || 443),
          servername: url.hostname === "127.0.0.1" ? undefined : url.hostname,
        });
  (agent as unknown as { createConnection: typeof connect }).createConnection = connect;
  return agent;
}

export function transportFor(config: Config, log: (line: string) => void): PushTransport {
  const useFirebase =
    config.pushTransport === "firebase" ||
    (config.pushTransport === "auto" && (config.googleCredentials !== "" || config.fcmEndpoint !== ""));
  return useFirebase ? new FirebaseTransport(config) : new LogTransport(log);
}
