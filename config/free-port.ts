import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Linux's range of ephemeral ports (`net.ipv4.ip_local_port_range`); IANA's elsewhere. */
function ephemeralRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low > 1024) return { low, high };
  } catch {
    // not Linux: IANA's dynamic range
  }
  return { low: 49152, high: 65535 };
}

/** The lowest port a pick may take: above the well-known and most registered services' ports. */
const LOWEST = 10_000;

/** Binds `port` (0: any) on 127.0.0.1 and lets it go: the port bound, or undefined when it was taken. */
function bindOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a child or exporter that must be told a
 * port up front (a listener that can bind port 0 itself should do that instead). It is picked at
 * random below the ephemeral range, never in it: every outgoing connection of the machine takes its
 * source port from that range, and one made between the pick and the child's bind (another process's
 * client, say) would take the port from under the child (EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  const { low } = ephemeralRange();
  const span = Math.max(0, low - LOWEST);
  for (let attempt = 0; span > 0 && attempt < 50; attempt++) {
    const port = await bindOnce(LOWEST + Math.floor(Math.random() * span));
    if (port !== undefined) return port;
  }
  // No free port below the ephemeral range (or none there at all): any port the system gives.
  const any = await bindOnce(0);
  if (any === undefined) throw new Error('no free TCP port on 127.0.0.1');
  return any;
}
