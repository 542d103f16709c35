import type { IncomingMessage } from "node:http";
import {
  addressKey,
  clientAddressOf,
  plainAddress,
  trustedProxyList,
} from "../../../../services/gateway/client-address";

const request = (peer: string, forwardedFor?: string) =>
  ({
    socket: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor },
  }) as unknown as IncomingMessage;

describe("clientAddressOf", () => {
  it("when no proxy is trusted, then X-Forwarded-For is never read", () => {
    expect(clientAddressOf(request("198.51.100.1", "203.0.113.9"), null)).toBe("198.51.100.1");
  });

  it("when the peer is not a trusted proxy, then its X-Forwarded-For is ignored", () => {
    const proxies = trustedProxyList(["10.0.0.0/8"]);
    expect(clientAddressOf(request("198.51.100.1", "203.0.113.9"), proxies)).toBe("198.51.100.1");
  });

  it("when trusted proxies forward a chain, then the right-most untrusted address is the client", () => {
    const proxies = trustedProxyList(["10.0.0.0/8", "192.168.1.1"]);
    const req = request("10.1.2.3", "192.0.2.66, 203.0.113.9, 192.168.1.1");
    expect(clientAddressOf(req, proxies)).toBe("203.0.113.9");
  });

  it("when every hop is trusted, then the left-most is the client", () => {
    const proxies = trustedProxyList(["10.0.0.0/8"]);
    expect(clientAddressOf(request("10.0.0.1", "10.0.0.7, 10.0.0.8"), proxies)).toBe("10.0.0.7");
  });

  it("when a hop is not an address, then nothing left of it is believed", () => {
    const proxies = trustedProxyList(["10.0.0.0/8"]);
    expect(clientAddressOf(request("10.0.0.1", "203.0.113.9, junk, 10.0.0.5"), proxies)).toBe("10.0.0.5");
    expect(clientAddressOf(request("10.0.0.1", ""), proxies)).toBe("10.0.0.1");
  });

  it("when the socket reports IPv4 inside IPv6, then the IPv4 address is used, also to match proxies", () => {
    const proxies = trustedProxyList(["127.0.0.1"]);
    expect(clientAddressOf(request("::ffff:127.0.0.1", "::ffff:203.0.113.9"), proxies)).toBe("203.0.113.9");
    expect(plainAddress("::ffff:1.2.3.4")).toBe("1.2.3.4");
    expect(plainAddress("::ffff:zz")).toBe("::ffff:zz");
  });

  it("when asked twice for one request, then the first answer is kept", () => {
    const req = request("198.51.100.1");
    expect(clientAddressOf(req, null)).toBe("198.51.100.1");
    (req.socket as { remoteAddress: string }).remoteAddress = "198.51.100.2";
    expect(clientAddressOf(req, null)).toBe("198.51.100.1");
  });
});

describe("trustedProxyList", () => {
  it("when the list is empty, then there is none", () => {
    expect(trustedProxyList([])).toBeNull();
  });

  it("when addresses and CIDRs of both families are given, then each matches", () => {
    const list = trustedProxyList(["10.0.0.0/8", "fd00::/8", "::1", "192.0.2.1"]);
    expect(list?.check("10.9.9.9", "ipv4")).toBe(true);
    expect(list?.check("fd12::1", "ipv6")).toBe(true);
    expect(list?.check("::1", "ipv6")).toBe(true);
    expect(list?.check("192.0.2.2", "ipv4")).toBe(false);
  });

  it.each(["10.0.0.0/33", "nope", "10.0.0.0/8/1", "::/129", "10.0.0.0/x"])(
    "when given %j, then it is refused",
    (e) => {
      expect(() => trustedProxyList([e])).toThrow(/not an IP address or CIDR/);
    },
  );
});

describe("addressKey", () => {
  it("when the address is IPv4, then it counts as itself", () => {
    expect(addressKey("203.0.113.9")).toBe("203.0.113.9");
  });

  it("when IPv6 addresses share a /64, then they count as one", () => {
    expect(addressKey("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:DB8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressKey("2001:db8:1:3::1")).not.toBe(addressKey("2001:db8:1:2::1"));
  });
});
