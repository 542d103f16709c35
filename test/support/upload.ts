/** Test helpers for the store-event upload: image bytes, form fields, and a raw HTTP client for early answers. */
import http from "node:http";

export const pngBytes = (size = 4096): Buffer =>
  Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    Buffer.alloc(Math.max(0, size - 8), 0x42),
  ]);
export const jpegBytes = (size = 4096): Buffer =>
  Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(size - 4, 1)]);

export function eventFields(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const base: Record<string, string | undefined> = {
    name: "Jazz evening",
    price: "1500",
    event_type: "offline",
    is_active: "true",
    discount_percent: "15",
    duration: "90",
    participants_limit: "30",
    short_desc: "Live quartet",
    detail_desc: "Two sets, one break.",
    start_time: new Date(Date.now() + 7 * 86400_000).toISOString(),
    city: "Moscow",
    address: "Tverskaya St, 1",
    postal_code: "125009",
    country: "Russia",
    latitude: "55.7601",
    longitude: "37.6143",
    ...overrides,
  };
  return Object.fromEntries(Object.entries(base).filter(([, v]) => v !== undefined)) as Record<
    string,
    string
  >;
}

export function eventForm(
  fields: Record<string, string>,
  picture: Buffer | null,
  type = "image/png",
): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  if (picture) fd.append("main_picture", new Blob([picture], { type }), "picture.bin");
  return fd;
}

/**
 * Streams a multipart body of `total` bytes of picture through node:http and resolves with the first
 * answer, even when the server answers (and closes) before the body is sent.
 */
export function postRawUpload(
  url: string,
  token: string,
  pictureBytes: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; sent: number }> {
  const boundary = "----rounds-test-boundary";
  const head = Buffer.from(
    Object.entries(eventFields())
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="main_picture"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    let sent = 0;
    const req = http.request(url, {
      method: "POST",
      headers: {
        ...headers,
        authorization: `Bearer ${token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(head.length + pictureBytes + tail.length),
      },
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, sent }));
    });
    req.on("error", (err) => (sent > 0 ? undefined : reject(err)));
    req.write(head);
    const chunk = pngBytes(64 * 1024);
    const writeMore = () => {
      while (sent < pictureBytes) {
        const n = Math.min(chunk.length, pictureBytes - sent);
        sent += n;
        if (!req.write(chunk.subarray(0, n))) return void req.once("drain", writeMore);
      }
      req.end(tail);
    };
    writeMore();
  });
}

export interface HeldUpload {
  /** Sends the rest of the body. */
  finish(): void;
  response: Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>;
}

/**
 * Starts an upload of `fields` and `picture` and sends all of it but the picture's second half: the
 * request stays in flight (the gateway waiting for its body) until `finish` is called.
 */
export function heldUpload(
  url: string,
  token: string,
  fields: Record<string, string>,
  picture: Buffer,
  headers: Record<string, string> = {},
): HeldUpload {
  const boundary = "----rounds-held-boundary";
  const head = Buffer.from(
    Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="main_picture"; filename="p.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const half = Math.floor(picture.length / 2);
  const req = http.request(url, {
    method: "POST",
    headers: {
      ...headers,
      authorization: `Bearer ${token}`,
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": String(head.length + picture.length + tail.length),
    },
  });
  const response = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
    (resolve, reject) => {
      req.on("response", (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on("error", reject);
    },
  );
  req.write(Buffer.concat([head, picture.subarray(0, half)]));
  return { finish: () => req.end(Buffer.concat([picture.subarray(half), tail])), response };
}
