import net from 'node:net';

/**
 * The key a client is counted under: its IPv4 address, or the /64 of its IPv6 address (one
 * subscriber line gets a whole /64 and can rotate through it freely, RFC 6177). An IPv4-mapped
 * IPv6 address is its IPv4 address. Anything that is no IP address is its own key.
 */
export function clientKey(ip: string): string {
  return clientNetworks(ip).client;
}

/**
 * The networks a client address belongs to, each a key of its own, for caps that one allocation
 * must not escape by rotating addresses: `client` (IPv4 address, IPv6 /64), `site` (IPv6 /56, what
 * one subscriber commonly gets: 256 /64s) and `network` (IPv4 /24, IPv6 /48, one organisation's or
 * one provider's block). An IPv4 address has no site; something that is no IP address has only
 * itself as `client`.
 */
export function clientNetworks(ip: string): { client: string; site?: string; network?: string } {
  const address = ip.split('%')[0];
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  const v4 = mapped ? mapped[1] : net.isIP(address) === 4 ? address : undefined;
  if (v4) return { client: v4, network: `${v4.split('.').slice(0, 3).join('.')}.0/24` };
  if (net.isIP(address) !== 6) return { client: address };
  const groups = ipv6Groups(address);
  const prefix = (kept: number[], bits: number) => `${kept.map((g) => g.toString(16)).join(':')}::/${bits}`;
  return {
    client: prefix(groups.slice(0, 4), 64),
    site: prefix([...groups.slice(0, 3), groups[3] & 0xff00], 56),
    network: prefix(groups.slice(0, 3), 48),
  };
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, an embedded IPv4 tail as two groups). */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (part: string | undefined) =>
    (part ? part.split(':') : []).flatMap((g) => {
      if (!g.includes('.')) return [parseInt(g, 16)];
      const [a, b, c, d] = g.split('.').map(Number);
      return [(a << 8) | b, (c << 8) | d];
    });
  const first = groups(head);
  const last = groups(tail);
  return [...first, ...Array<number>(8 - first.length - last.length).fill(0), ...last];
}
