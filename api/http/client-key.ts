import net from 'node:net';

/**
 * The key a client is counted under: its IPv4 address, or the /64 of its IPv6 address (one
 * subscriber line gets a whole /64 and can rotate through it freely, RFC 6177). An IPv4-mapped
 * IPv6 address is its IPv4 address. Anything that is no IP address is its own key.
 */
export function clientKey(ip: string): string {
  const address = ip.split('%')[0];
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1];
  if (net.isIP(address) !== 6) return address;
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':') : []).flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const first = groups(head);
  const last = groups(tail);
  const full = [...first, ...Array<string>(8 - first.length - last.length).fill('0'), ...last];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
