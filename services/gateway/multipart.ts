/**
 * Reads the multipart body of POST /stores/{store_id}/events with busboy, as a stream: text fields are
 * collected (small, limited), the one file `main_picture` is handed to `stage` as it arrives and never
 * held whole in memory. Limits cut the request off as soon as they are passed.
 */
import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import busboy from "busboy";
import type { StagedPicture } from "../../shared/contracts/stores";
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from "../../shared/errors";
import { watchBody, type BodyBounds } from "./body-watch";

export interface MultipartLimits {
  fileBytes: number;
  fields: number;
  fieldBytes: number;
}

export interface MultipartForm {
  fields: Record<string, string>;
  picture: StagedPicture | null;
}

export const FILE_FIELD = "main_picture";

export function readEventMultipart(
  req: IncomingMessage,
  limits: MultipartLimits,
  stage: (file: Readable) => Promise<StagedPicture>,
  discard: (stagedId: string) => Promise<unknown>,
  bounds?: BodyBounds,
): Promise<MultipartForm> {
  if (!/^multipart\/form-data/i.test(req.headers["content-type"] ?? "")) {
    return Promise.reject(new UnsupportedMediaTypeError("Content-Type must be multipart/form-data"));
  }
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: req.headers,
      // busboy refuses a file or value that reaches its limit; ours refuse only what passes it.
      limits: {
        fileSize: limits.fileBytes + 1,
        files: 1,
        fields: limits.fields,
        fieldSize: limits.fieldBytes + 1,
        parts: limits.fields + 1,
      },
    });
  } catch (err) {
    return Promise.reject(new BadRequestError(`Malformed multipart body: ${(err as Error).message}`));
  }

  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let staging: Promise<StagedPicture> | null = null;
    let activeFile: Readable | null = null;
    let failed = false;

    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      req.unpipe(bb);
      // Whatever was staged already must not outlive the failed request.
      staging?.then((p) => discard(p.staged_id)).catch(() => undefined);
      reject(err);
    };

    bb.on("field", (name, value, info) => {
      if (info.valueTruncated)
        fail(new PayloadTooLargeError(`Form field '${name}' is longer than ${limits.fieldBytes} bytes`));
      else fields[name] = value;
    });

    bb.on("file", (name, file) => {
      if (name !== FILE_FIELD) {
        fail(new BadRequestError(`Unexpected file field '${name}': only ${FILE_FIELD} is accepted`));
        file.resume();
        return;
      }
      // A body that ends mid-file (no closing boundary) errors the file stream at once, possibly before
      // the upload has started reading it: without a listener of its own that error ends the process.
      file.on("error", (err: Error) => fail(new BadRequestError(`Malformed multipart body: ${err.message}`)));
      file.on("limit", () => {
        const err = new PayloadTooLargeError(`${FILE_FIELD} is larger than ${limits.fileBytes} bytes`);
        file.destroy(err);
        fail(err);
      });
      activeFile = file;
      staging = stage(file);
      staging.catch((err: Error) => fail(err));
    });

    bb.on("filesLimit", () => fail(new BadRequestError(`Too many files: send one ${FILE_FIELD}`)));
    bb.on("fieldsLimit", () => fail(new BadRequestError(`Too many form fields (at most ${limits.fields})`)));
    bb.on("partsLimit", () =>
      fail(new BadRequestError(`Too many form parts (at most ${limits.fields + 1})`)),
    );
    bb.on("error", (err: Error) => fail(new BadRequestError(`Malformed multipart body: ${err.message}`)));
    bb.on("close", () => {
      if (failed) return;
      (staging ?? Promise.resolve(null)).then(
        (picture) => (failed ? undefined : resolve({ fields, picture })),
        (err: Error) => fail(err),
      );
    });
    // The picture's stream would otherwise wait forever for bytes that will not come; destroyed, it
    // makes the upload discard what it staged.
    const cutOff = (err: Error) => {
      if (activeFile && !activeFile.destroyed) activeFile.destroy(err);
      fail(err);
    };
    req.on("aborted", () => cutOff(new BadRequestError("Request aborted")));
    req.pipe(bb);
    if (bounds) watchBody(req, bounds, cutOff);
  });
}
