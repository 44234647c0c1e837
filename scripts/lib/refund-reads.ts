import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RefundRow } from '../../contracts/refunds';
import { executionWorkflowId } from '../../contracts/temporal';
import { openDatabase } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { GasAccountLedger } from '../../db/gas-account';
import { RefundLedger } from '../../db/refund-ledger';
import { RefundPayments } from '../../db/refund-payments';
import type { PreparedDeposit } from './deposit-helpers';
import { eventually } from './eventually';
import type { ProcessStack } from './stack/process-stack';
import type { TestChain } from './test-chain';

/** The read model's refunds as a test of the service's refunder reads them, on a stack that follows `chain` (both read at each call). */
export function refundReads(stack: () => ProcessStack, chain: () => TestChain) {
  /** Runs `read` against the stack's read model. */
  async function readModel<T>(
    read: (ledger: RefundLedger, payments: RefundPayments, gas: GasAccountLedger, addresses: DepositAddressStore) => Promise<T>,
  ): Promise<T> {
    const database = await openDatabase({ sqliteFile: path.join(stack().tmpDir, 'read-model.sqlite') });
    try {
      return await read(
        new RefundLedger(database),
        new RefundPayments(database),
        new GasAccountLedger(database),
        new DepositAddressStore(database),
      );
    } finally {
      await database.close();
    }
  }

  /** The row of the transfer `txHash` to `e`, or undefined while the ledger has none. */
  const rowNow = async (e: PreparedDeposit, txHash: string): Promise<RefundRow | undefined> => {
    const rows = await readModel((ledger) => ledger.ofExecution(executionWorkflowId(e.wallet.id, e.executionId)));
    return rows.find((r) => r.txHash === txHash.toLowerCase());
  };

  /** Mines one block at a time (a short pause between) until `done` answers something. */
  async function mineUntil<T>(done: () => Promise<T | false | undefined>, timeoutMs = 90_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = await done();
      if (found) return found;
      if (Date.now() > deadline) throw new Error('not reached while mining');
      await chain().mine(1);
      await sleep(150);
    }
  }

  return {
    readModel,
    rowNow,
    mineUntil,
    /** The row of the transfer `txHash` to `e`, once the ledger has it (and `until` holds). */
    rowOf: (e: PreparedDeposit, txHash: string, until: (r: RefundRow) => boolean = () => true) =>
      eventually(async () => {
        const row = await rowNow(e, txHash);
        return row !== undefined && until(row) && row;
      }, 60_000),
    /** The row once it is in `state`, mining a block at a time meanwhile. */
    rowMinedInto: (e: PreparedDeposit, txHash: string, state: RefundRow['state'], timeoutMs?: number) =>
      mineUntil(async () => {
        const row = await rowNow(e, txHash);
        return row?.state === state && row;
      }, timeoutMs),
  };
}
