/**
 * Answers and bodies (docs/decisions/0037), as an auditor checks them against the running system, in
 * both topologies: what every answer says of its type and of caching, how large a body each route
 * reads, and that fields a route does not know never reach a service.
 */
import net from "node:net";
import type { Context, ServiceSchema } from "moleculer";
import { ALL_SERVICES } from "../support/cluster";
import { api, startSystem, type System } from "../support/system";
import { eventFields, eventForm, pngBytes } from "../support/upload";

/** What the stand-in notifier was called with, and a title that makes it fail (a 500 to look at). */
const multicasts: Record<string, unknown>[] = [];
const FAIL_TITLE = "fail on purpose";
const probeNotifier: ServiceSchema = {
  name: "notifier",
  actions: {
    sendMulticast(ctx: Context<Record<string, unknown>, { $statusCode?: number }>) {
      multicasts.push(ctx.params);
      if (ctx.params.title === FAIL_TITLE) throw new Error("a fault of the service");
      ctx.meta.$statusCode = 202;
      return { id: "job_probe", status: "queued", recipients: 1 };
    },
  },
};

let sys: System;
let port: number;
beforeAll(async () => {
  sys = await startSystem({
    services: ["gateway", ...ALL_SERVICES.filter((s) => s !== "notifier")],
    extra: [probeNotifier],
  });
  port = Number(new URL(sys.baseUrl).port);
}, 120_000);
afterAll(() => sys?.stop());

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  /** Request bytes written before the answer's head arrived. */
  sentBeforeAnswer: number;
}

/**
 * Writes `head`, then the `body` chunks one per 20 ms until an answer arrives (or all are sent), and
 * resolves with the answer's status and headers.
 */
function rawExchange(head: string, body: Buffer[] = []): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on("error", () => undefined);
    socket.on("data", (data) => {
      received += data.toString("latin1");
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) return;
      clearTimeout(timer);
      const [statusLine, ...lines] = received.slice(0, end).split("\r\n");
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      socket.destroy();
      resolve({ status: Number(statusLine.split(" ")[1]), headers, sentBeforeAnswer: sent });
    });
    socket.once("connect", () => {
      socket.write(head);
      let i = 0;
      const next = () => {
        if (i >= body.length || socket.destroyed) return;
        socket.write(body[i]);
        sent += body[i++].length;
        timer = setTimeout(next, 20);
      };
      next();
    });
    setTimeout(() => reject(new Error(`no answer to ${head.split("\r\n")[0]}`)), 20_000).unref();
  });
}

const joinPath = () => `/rounds/${sys.manifest.rounds.open}/join`;
const bearer = () => `Bearer ${sys.manifest.users.carol.access_token}`;

