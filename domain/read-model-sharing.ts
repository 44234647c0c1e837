/**
 * Whether a process would split the read model (docs/decisions/0077). The read model (records,
 * deposit addresses, the refunds ledger) must be one database for every API and worker: a SQLite
 * file is one host's, so APIs and workers on several hosts each with their own file answer empty
 * lists, never see each other's deposit addresses and split the ledger. Pure: the entry points
 * gather the facts (lib/read-model-sharing.ts).
 */

export type SharingVerdict = { verdict: 'ok' } | { verdict: 'warn' | 'refuse'; message: string };

export interface SharingFacts {
  database: 'sqlite' | 'postgres';
  /** Temporal's address as configured (host:port). */
  temporalAddress: string;
  /** This machine's host name, as Temporal's default worker identities (`pid@host`) spell it. */
  thisHost: string;
  /** The identities of the processes polling the service's task queue. */
  pollerIdentities: readonly string[];
  taskQueue: string;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\]|::1)$/;

/** The host of a Temporal worker identity of the SDK's default form `pid@host`, or undefined. */
export function identityHost(identity: string): string | undefined {
  return /^\d+@(.+)$/.exec(identity)?.[1];
}

/**
 * `refuse` when the read model is SQLite and another host polls the task queue (the split is
 * certain); `warn` when it is SQLite and Temporal is not on this machine (another host could join
 * later, and this process cannot tell); `ok` otherwise.
 */
export function readModelSharing(facts: SharingFacts): SharingVerdict {
  if (facts.database === 'postgres') return { verdict: 'ok' };
  const others = [
    ...new Set(facts.pollerIdentities.map(identityHost).filter((h): h is string => h !== undefined && h !== facts.thisHost)),
  ].sort();
  if (others.length > 0)
    return {
      verdict: 'refuse',
      message:
        `the read model is this host's SQLite file, but task queue ${facts.taskQueue} is also polled from ${others.join(', ')}: ` +
        'each host would keep records, deposit addresses and refunds of its own. Set DATABASE_URL to one PostgreSQL for every API and worker',
    };
  const host = facts.temporalAddress.replace(/:\d+$/, '');
  if (!LOOPBACK.test(host))
    return {
      verdict: 'warn',
      message:
        `the read model is this host's SQLite file while Temporal (${facts.temporalAddress}) is shared: ` +
        'an API or worker on another host would split it. Run more than one host only with DATABASE_URL',
    };
  return { verdict: 'ok' };
}
