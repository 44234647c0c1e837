import assert from 'node:assert/strict';
import path from 'node:path';
import type { Address } from 'viem';
import { executionWorkflowId } from '../../contracts/temporal';
import { openDatabase } from '../../db/database';
import { RefundLedger } from '../../db/refund-ledger';
import { ANVIL_DEV_ACCOUNT } from '../../scripts/lib/anvil';
import { TestChain } from '../support/chain';
import { eventually, newWallet, sampleIntent } from '../support/executions';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { type ProcessStack } from '../support/process-stack';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 3;

/**
 * ERC-20 deposits and native value sent by a contract's internal call, end to end: a real anvil
 * chain (automine off) with the TestToken of solidity/ deployed twice (both allowed in
 * DEPOSIT_TOKENS) and a Forwarder, a real Temporal dev server, the worker and the API as real
 * processes (the worker is SIGKILLed in one test), real HTTP.
 */
describe('token deposits: ERC-20 Transfer logs and internal calls on a real anvil chain', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let tusd: Address;
  let teur: Address;
  let forwarder: Address;

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    teur = await chain.deployToken('Test EUR', 'tEUR');
    forwarder = await chain.deployForwarder();
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6,${CHAIN}:${teur}=tEUR:6`,
      CHAIN_ROUNDS_PER_RUN: '20',
    });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const { api, watcher, record, recordIfReadable, depositSignals, watcherPast, operationPending, ...deposits } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const prepare = (asset: string, minAmount = '1000000') => deposits.prepare({ asset, minAmount, idPrefix: 'token' });

  it('when prepare asks for a token the deployment does not allow, then it is 400; an allowed one in any case is stored lowercase', async () => {
    const res = await api('POST', `/api/v1/executions/${newWallet().id}`, {
      intent: sampleIntent(),
      deposit: { chain: CHAIN, asset: `erc20:0x${'12'.repeat(20)}`, minAmount: '1' },
    });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error, /DEPOSIT_TOKENS/);
    await prepare(`erc20:${tusd.toUpperCase().replace('0X', '0x')}`);
  });

  it('when a real transfer of a token nobody allowed reaches a deposit address and is reported (naming that token), then it is 400 naming DEPOSIT_TOKENS, never a refusal nor a ledger row', async () => {
    const worthless = await chain.deployToken('Worthless', 'BAD');
    const e = await prepare(`erc20:${tusd}`);
    const tx = await chain.sendToken(worthless, e.address, 10n ** 15n);
    await chain.mine(CONFIRMATIONS);
    for (const body of [
      { txHash: tx, asset: `erc20:${worthless}` },
      { txHash: tx, asset: `erc20:${worthless.toLowerCase()}`, chain: CHAIN, transferIndex: 0, amount: '1' },
    ]) {
      const res = await api('POST', `/api/v1/executions/${e.wallet.id}/${e.executionId}/deposit`, body);
      assert.equal(res.status, 400, res.text);
      assert.match(
        res.body.error,
        new RegExp(`erc20:${worthless}.*not a token this service accepts on ${CHAIN} \\(DEPOSIT_TOKENS\\)`, 'i'),
      );
    }
    // Past the watcher's round over that block too: it reads allowed tokens' logs only.
    await watcherPast(await chain.head());
    const r = await record(e);
    assert.equal(r.status, 'PREPARED');
    assert.deepEqual(r.refusedDeposits, []);
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      assert.deepEqual(await new RefundLedger(database).ofExecution(executionWorkflowId(e.wallet.id, e.executionId)), []);
    } finally {
      await database.close();
    }
  });

  it('when a token transfer of minAmount is seen and the worker is SIGKILLed before its confirmations, then after the restart it is signalled once: OPERATION_PENDING with the token, log index and amount', async () => {
    const e = await prepare(`erc20:${tusd}`);
    const tx = await chain.sendToken(tusd, e.address, 1_000_000n);
    await chain.mine(1);
    const block = await chain.blockOf(tx);
    await eventually(async () => (await watcher()).pending.some((t) => t.txHash === tx), 30_000);
    assert.equal((await record(e)).status, 'PREPARED');

    await stack.killWorker();
    await chain.mine(CONFIRMATIONS + 1);
    await stack.startWorker();

    const done = await operationPending(e, 90_000, recordIfReadable);
    assert.deepEqual(done.deposit, {
      txHash: tx,
      chain: CHAIN,
      amount: '1000000',
      blockNumber: block,
      transferIndex: 0,
      asset: `erc20:${tusd.toLowerCase()}`,
    });
    await watcherPast((await chain.head()) + 3);
    assert.equal(await depositSignals(e), 1);
  });

  it('when a token transfer is reorganised away before its confirmations, then it is never signalled', async () => {
    const e = await prepare(`erc20:${tusd}`);
    const snapshot = await chain.snapshot();
    const tx = await chain.sendToken(tusd, e.address, 5_000_000n);
    await chain.mine(1);
    await eventually(async () => (await watcher()).pending.some((t) => t.txHash === tx), 30_000);
    await chain.revert(snapshot);
    const view = await watcherPast((await chain.head()) + CONFIRMATIONS + 3);
    assert.ok(!view.pending.some((t) => t.txHash === tx));
    const r = await record(e);
    assert.equal(r.status, 'PREPARED');
    assert.equal(r.deposit, undefined);
    assert.deepEqual(r.refusedDeposits, []);
    assert.equal(await depositSignals(e), 0);
  });

  it('when another token, or native value, reaches a tUSD target, then each is refused as wrong-asset and recorded in the refunds ledger; a tUSD transfer then completes it', async () => {
    const e = await prepare(`erc20:${tusd}`);
    const wrongToken = await chain.sendToken(teur, e.address, 2_000_000n);
    const native = await chain.send(e.address, 7n);
    await chain.mine(CONFIRMATIONS);
    const r = await eventually(async () => {
      const rec = await record(e);
      return rec.refusedDeposits.length === 2 && rec;
    }, 30_000);
    assert.equal(r.status, 'PREPARED');
    assert.deepEqual(
      r.refusedDeposits.map((d) => [d.txHash, d.asset, d.amount, d.reason]).sort(),
      [
        [wrongToken, `erc20:${teur.toLowerCase()}`, '2000000', 'wrong-asset'],
        [native, 'native', '7', 'wrong-asset'],
      ].sort(),
    );
    const rows = await eventually(async () => {
      const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
      try {
        const found = await new RefundLedger(database).ofExecution(executionWorkflowId(e.wallet.id, e.executionId));
        return found.length === 2 && found;
      } finally {
        await database.close();
      }
    }, 30_000);
    assert.deepEqual(
      rows.map((d) => [d.txHash, d.asset, d.reason, d.sender]).sort(),
      [
        [wrongToken, `erc20:${teur.toLowerCase()}`, 'wrong-asset', ANVIL_DEV_ACCOUNT.address.toLowerCase()],
        [native, 'native', 'wrong-asset', ANVIL_DEV_ACCOUNT.address.toLowerCase()],
      ].sort(),
    );
    const tx = await chain.sendToken(tusd, e.address, 1_000_000n);
    await chain.mine(CONFIRMATIONS);
    const funded = await operationPending(e, 30_000);
    assert.equal(funded.deposit?.txHash, tx);
  });

  it('when a contract sends native value to a deposit address by an internal call, then it is the deposit: OPERATION_PENDING, transferIndex 1', async () => {
    const e = await deposits.prepare({ asset: 'native', minAmount: '1000', idPrefix: 'internal' });
    const tx = await chain.sendThrough(forwarder, e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    const done = await operationPending(e, 30_000);
    assert.deepEqual(
      {
        txHash: done.deposit?.txHash,
        amount: done.deposit?.amount,
        transferIndex: done.deposit?.transferIndex,
        asset: done.deposit?.asset,
      },
      { txHash: tx, amount: '1000', transferIndex: 1, asset: 'native' },
    );
    assert.equal(await depositSignals(e), 1);
  });

  it('when 200 token deposits arrive in 20 blocks, then 200 executions are OPERATION_PENDING, each signalled once', async function () {
    this.timeout(300_000);
    const executions: PreparedDeposit[] = [];
    for (let i = 0; i < 200; i += 10)
      executions.push(...(await Promise.all(Array.from({ length: 10 }, () => prepare(`erc20:${tusd}`, '100')))));
    const { signalledTotal } = await watcher();
    const txs = await deposits.sendInBlocks(executions, 10, (e, block) => chain.sendToken(tusd, e.address, 100n + BigInt(block)));
    const blocks = new Set(await Promise.all(txs.map((tx) => chain.blockOf(tx))));
    assert.equal(blocks.size, 20);
    await chain.mine(CONFIRMATIONS);
    await eventually(async () => (await watcher()).signalledTotal >= signalledTotal + 200, 120_000, 500);
    const records = await deposits.recordsOf(executions);
    assert.deepEqual(
      records.map((r) => [r.status, r.deposit?.txHash, r.deposit?.asset]),
      txs.map((tx) => ['OPERATION_PENDING', tx, `erc20:${tusd.toLowerCase()}`]),
    );
    const counts = await deposits.depositSignalsOf(executions);
    assert.deepEqual(
      counts,
      counts.map(() => 1),
    );
    assert.equal((await watcher()).signalledTotal, signalledTotal + 200);
  });
});
