import type { ChainTransfer } from './chain-watcher';
import { atLeast } from './wei';

/** A transfer a round found, before it is joined with the deposit address it pays. */
export type FoundTransfer = Omit<ChainTransfer, 'workflowId'>;

/** A deposit address's execution and what completes its deposit (`native` or `erc20:<lowercase address>`). */
export interface AddressOwner {
  workflowId: string;
  minAmount: string;
  asset: string;
}

/**
 * Transfers one block brings an address that could complete its deposit, kept one entry each; the
 * later ones of the block are summed into one surplus batch. An execution takes one deposit, the
 * first signalled, so a block's transfers past its first can only be owed back; thousands of
 * entries would make the round's answer (and the watcher's state) too big for Temporal.
 */
export const DEPOSITS_PER_ADDRESS_BLOCK = 100;

/**
 * Joins a round's transfers with the deposit addresses they pay, and sums what an address can
 * never take. A transfer of the address's asset and at least its minAmount stays one entry (it can
 * complete the deposit, or is owed back to its payer alone). The others one block brings an address
 * in one asset (below minAmount, or another asset) are one dust batch when there are two or more:
 * `transfers` of them, their amounts summed, named by the block's hash. Anyone can send an address
 * thousands of 1-unit transfers; as a batch they are one entry of the round, one ledger row whose
 * amount is fixed when it is written, instead of thousands. Transfers of the address's asset and at
 * least its minAmount past DEPOSITS_PER_ADDRESS_BLOCK in one block are summed the same way into a
 * surplus batch (`surplus: true`): owed back, never a deposit. Transfers to no deposit address, and
 * transfers of nothing, are left out.
 */
export function dustBatches(found: readonly FoundTransfer[], owners: ReadonlyMap<string, AddressOwner>): ChainTransfer[] {
  const out: ChainTransfer[] = [];
  const groups = new Map<string, { at: number; members: ChainTransfer[]; surplus: boolean }>();
  const deposits = new Map<string, number>();
  for (const t of found) {
    const owner = owners.get(t.to.toLowerCase());
    if (!owner || t.amount === '0') continue;
    const joined: ChainTransfer = { ...t, workflowId: owner.workflowId };
    const asset = (t.asset ?? 'native').toLowerCase();
    const where = `${t.blockHash}\n${t.to.toLowerCase()}\n${asset}`;
    // Could complete the deposit: past the block's first few to the address, it goes to the surplus batch.
    const depositSized = asset === owner.asset.toLowerCase() && atLeast(t.amount, owner.minAmount);
    if (depositSized) {
      const seen = deposits.get(where) ?? 0;
      deposits.set(where, seen + 1);
      if (seen < DEPOSITS_PER_ADDRESS_BLOCK) {
        out.push(joined);
        continue;
      }
    }
    const key = `${where}\n${depositSized ? 'surplus' : 'dust'}`;
    const group = groups.get(key);
    if (group) group.members.push(joined);
    else {
      groups.set(key, { at: out.length, members: [joined], surplus: depositSized });
      out.push(joined);
    }
  }
  for (const { at, members, surplus } of groups.values()) {
    if (members.length < 2) continue;
    const first = members[0];
    out[at] = {
      blockNumber: first.blockNumber,
      blockHash: first.blockHash,
      // A surplus batch and a dust batch of one block and address are told apart by their index.
      txHash: first.blockHash,
      transferIndex: surplus ? 1 : 0,
      ...(first.asset === undefined ? {} : { asset: first.asset }),
      to: first.to.toLowerCase(),
      amount: members.reduce((sum, m) => sum + BigInt(m.amount), 0n).toString(),
      workflowId: first.workflowId,
      transfers: members.length,
      ...(surplus ? { surplus: true as const } : {}),
    };
  }
  // The other members of each batch stood where the batch's first did: left out.
  const batched = new Set([...groups.values()].filter((g) => g.members.length >= 2).flatMap((g) => g.members.slice(1)));
  return out.filter((t) => !batched.has(t));
}
