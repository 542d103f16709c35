/**
 * Every operation of the API document through the typed client (clients/typescript): a change to the
 * document that breaks a client's build or its calls fails here, and so does a document that no longer
 * matches what the gateway answers.
 */
import fs from "node:fs";
import path from "node:path";
import { createRoundsClient } from "../../clients/typescript";
import { pngBytes, eventFields } from "../support/upload";
import { startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const asUser = (token: string) => createRoundsClient({ baseUrl: sys.baseUrl, token });
const withKey = (apiKey: string) => createRoundsClient({ baseUrl: sys.baseUrl, apiKey });

describe("the typed client", () => {
  it("when the gateway serves its API document, then it is the committed openapi.json", async () => {
    const served = await (await fetch(`${sys.baseUrl}/openapi.json`)).json();
    const committed = JSON.parse(fs.readFileSync(path.join(__dirname, "../../openapi.json"), "utf8"));
    expect(served).toEqual(committed);
  });

  it("when a user reads and joins a round, then both answers are typed rounds", async () => {
    const { alice } = sys.manifest.users;
    const api = asUser(alice.access_token);
    const round_id = sys.manifest.rounds.free;
    const read = await api.GET("/rounds/{round_id}", { params: { path: { round_id } } });
    expect(read.response.status).toBe(200);
    expect(read.data?.id).toBe(round_id);
    const joined = await api.POST("/rounds/{round_id}/join", { params: { path: { round_id } }, body: null });
    expect(joined.response.status).toBe(200);
    expect(joined.data?.members_count).toBe((read.data?.members_count ?? 0) + 1);
  });

  it("when a round does not exist, then the error is the spec's typed body", async () => {
    const api = asUser(sys.manifest.users.alice.access_token);
    const { error, response } = await api.GET("/rounds/{round_id}", {
      params: { path: { round_id: "00000000-0000-4000-8000-000000000000" } },
    });
    expect(response.status).toBe(404);
    expect(typeof error?.detail).toBe("string");
  });

  it("when a user reads friends and payments and refreshes, then each answer has its typed shape", async () => {
    const { bob } = sys.manifest.users;
    const api = asUser(bob.access_token);
    const friends = await api.GET("/users/friends");
    expect(friends.data?.map((f) => f.id)).toEqual([sys.manifest.users.alice.id]);
    const payments = await api.GET("/users/payments");
    expect(Array.isArray(payments.data)).toBe(true);
    const refreshed = await api.POST("/auth/refresh-token", { body: { refresh_token: bob.refresh_token } });
    expect(refreshed.response.status).toBe(200);
    expect(typeof refreshed.data?.access_token).toBe("string");
    expect(typeof refreshed.data?.refresh_token).toBe("string");
  });

  it("when a manager posts a store event, then its picture is served at the URL it reports", async () => {
    const api = asUser(sys.manifest.users.alice.access_token);
    const fields = eventFields();
    const created = await api.POST("/stores/{store_id}/events", {
      params: { path: { store_id: String(sys.manifest.stores.alice_store) } },
      // The form's fields as the document types them; sent as multipart with the picture.
      body: fields as never,
      bodySerializer: () => {
        const form = new FormData();
        for (const [name, value] of Object.entries(fields)) form.append(name, value);
        form.append("main_picture", new Blob([pngBytes()], { type: "image/png" }), "cover.png");
        return form;
      },
    });
    expect(created.response.status).toBe(200);
    const url = created.data?.cover_picture_url ?? "";
    const name = url.replace(/^\/media\//, "");
    const picture = await createRoundsClient({ baseUrl: sys.baseUrl }).GET("/media/{name}", {
      params: { path: { name } },
      parseAs: "arrayBuffer",
    });
    expect(picture.response.status).toBe(200);
    expect(Buffer.from(picture.data as ArrayBuffer).equals(pngBytes())).toBe(true);
  });

  it("when an app asks for its settings with its key, then the answer is typed", async () => {
    const api = withKey(sys.manifest.api_keys.app);
    const settings = await api.GET("/app-settings", {
      params: { query: { version: "2.2.0", platform: "ios" } },
    });
    expect(settings.response.status).toBe(200);
    expect(settings.data).toBeDefined();
  });

  it("when a multicast is sent, then its job can be read back by the same key", async () => {
    const api = withKey(sys.manifest.api_keys.notifications);
    const sent = await api.POST("/notifications/send-multicast", {
      body: { title: "Hello", user_ids: [sys.manifest.users.bob.id] },
      params: { header: { "Idempotency-Key": "typed-client-1" } },
    });
    expect(sent.response.status).toBe(202);
    const job_id = sent.data?.id ?? "";
    const job = await api.GET("/notifications/{job_id}", { params: { path: { job_id } } });
    expect(job.response.status).toBe(200);
    expect(job.data?.id).toBe(job_id);
  });

  it("when an operator probes the gateway and reads its keys, then the answers are typed", async () => {
    const api = createRoundsClient({ baseUrl: sys.baseUrl });
    expect((await api.GET("/health")).data?.status).toBe("ok");
    expect((await api.GET("/health/ready")).response.status).toBe(200);
    const jwks = await api.GET("/.well-known/jwks.json");
    expect(jwks.data?.keys[0]?.alg).toBe("ES256");
  });
});
