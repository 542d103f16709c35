import { clientRequestId, MAX_REQUEST_ID_LENGTH } from "../../../../services/gateway/request-id";

describe("client request ids", () => {
  it("when the id is 1 to 128 visible ASCII characters, then it is taken as given", () => {
    for (const id of ["a", "req-trace-42", "0f8fad5b-d9cb-469f-a165-70867728950e", "~".repeat(128)]) {
      expect(clientRequestId(id)).toBe(id);
    }
  });

  it("when the id is empty, too long, has spaces, control or non-ASCII characters, or is not one string, then none is taken", () => {
    for (const id of [
      "",
      "x".repeat(MAX_REQUEST_ID_LENGTH + 1),
      "two words",
      "tab\there",
      "é",
      "new\nline",
      ["a", "b"],
      undefined,
    ]) {
      expect(clientRequestId(id)).toBeUndefined();
    }
  });
});
