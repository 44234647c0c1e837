import { clientNetworks } from '../http/client-key';

/** The caps on open event streams of one API process (config `sse`, docs/configuration.md "Settings"). */
export interface SlotCaps {
  /** Streams of the whole process. */
  maxStreams: number;
  /** Streams of one client: an IPv4 address or an IPv6 /64. */
  maxPerClient: number;
  /** Streams of one IPv6 /56 (256 /64s: one subscriber's usual allocation). */
  maxPerSite: number;
  /** Streams of one IPv4 /24 or IPv6 /48. */
  maxPerNetwork: number;
}

/** Which cap refused a stream: a client's share (`client`, `site`, `network`: 429) or the process's (503). */
export type SlotRefusal = { scope: 'client' | 'site' | 'network' | 'process'; cap: number };

export type SlotGrant = { ok: true; release: () => void } | { ok: false; refused: SlotRefusal };

/**
 * Counts the open streams of one process by client, by the client's wider networks and in all,
 * so that no one allocation can hold the process's slots by spreading over its addresses: 256 /64s
 * of one /56 at 20 each would otherwise take 5,120 slots, more than the process has (decision 0063).
 * Pure bookkeeping; the caller maps a refusal to its answer.
 */
export class StreamSlots {
  private readonly held = new Map<string, number>();
  private open = 0;

  constructor(private readonly caps: SlotCaps) {}

  /** Open streams of the process. */
  get streams(): number {
    return this.open;
  }

  /** Takes one slot for the client at `ip`, or says which cap refused it. `release` gives it back once. */
  take(ip: string): SlotGrant {
    const networks = clientNetworks(ip);
    // Keys of different scopes never collide: a scope is part of the key.
    const keys: Array<[SlotRefusal['scope'], string, number]> = [[`client`, networks.client, this.caps.maxPerClient]];
    if (networks.site) keys.push(['site', networks.site, this.caps.maxPerSite]);
    if (networks.network) keys.push(['network', networks.network, this.caps.maxPerNetwork]);
    for (const [scope, key, cap] of keys) if ((this.held.get(`${scope} ${key}`) ?? 0) >= cap) return { ok: false, refused: { scope, cap } };
    if (this.open >= this.caps.maxStreams) return { ok: false, refused: { scope: 'process', cap: this.caps.maxStreams } };
    this.open++;
    for (const [scope, key] of keys) this.held.set(`${scope} ${key}`, (this.held.get(`${scope} ${key}`) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.open--;
      for (const [scope, key] of keys) {
        const left = (this.held.get(`${scope} ${key}`) ?? 1) - 1;
        if (left > 0) this.held.set(`${scope} ${key}`, left);
        else this.held.delete(`${scope} ${key}`);
      }
    };
    return { ok: true, release };
  }
}
