/**
 * A local stand-in for FCM's HTTP v1 API (firebase-admin has no messaging emulator), over HTTPS with a
 * throw-away certificate. The token decides the answer:
 *   ok-*        200
 *   unreg-*     404 UNREGISTERED                 (firebase-admin: registration-token-not-registered)
 *   invalid-*   400 INVALID_ARGUMENT, "not a valid FCM registration token"
 *   badmsg-*    400 INVALID_ARGUMENT about the message, not the token
 *   busy-*      503 with Retry-After: 1 the first time, then 200
 *   rate-*      429 QUOTA_EXCEEDED the first time, then 200
 *   down-*      503 always, no Retry-After (firebase-admin backs off 0, 1, 2, 4 s)
 * It counts every request per token, so tests can see retries and prove nothing was sent twice, and keeps
 * the raw text of the last data payload each token was sent (`data`), to see every name arrive as sent.
 */
import https from "node:https";
import type { AddressInfo } from "node:net";
import selfsigned from "selfsigned";

export interface FakeFcm {
  url: string;
  hits: Map<string, number>;
  /** Tokens that received a 200, in order. */
  delivered: string[];
  /** The last message's `data` per token, as the JSON text firebase-admin sent (absent: no data). */
  data: Map<string, string>;
  /** Makes every request wait this long first (to stop a job mid-way). */
  delayMs: number;
  close(): Promise<void>;
}

const fcmError = (status: number, grpc: string, message: string, errorCode?: string) => ({
  status,
  body: {
    error: {
      code: status,
      message,
      status: grpc,
      details: errorCode
        ? [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode }]
        : [],
    },
  },
});

export async function startFakeFcm(): Promise<FakeFcm> {
  const pems = await selfsigned.generate([{ name: "commonName", value: "fcm.googleapis.com" }]);
  const hits = new Map<string, number>();
  const delivered: string[] = [];
  const data = new Map<string, string>();
  const fake: FakeFcm = { url: "", hits, delivered, data, delayMs: 0, close: async () => undefined };
  const server = https.createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", async () => {
      if (fake.delayMs > 0) await new Promise((r) => setTimeout(r, fake.delayMs));
      const message = JSON.parse(raw).message as { token?: string; data?: unknown } | undefined;
      const token: string = message?.token ?? "";
      // JSON.parse keeps a `__proto__` entry as an own entry, and JSON.stringify writes it back.
      if (message?.data !== undefined) data.set(token, JSON.stringify(message.data));
      const n = (hits.get(token) ?? 0) + 1;
      hits.set(token, n);
      let answer: { status: number; body: unknown; headers?: Record<string, string> } = {
        status: 200,
        body: { name: `projects/fake/messages/${n}` },
      };
      if (token.startsWith("unreg-"))
        answer = fcmError(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED");
      else if (token.startsWith("invalid-"))
        answer = fcmError(
          400,
          "INVALID_ARGUMENT",
          "The registration token is not a valid FCM registration token",
          "INVALID_ARGUMENT",
        );
      else if (token.startsWith("badmsg-"))
        answer = fcmError(
          400,
          "INVALID_ARGUMENT",
          "Invalid value at 'message.data[0].value'",
          "INVALID_ARGUMENT",
        );
      else if (token.startsWith("busy-") && n === 1)
        answer = {
          ...fcmError(503, "UNAVAILABLE", "The service is currently unavailable."),
          headers: { "Retry-After": "1" },
        };
      else if (token.startsWith("rate-") && n === 1)
        answer = fcmError(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "QUOTA_EXCEEDED");
      else if (token.startsWith("down-"))
        answer = fcmError(503, "UNAVAILABLE", "The service is currently unavailable.");
      if (answer.status === 200) delivered.push(token);
      res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  fake.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}
