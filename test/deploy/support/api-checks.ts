/**
 * At least one request per operation of the API, through the deployed gateway, each with the answer the
 * e2e suite expects for it, and every answer checked against the OpenAPI document
 * (test/support/contract.ts). The operations are the document's as the gateway serves it: one it serves
 * that has no request here fails the check, so a new route cannot go unchecked.
 */
import type { DemoManifest } from "../../../shared/ops/seed";
import { checkContract } from "../../support/contract";
import { eventFields, eventForm, pngBytes } from "../../support/upload";

interface Answer {
  status: number;
  body: any;
  bytes: Buffer;
  headers: Headers;
}

async function call(base: string, method: string, url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${base}${url}`, { method, ...init, signal: AbortSignal.timeout(30_000) });
  const bytes = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get("content-type");
  const body = type?.includes("application/json") ? JSON.parse(bytes.toString("utf8")) : null;
  checkContract(method, url, res.status, type, body);
  return { status: res.status, body, bytes, headers: res.headers };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = (token: string, body: unknown): RequestInit => ({
  headers: { ...bearer(token), "content-type": "application/json" },
  body: JSON.stringify(body),
});

type Check = (base: string, m: DemoManifest) => Promise<void>;

function expectStatus(what: string, answer: Answer, status: number): void {
  if (answer.status !== status) {
    throw new Error(
      `${what}: expected ${status}, got ${answer.status} ${answer.bytes.toString("utf8").slice(0, 300)}`,
    );
  }
}

/** The checks, by operation ("METHOD /template" as in the OpenAPI document). */
export const CHECKS: Record<string, Check> = {
  "GET /health": async (base) => {
    expectStatus("health", await call(base, "GET", "/health"), 200);
  },
  "GET /health/ready": async (base) => {
    expectStatus("ready", await call(base, "GET", "/health/ready"), 200);
  },
  "GET /.well-known/jwks.json": async (base) => {
    const jwks = await call(base, "GET", "/.well-known/jwks.json");
    expectStatus("the key set", jwks, 200);
    const keys = (jwks.body?.keys ?? []) as Record<string, unknown>[];
    if (!keys.some((k) => k.kty === "EC" && k.crv === "P-256" && typeof k.kid === "string")) {
      throw new Error(
        `the key set holds no P-256 key with a kid: ${jwks.bytes.toString("utf8").slice(0, 300)}`,
      );
    }
    if (keys.some((k) => "d" in k)) throw new Error("the key set publishes a private key");
  },
  "GET /rounds/{round_id}": async (base, m) => {
    const open = await call(base, "GET", `/rounds/${m.rounds.open}`, {
      headers: bearer(m.users.bob.access_token),
    });
    expectStatus("a round", open, 200);
    expectStatus("no token", await call(base, "GET", `/rounds/${m.rounds.open}`), 401);
    const unknown = await call(base, "GET", "/rounds/00000000-0000-4000-8000-000000000000", {
      headers: bearer(m.users.bob.access_token),
    });
    expectStatus("an unknown round", unknown, 404);
    const hidden = await call(base, "GET", `/rounds/${m.rounds.private}`, {
      headers: bearer(m.users.carol.access_token),
    });
    expectStatus("a private round to an outsider", hidden, 404);
  },
  "POST /rounds/{round_id}/join": async (base, m) => {
    const join = (round: string, token: string) =>
      call(base, "POST", `/rounds/${round}/join`, json(token, { attributes: [] }));
    // Crowd users of their own here (the fault cases use others): none is a member of these rounds.
    expectStatus("a join", await join(m.rounds.small, m.users.crowd[24].access_token), 200);
    expectStatus("a full round", await join(m.rounds.full, m.users.crowd[25].access_token), 409);
    expectStatus("an ended round", await join(m.rounds.ended, m.users.crowd[25].access_token), 409);
    const bad = await call(base, "POST", `/rounds/${m.rounds.small}/join`, {
      headers: { ...bearer(m.users.crowd[26].access_token), "content-type": "application/json" },
      body: "{not json",
    });
    expectStatus("a malformed body", bad, 422);
  },
  "POST /auth/refresh-token": async (base, m) => {
    const u = m.users.crowd[27];
    const ok = await call(
      base,
      "POST",
      "/auth/refresh-token",
      json(u.access_token, { refresh_token: u.refresh_token }),
    );
    expectStatus("a refresh", ok, 200);
    const forged = await call(
      base,
      "POST",
      "/auth/refresh-token",
      json(u.access_token, { refresh_token: "forged" }),
    );
    expectStatus("a forged refresh token", forged, 401);
  },
  "GET /users/friends": async (base, m) => {
    expectStatus(
      "friends",
      await call(base, "GET", "/users/friends", { headers: bearer(m.users.alice.access_token) }),
      200,
    );
  },
  "GET /users/payments": async (base, m) => {
    expectStatus(
      "payments",
      await call(base, "GET", "/users/payments", { headers: bearer(m.users.alice.access_token) }),
      200,
    );
  },
  "GET /app-settings": async (base, m) => {
    const ok = await call(base, "GET", "/app-settings?version=2.4.0&platform=ios", {
      headers: { "x-api-key": m.api_keys.app },
    });
    expectStatus("app settings", ok, 200);
    expectStatus("no key", await call(base, "GET", "/app-settings?version=2.4.0&platform=ios"), 401);
  },
  "POST /notifications/send-multicast": async (base, m) => {
    const sent = await call(base, "POST", "/notifications/send-multicast", {
      headers: { "x-api-key": m.api_keys.notifications, "content-type": "application/json" },
      body: JSON.stringify({ title: "Hello", user_ids: [m.users.bob.id] }),
    });
    expectStatus("a multicast", sent, 202);
    const job = await call(base, "GET", `/notifications/${sent.body.id}`, {
      headers: { "x-api-key": m.api_keys.notifications },
    });
    expectStatus("its job", job, 200);
  },
  "GET /notifications/{job_id}": async (base, m) => {
    const unknown = await call(base, "GET", "/notifications/00000000-0000-4000-8000-000000000000", {
      headers: { "x-api-key": m.api_keys.notifications },
    });
    expectStatus("an unknown job", unknown, 404);
  },
  "POST /stores/{store_id}/events": async (base, m) => {
    const post = (token: string, picture: Buffer | null) =>
      call(base, "POST", `/stores/${m.stores.alice_store}/events`, {
        headers: bearer(token),
        body: eventForm(eventFields(), picture),
      });
    const created = await post(m.users.alice.access_token, pngBytes(20_000));
    expectStatus("a store event", created, 200);
    expectStatus("not a manager", await post(m.users.bob.access_token, pngBytes(1000)), 403);
    expectStatus("no picture", await post(m.users.alice.access_token, null), 422);
  },
  "GET /media/{name}": async (base, m) => {
    const bytes = pngBytes(5000);
    const created = await call(base, "POST", `/stores/${m.stores.alice_store}/events`, {
      headers: bearer(m.users.alice.access_token),
      body: eventForm(eventFields(), bytes),
    });
    const name = String(created.body.cover_picture_url).split("/").pop();
    const media = await call(base, "GET", `/media/${name}`);
    expectStatus("a picture", media, 200);
    if (!media.bytes.equals(bytes)) throw new Error("the picture served is not the one uploaded");
    expectStatus(
      "an unknown picture",
      await call(base, "GET", "/media/00000000-0000-4000-8000-000000000000.png"),
      404,
    );
  },
};

/** Runs every check; fails on the first operation served without one, or any answer not as expected. */
export async function apiChecks(base: string, m: DemoManifest): Promise<void> {
  const document = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, object> };
  const served = Object.entries(document.paths).flatMap(([p, ops]) =>
    Object.keys(ops).map((method) => `${method.toUpperCase()} ${p}`),
  );
  const unchecked = served.filter((op) => !CHECKS[op]);
  if (unchecked.length > 0) throw new Error(`No deploy-tier check for ${unchecked.join(", ")}`);
  const failures: string[] = [];
  for (const op of served) {
    await CHECKS[op](base, m).catch((err: Error) => failures.push(`${op}: ${err.message}`));
  }
  if (failures.length > 0) throw new Error(failures.join("\n"));
}