describe("the token set and answers for one caller (RFC 6749 §5.1)", () => {
  it("when the token set is answered, then Cache-Control: no-store and Pragma: no-cache", async () => {
    const { bob } = sys.manifest.users;
    const res = await api(sys, "POST", "/auth/refresh-token", {
      token: bob.access_token,
      json: { refresh_token: bob.refresh_token },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("pragma")).toBe("no-cache");
  });

  it("when a refresh is refused, then its 401 is not stored either", async () => {
    const res = await api(sys, "POST", "/auth/refresh-token", { json: { refresh_token: "x" } });
    expect(res.status).toBe(401);
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("when friends, payments, a private round, a join or an API key's settings are answered, then Cache-Control: no-store, kept answers and errors alike", async () => {
    const { alice } = sys.manifest.users;
    const answers = [
      await api(sys, "GET", "/users/friends", { token: alice.access_token }),
      // Twice: the second is the gateway's kept answer (services/gateway/response-cache).
      await api(sys, "GET", "/users/friends", { token: alice.access_token }),
      await api(sys, "GET", "/users/payments", { token: alice.access_token }),
      await api(sys, "GET", `/rounds/${sys.manifest.rounds.private}`, { token: alice.access_token }),
      await api(sys, "GET", `/rounds/${sys.manifest.rounds.private}`, { token: alice.access_token }),
      await api(sys, "POST", `/rounds/${sys.manifest.rounds.free}/join`, {
        token: sys.manifest.users.carol.access_token,
        json: null,
      }),
      await api(sys, "GET", "/app-settings?version=1.0.0&platform=ios", {
        apiKey: sys.manifest.api_keys.app,
      }),
      await api(sys, "GET", "/users/friends"),
      await api(sys, "GET", "/rounds/nope", { token: alice.access_token }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 401, 404]);
    for (const res of answers) expect(res.headers.get("cache-control")).toBe("no-store");
  });
});

describe("X-Content-Type-Options on every answer", () => {
  it("when any answer is written (media included), then X-Content-Type-Options: nosniff", async () => {
    const token = sys.manifest.users.alice.access_token;
    const upload = await fetch(`${sys.baseUrl}/stores/${sys.manifest.stores.alice_store}/events`, {
      method: "POST",
      body: eventForm(eventFields(), pngBytes(5000)),
      headers: { authorization: `Bearer ${token}` },
    });
    expect(upload.status).toBe(200);
    const picture = ((await upload.json()) as { cover_picture_url: string }).cover_picture_url;
    const get = (path: string, init: RequestInit = {}) => fetch(`${sys.baseUrl}${path}`, init);
    const answers: [string, Response][] = [
      ["json", await get("/users/friends", { headers: { authorization: `Bearer ${token}` } })],
      ["upload", upload],
      ["401", await get("/users/friends")],
      ["404", await get("/nowhere")],
      ["405", await get("/users/friends", { method: "DELETE" })],
      [
        "413",
        await get(joinPath(), {
          method: "POST",
          headers: { authorization: bearer() },
          body: "x".repeat(20_000),
        }),
      ],
      ["422", await get(joinPath(), { method: "POST", headers: { authorization: bearer() }, body: "{" })],
      [
        "500",
        await get("/notifications/send-multicast", {
          method: "POST",
          headers: { "x-api-key": sys.manifest.api_keys.notifications, "content-type": "application/json" },
          body: JSON.stringify({ title: FAIL_TITLE, user_ids: ["u1"] }),
        }),
      ],
      ["health", await get("/health")],
      ["ready", await get("/health/ready")],
      ["openapi", await get("/openapi.json")],
      ["docs", await get("/docs")],
      ["redirect", await get("/", { redirect: "manual" })],
      ["media", await get(picture)],
      ["media 404", await get("/media/00000000-0000-0000-0000-000000000000.png")],
    ];
    const statuses = Object.fromEntries(answers.map(([kind, res]) => [kind, res.status]));
    expect(statuses).toEqual(
      expect.objectContaining({ json: 200, 401: 401, 404: 404, 405: 405, 413: 413, 422: 422, 500: 500 }),
    );
    expect(statuses.media).toBe(200);
    for (const [kind, res] of answers) {
      expect([kind, res.headers.get("x-content-type-options")]).toEqual([kind, "nosniff"]);
    }
    // Media keep their long public cache.
    const media = answers.find(([kind]) => kind === "media")?.[1];
    expect(media?.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
  });

  it("when a body stalls (408) or Node's parser refuses a request (400), then those answers say nosniff too", async () => {
    const stalled = await rawExchange(
      `POST ${joinPath()} HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer()}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    );
    expect(stalled.status).toBe(408);
    expect(stalled.headers["x-content-type-options"]).toBe("nosniff");
    const malformed = await rawExchange("GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n");
    expect(malformed.status).toBe(400);
    expect(malformed.headers["x-content-type-options"]).toBe("nosniff");
    // The stalled body is cut at the gateway's bound, HTTP_BODY_IDLE_TIMEOUT_MS (10 s).
  }, 40_000);
});

describe("body limits per route", () => {
  const fourMb = () => JSON.stringify({ attributes: Array.from({ length: 2_000_000 }, (_, i) => i % 10) });

  it("when a 4 MB JSON body is sent to join, then 413 before it is parsed", async () => {
    const body = fourMb();
    expect(body.length).toBeGreaterThan(4_000_000);
    // Content-Length given: answered at once, before a byte of the body is sent.
    const declared = await rawExchange(
      `POST ${joinPath()} HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer()}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n`,
    );
    expect(declared.status).toBe(413);
    expect(declared.sentBeforeAnswer).toBe(0);
    // Chunked: cut once the count passes the bound, long before the 4 MB are in.
    const chunk = Buffer.from(`2000\r\n${" ".repeat(0x2000)}\r\n`);
    const chunked = await rawExchange(
      `POST ${joinPath()} HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer()}\r\n` +
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      Array.from({ length: 512 }, () => chunk),
    );
    expect(chunked.status).toBe(413);
    expect(chunked.sentBeforeAnswer).toBeLessThan(256 * 1024);
    // And as a client sends it whole, the answer in the spec's shape.
    const res = await api(sys, "POST", joinPath(), {
      token: sys.manifest.users.carol.access_token,
      raw: body,
    });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: "Request body too large (limit 16384 bytes)" });
  });

  it("when a refresh body is over its bound, then 413, even without credentials (nothing asked of auth)", async () => {
    const res = await api(sys, "POST", "/auth/refresh-token", {
      raw: JSON.stringify({ refresh_token: "r".repeat(20_000) }),
    });
    expect(res.status).toBe(413);
  });

  it("when a multicast body is larger than a join's bound, then it is still read (its own limit)", async () => {
    const userIds = Array.from({ length: 2000 }, (_, i) => `user-${i}`);
    const res = await api(sys, "POST", "/notifications/send-multicast", {
      apiKey: sys.manifest.api_keys.notifications,
      json: { title: "Big", user_ids: userIds },
    });
    expect(JSON.stringify(userIds).length).toBeGreaterThan(16 * 1024);
    expect(res.status).toBe(202);
  });
});

describe("unknown body fields", () => {
  it("when unknown body fields are sent, then they never reach the service, and the request succeeds", async () => {
    multicasts.length = 0;
    const res = await api(sys, "POST", "/notifications/send-multicast", {
      apiKey: sys.manifest.api_keys.notifications,
      headers: { "idempotency-key": "from-the-header" },
      json: {
        title: "Hello",
        user_ids: ["u1"],
        is_admin: true,
        // Parameters the request gives elsewhere, or the gateway alone sets, are not taken from a body.
        idempotency_key: "from-the-body",
        staged: { set_id: `job_${"0".repeat(24)}.${"0".repeat(16)}`, pages: 1 },
      },
    });
    expect(res.status).toBe(202);
    expect(multicasts).toHaveLength(1);
    expect(multicasts[0]).toEqual({ title: "Hello", user_ids: ["u1"], idempotency_key: "from-the-header" });
  });
});
