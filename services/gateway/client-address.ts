/**
 * The client address of a request: the peer's, or, when the peer is a proxy named in TRUSTED_PROXIES,
 * the right-most address in X-Forwarded-For that is not one of them (each trusted proxy appends the
 * peer it saw; what lies left of the first untrusted hop was written by the client and is not
 * believed). Decision 0037.
 */
import { BlockList, isIP } from "node:net";
import type { IncomingMessage } from "node:http";

/** An IPv4 address as an IPv6 socket reports it (`::ffff:203.0.113.7`), as the IPv4 address. */
export function plainAddress(address: string): string {
  return address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** Parses TRUSTED_PROXIES entries (addresses, or CIDRs like 10.0.0.0/8 and fd00::/8); throws on a bad one. */
export function trustedProxyList(entries: readonly string[]): BlockList | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits, extra] = entry.split("/");
    const family = isIP(address);
    const prefix = bits === undefined ? undefined : Number(bits);
    const maxBits = family === 4 ? 32 : 128;
    if (
      family === 0 ||
      extra !== undefined ||
      (prefix !== undefined && (!/^\d{1,3}$/.test(bits) || prefix > maxBits))
    ) {
      throw new Error(`"${entry}" is not an IP address or CIDR`);
    }
    const type = family === 4 ? "ipv4" : "ipv6";
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, prefix, type);
  }
  return list;
}

const trusted = (list: BlockList, address: string): boolean => {
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 4 ? "ipv4" : "ipv6");
};

/** Longest X-Forwarded-For read: a proxy chain of a few hops, not a client's kilobytes. */
const MAX_FORWARDED_CHARS = 1024;

/**
 * The client address of `req` (computed once per request and kept on it). Without trusted proxies,
 * the peer's address, X-Forwarded-For never read.
 */
export function clientAddressOf(
  req: IncomingMessage & { $clientAddress?: string },
  proxies: BlockList | null,
) {
  if (req.$clientAddress !== undefined) return req.$clientAddress;
  const peer = plainAddress(req.socket?.remoteAddress ?? "unknown");
  let client = peer;
  if (proxies && trusted(proxies, peer)) {
    const header = req.headers["x-forwarded-for"];
    const hops = (typeof header === "string" ? header : "").slice(-MAX_FORWARDED_CHARS).split(",");
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plainAddress(hops[i].trim());
      // Not an address: nothing left of it is believed; the client is the last hop that was.
      if (isIP(hop) === 0) break;
      client = hop;
      if (!trusted(proxies, hop)) break;
    }
  }
  req.$clientAddress = client;
  return client;
}

/**
 * What an address is counted under: an IPv4 address as it is, an IPv6 address by its /64 (one host
 * commonly holds a whole /64, and could otherwise count afresh under each of its addresses).
 */
export function addressKey(address: string): string {
  if (!address.includes(":")) return address;
  const bare = address.split("%")[0].toLowerCase();
  const [head, tail] = bare.split("::");
  const first = head ? head.split(":") : [];
  if (tail === undefined) return `${first.slice(0, 4).join(":")}::/64`;
  const last = tail ? tail.split(":") : [];
  const groups = [...first, ...Array<string>(Math.max(0, 8 - first.length - last.length)).fill("0"), ...last];
  return `${groups.slice(0, 4).join(":")}::/64`;
}
