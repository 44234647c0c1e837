import assert from 'node:assert/strict';
import path from 'node:path';
import type { Address } from 'viem';
import type { RefundRow } from '../../contracts/refunds';
import { executionWorkflowId } from '../../contracts/temporal';
import { openDatabase } from '../../db/database';
import { RefundLedger } from '../../db/refund-ledger';
import { ANVIL_DEV_ACCOUNT } from '../../scripts/lib/anvil';
import { TestChain } from '../support/chain';
import { eventually } from '../support/executions';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import type { ProcessStack } from '../support/process-stack';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 3;
/** Anvil's first dev account: the token's owner (its whole supply), the payer of the deposits that are taken. */
const OWNER = ANVIL_DEV_ACCOUNT.address.toLowerCase() as Address;
/** Anvil's second dev account (unlocked like the first): a relayer that sends transactions paying with others' money. */
const RELAYER = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' as Address;

/**
 * Where a refund goes back to, end to end: each transfer reaches an execution that cannot take it
 * (its deposit was taken already, or it is of another asset), so the refunds ledger gets a row,
 * and the row's sender is whoever paid, read from the transfer itself (the Transfer log's from, an
 * internal call's frame from, the transaction's sender for its own value), never the sender of a
 * transaction that moved someone else's money; a payer with code is marked a contract payer.
 * A real anvil chain (automine off), a real Temporal dev server, the worker and the API as real
 * processes.
 */
describe('refund payers: the refunds ledger names who paid a transfer, on a real anvil chain', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let tusd: Address;
  let forwarder: Address;

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    forwarder = await chain.deployForwarder();
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      CHAIN_ROUNDS_PER_RUN: '20',
    });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const { operationPending, ...deposits } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );

  /** The execution's refunds ledger rows, once it has `count` of them. */
  const ledgerRows = (e: PreparedDeposit, count: number): Promise<RefundRow[]> =>
    eventually(async () => {
      const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
      try {
        const found = await new RefundLedger(database).ofExecution(executionWorkflowId(e.wallet.id, e.executionId));
        return found.length === count && found;
      } finally {
        await database.close();
      }
    }, 30_000);

  /** An execution whose deposit (`pay`) was taken: OPERATION_PENDING; a second transfer to it is owed back. */
  async function funded(asset: string, minAmount: string, pay: (address: string) => Promise<unknown>): Promise<PreparedDeposit> {
    const e = await deposits.prepare({ asset, minAmount, idPrefix: 'payer' });
    await pay(e.address);
    await chain.mine(CONFIRMATIONS);
    await operationPending(e, 30_000);
    return e;
  }

  it("when a relayer's transferFrom moves the owner's tokens to an execution that cannot take them, then the row's sender is the owner (the Transfer log's from), not the relayer, an EOA", async () => {
    const taken = await funded(`erc20:${tusd}`, '1000000', (address) => chain.sendToken(tusd, address, 1_000_000n));
    const nativeTarget = await deposits.prepare({ asset: 'native', minAmount: '1000', idPrefix: 'payer' });
    await chain.approveToken(tusd, RELAYER, 10_000_000n);
    await chain.mine(1);
    // Owed back by the watcher (the execution's deposit was taken), and by the execution's own
    // projection (another asset than its target's, refused by the execution itself).
    const otherTx = await chain.transferTokenFrom(tusd, RELAYER, OWNER, taken.address, 2_000_000n);
    const wrongAsset = await chain.transferTokenFrom(tusd, RELAYER, OWNER, nativeTarget.address, 3_000_000n);
    await chain.mine(CONFIRMATIONS);
    for (const hash of [otherTx, wrongAsset])
      assert.equal(
        (await chain.client.getTransaction({ hash })).from.toLowerCase(),
        RELAYER,
        'the relayer sent the transaction: tx.from is not the payer',
      );

    const [row] = await ledgerRows(taken, 1);
    assert.deepEqual(
      [row.txHash, row.asset, row.reportedBy, row.sender, row.payerKind],
      [otherTx, `erc20:${tusd.toLowerCase()}`, 'chain-watcher', OWNER, 'eoa'],
    );
    const [refused] = await ledgerRows(nativeTarget, 1);
    assert.deepEqual(
      [refused.txHash, refused.reason, refused.reportedBy, refused.sender, refused.payerKind],
      [wrongAsset, 'wrong-asset', 'execution', OWNER, 'eoa'],
    );
  });

  it("when a Forwarder's internal call pays an execution that cannot take it, then the row's sender is the Forwarder (the call frame's from), marked a contract payer", async () => {
    const e = await funded('native', '1000', (address) => chain.send(address, 1000n));
    const tx = await chain.sendThrough(forwarder, e.address, 5000n);
    await chain.mine(CONFIRMATIONS);
    const [row] = await ledgerRows(e, 1);
    assert.deepEqual(
      [row.txHash, row.transferIndex, row.asset, row.reportedBy, row.sender, row.payerKind],
      [tx, 1, 'native', 'chain-watcher', forwarder.toLowerCase(), 'contract'],
    );
  });

  it("when a top-level native transfer pays an execution that cannot take it, then the row's sender is the transaction's sender, an EOA", async () => {
    const e = await funded('native', '1000', (address) => chain.sendThrough(forwarder, address, 1000n));
    const tx = await chain.send(e.address, 4000n, RELAYER);
    await chain.mine(CONFIRMATIONS);
    const [row] = await ledgerRows(e, 1);
    assert.deepEqual(
      [row.txHash, row.transferIndex, row.asset, row.reportedBy, row.sender, row.payerKind],
      [tx, 0, 'native', 'chain-watcher', RELAYER, 'eoa'],
    );
  });
});
