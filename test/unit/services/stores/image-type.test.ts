/** Picture types come from the bytes: JPEG, PNG and WebP signatures, nothing else. */
import { extensionOf, sniffImage } from "../../../../services/stores/image-type";

const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]);
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]);
const webp = Buffer.concat([
  Buffer.from("RIFF", "latin1"),
  Buffer.from([0x24, 0x00, 0x00, 0x00]),
  Buffer.from("WEBP", "latin1"),
]);

describe("sniffImage", () => {
  it("when the bytes start with FF D8 FF, then they are a JPEG", () => {
    expect(sniffImage(jpeg)).toBe("image/jpeg");
  });

  it("when only the 3-byte JPEG signature is there, then it is still a JPEG", () => {
    expect(sniffImage(jpeg.subarray(0, 3))).toBe("image/jpeg");
  });

  it("when the bytes start with the 8-byte PNG signature, then they are a PNG", () => {
    expect(sniffImage(png)).toBe("image/png");
  });

  it("when the bytes are RIFF....WEBP, then they are a WebP", () => {
    expect(sniffImage(webp)).toBe("image/webp");
  });

  it("when a RIFF container holds something else than WEBP (a WAV), then it is no image", () => {
    const wav = Buffer.concat([webp.subarray(0, 8), Buffer.from("WAVE", "latin1")]);
    expect(sniffImage(wav)).toBeNull();
  });

  it("when the bytes are a GIF, then it is not accepted", () => {
    expect(sniffImage(Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00", "latin1"))).toBeNull();
  });

  it("when the bytes are text, then it is no image", () => {
    expect(sniffImage(Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>"))).toBeNull();
  });

  it("when the bytes are fewer than a signature, then it is no image", () => {
    expect(sniffImage(Buffer.alloc(0))).toBeNull();
    expect(sniffImage(Buffer.from([0xff, 0xd8]))).toBeNull();
    expect(sniffImage(png.subarray(0, 7))).toBeNull();
    expect(sniffImage(webp.subarray(0, 11))).toBeNull();
  });

  it("when a PNG signature has one wrong byte, then it is no image", () => {
    const broken = Buffer.from(png);
    broken[7] = 0x00;
    expect(sniffImage(broken)).toBeNull();
  });
});

describe("extensionOf", () => {
  it("when a sniffed type is named, then its file extension is jpg, png or webp", () => {
    expect(extensionOf).toEqual({ "image/jpeg": "jpg", "image/png": "png", "image/webp": "webp" });
  });
});
