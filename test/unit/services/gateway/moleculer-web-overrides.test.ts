import ApiGateway from "moleculer-web";
import {
  fastAnswersHook,
  overrideMoleculerWeb,
  type WebGateway,
} from "../../../../services/gateway/moleculer-web-overrides";
import { ResponseCache } from "../../../../services/gateway/response-cache";
import { reasonNotToApply, removeHook } from "../../../../shared/runtime/internals";

/** A gateway whose moleculer-web methods are moleculer-web's own, bound to it as Moleculer does. */
function gateway(): WebGateway {
  const methods = (ApiGateway as unknown as { methods: Record<string, (...a: unknown[]) => unknown> })
    .methods;
  const gw = {
    responses: new ResponseCache({ maxAgeMs: 1000, maxEntries: 100 }),
    takesRawJson: true,
    specOf: () => undefined,
  } as unknown as WebGateway & Record<string, unknown>;
  for (const name of ["callAction", "sendResponse", "encodeResponse"]) {
    gw[name] = methods[name].bind(gw);
  }
  return gw;
}

describe("moleculer-web overrides", () => {
  it("when the installed moleculer-web is checked, then it is in range and has every method the overrides wrap", () => {
    expect(reasonNotToApply(fastAnswersHook, gateway(), [])).toBeNull();
  });

  it("when a method the fast answers wrap is missing, then they stay off with one warning, the library's own methods in place", () => {
    const gw = gateway();
    const own = gw.callAction;
    delete (gw as Partial<WebGateway>).encodeResponse;
    const warnings: string[] = [];
    overrideMoleculerWeb(gw, { off: [], warn: (m) => warnings.push(m) });
    expect(gw.callAction).toBe(own);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/'gateway-fast-answers' not applied .*encodeResponse/);
  });

  it("when applied and then removed, then each method is wrapped and its original put back", () => {
    const gw = gateway();
    const own = { call: gw.callAction, send: gw.sendResponse, encode: gw.encodeResponse };
    overrideMoleculerWeb(gw, { off: [], warn: () => undefined });
    expect(gw.callAction).not.toBe(own.call);
    expect(gw.sendResponse).not.toBe(own.send);
    expect(gw.encodeResponse).not.toBe(own.encode);
    removeHook(fastAnswersHook, gw);
    expect(gw.callAction).toBe(own.call);
    expect(gw.sendResponse).toBe(own.send);
    expect(gw.encodeResponse).toBe(own.encode);
  });

  it("when a plain answer is encoded, then the library's own encoding is called and given a Content-Length", () => {
    const gw = gateway();
    overrideMoleculerWeb(gw, { off: [], warn: () => undefined });
    const headers: Record<string, unknown> = {};
    const res = { setHeader: (k: string, v: unknown) => (headers[k] = v), statusCode: 200 };
    const json = gw.encodeResponse({} as never, res as never, { a: "é" });
    expect(json).toBe('{"a":"é"}');
    expect(headers["Content-Length"]).toBe(10);
  });
});
