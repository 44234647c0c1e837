import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { RefundRow } from '../../contracts/refunds';
import { executionWorkflowId, refundAddressWorkflowId } from '../../contracts/temporal';
import { openDatabase } from '../../db/database';
import type { RefundSource } from '../../db/refund-payments';
import { depositAddress, depositKey, readDepositSeed } from '../../lib/deposit-seed';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';
import { projectRoot } from '../../config/config';
import { TestChain } from '../support/chain';
import { eventually, newWallet } from '../support/executions';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { ProcessStack } from '../support/process-stack';
import { runReconcile } from '../support/reconcile-run';
import { startRpcRelay, type RpcAnswer, type RpcCall } from '../support/rpc-relay';
import { replayHistories } from '../support/history-replay';
import { refundReads } from '../support/refund-reads';
import { docSnippets } from '../support/doc-snippets';
import { freePort } from '../support/ports';
import { metricSum, scrape } from '../support/prometheus';
import { request } from '../support/http';
import { createToken } from '../../tokens/token-store';
import { childEnv } from '../../config/child-env';

const run = promisify(execFile);
const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
/** A transfer is paid back once it is deeper than this (anvil's `finalized` block is 64 below the head). */
const WINDOW = 6;
const REPLACE_AFTER = 3;
const ETH = 10n ** 18n;

/**
 * Refunds the service pays by itself, exactly once, on a real anvil chain (automine off: the test
 * mines every block), a real Temporal dev server, and the worker and the API as real processes that
 * the test kills with SIGKILL between the refunder's steps. The worker's node is a loopback relay in
 * front of anvil, so that the test can refuse eth_sendRawTransaction (a refund signed and recorded,
 * never sent). In every case: one refund mined per row, the deposit address's nonce equal to the
 * refunds the ledger records as mined from it, the taken deposit still there.
 */
describe('refunds paid by the service: native refunds on a real anvil chain, exactly once under SIGKILL', function () {
  this.timeout(240_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let relay: { url: string; close: () => void };
  /** What the relay refuses right now. */
  let refuse: (call: RpcCall) => RpcAnswer | undefined = () => undefined;
  let metricsUrl: string;

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    relay = await startRpcRelay(chain.url, (call) => refuse(call));
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      WORKER_METRICS_PORT: String(metricsPort),
      CHAIN_RPC_URL: relay.url,
      CHAIN_REORG_WINDOW: String(WINDOW),
      REFUND_PAYMENTS: 'on',
      REFUND_REPLACE_AFTER_BLOCKS: String(REPLACE_AFTER),
    });
  });
  after(async () => {
    await stack?.stop();
    relay?.close();
    await chain?.stop();
  });
  afterEach(() => {
    refuse = () => undefined;
  });

  const { operationPending, ...deposits } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );

  const { readModel, rowNow, rowOf, rowMinedInto, mineUntil } = refundReads(
    () => stack,
    () => chain,
  );

  /** A fresh EOA holding `value` wei, and its key. */
  async function fundedPayer(value: bigint): Promise<{ key: Hex; address: Address }> {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address;
    await chain.send(address, value);
    await chain.mine(1);
    return { key, address };
  }

  /** An execution whose deposit (1000 wei from anvil's first account) was taken: OPERATION_PENDING. */
  async function taken(): Promise<PreparedDeposit> {
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'refund' });
    await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    await operationPending(e, 30_000);
    return e;
  }

  /** Sends `value` from `payer` to the execution's deposit address and mines it `CONFIRMATIONS` deep: a transfer the execution cannot take. */
  async function overpay(e: PreparedDeposit, payer: { key: Hex }, value: bigint): Promise<Hex> {
    const hash = await chain.sendRaw(await chain.signedTransfer(payer.key, e.address, value));
    await chain.mine(CONFIRMATIONS);
    return hash;
  }

  const balance = (address: string) => chain.client.getBalance({ address: address as Address });
  const nonceOf = (address: string) => chain.client.getTransactionCount({ address: address as Address, blockTag: 'latest' });
  const sourceOf = (e: PreparedDeposit) => readModel((_, payments) => payments.source(CHAIN, e.address)) as Promise<RefundSource>;

  /** The checks every case ends with: the row refunded once by one of its variants, the address's nonce the ledger's count, the taken deposit kept. */
  async function paidOnce(e: PreparedDeposit, row: RefundRow, payerBefore: bigint, payer: string, refundsFromAddress: number) {
    assert.equal(row.state, 'refunded');
    assert.equal(row.refundTo, payer.toLowerCase());
    const mined = row.refundVariants!.find((v) => v.hash === row.refundTxHash);
    assert.ok(mined, 'the refund transaction is one of the variants the ledger recorded before sending');
    assert.equal(mined.kind, 'refund');
    assert.equal(row.refundValue, mined.value);
    const receipt = await chain.client.getTransactionReceipt({ hash: row.refundTxHash as Hex });
    assert.equal(receipt.status, 'success');
    assert.equal(Number(receipt.blockNumber), row.refundBlock);
    const tx = await chain.client.getTransaction({ hash: row.refundTxHash as Hex });
    assert.equal(tx.from.toLowerCase(), e.address.toLowerCase());
    assert.equal(tx.nonce, row.refundNonce);
    // The destination got the row's amount less the refund's most cost (gas × fee cap), never more.
    assert.equal((await balance(payer)) - payerBefore, BigInt(mined.value));
    assert.equal(
      BigInt(row.amount!) - BigInt(row.feesSpent ?? '0') - BigInt(mined.value),
      BigInt(mined.gas) * BigInt(mined.maxFeePerGas ?? mined.gasPrice!),
    );
    assert.equal(await nonceOf(e.address), refundsFromAddress);
    assert.equal((await sourceOf(e)).noncesMined, refundsFromAddress);
    assert.ok((await balance(e.address)) >= 1000n, 'the taken deposit stays on the address');
  }

  it('when a second transfer reaches a taken deposit, then the service pays it back to its payer once: the amount less the fee, from the deposit address at nonce 0', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 2n);
    const before = await balance(payer.address);
    const due = await rowOf(e, tx);
    assert.equal(due.sender, payer.address.toLowerCase());
    const row = await rowMinedInto(e, tx, 'refunded');
    assert.equal(row.refundNonce, 0);
    assert.equal(row.refundVariants!.length, 1);
    await paidOnce(e, row, before, payer.address, 1);
    // The depositor's view: the record lists the row, refunded, with the refund's transaction.
    const record = await deposits.record(e);
    assert.deepEqual(record.refunds?.rows, [
      {
        id: row.id,
        txHash: tx.toLowerCase(),
        transferIndex: 0,
        asset: 'native',
        amount: String(ETH / 2n),
        reason: row.reason,
        state: 'refunded',
        refundTxHash: row.refundTxHash,
        refundValue: row.refundValue,
      },
    ]);
  });

  it('when the worker is SIGKILLed before it signs (the transfer not deep enough yet), then a new worker pays the row once', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    await rowOf(e, tx);
    await stack.killWorker();
    await chain.mine(WINDOW + 1);
    assert.equal((await rowOf(e, tx)).state, 'due');
    await stack.startWorker();
    const row = await rowMinedInto(e, tx, 'refunded');
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when the worker is SIGKILLed after signing, before its transaction reached the node, then a new worker sends the very same transaction: one refund', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    refuse = (call) => (call.method === 'eth_sendRawTransaction' ? { code: -32000, message: 'refused by the test' } : undefined);
    const paying = await rowMinedInto(e, tx, 'paying');
    const signed = paying.refundVariants![0];
    await stack.killWorker();
    assert.equal(await chain.client.getTransaction({ hash: signed.hash as Hex }).catch(() => undefined), undefined, 'never sent');
    refuse = () => undefined;
    await stack.startWorker();
    const row = await rowMinedInto(e, tx, 'refunded');
    assert.equal(row.refundTxHash, signed.hash);
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when the worker is SIGKILLed after broadcasting, its transaction in the pool, then a new worker finds it mined and records it: one refund', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    await chain.mine(WINDOW + 1);
    const paying = await rowOf(e, tx, (r) => r.state === 'paying' && r.refundVariants![0].sentAtBlock !== undefined);
    await stack.killWorker();
    assert.ok(await chain.client.getTransaction({ hash: paying.refundVariants![0].hash as Hex }), 'in the pool');
    await chain.mine(CONFIRMATIONS);
    await stack.startWorker();
    const row = await rowMinedInto(e, tx, 'refunded');
    assert.equal(row.refundTxHash, paying.refundVariants![0].hash);
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when the worker is SIGKILLed after its refund was mined, before it was confirmed, then a new worker records it: no second transaction', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    await chain.mine(WINDOW + 1);
    const paying = await rowOf(e, tx, (r) => r.state === 'paying' && r.refundVariants![0].sentAtBlock !== undefined);
    await chain.mine(1);
    await stack.killWorker();
    assert.equal((await chain.client.getTransactionReceipt({ hash: paying.refundVariants![0].hash as Hex })).status, 'success');
    assert.equal((await rowOf(e, tx)).state, 'paying');
    await stack.startWorker();
    const row = await rowMinedInto(e, tx, 'refunded');
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when the refund is stuck under a base fee above its fee cap, then it is replaced at the same nonce with higher fees and exactly one variant is mined', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    await chain.mine(WINDOW + 1);
    const paying = await rowOf(e, tx, (r) => r.state === 'paying' && r.refundVariants![0].sentAtBlock !== undefined);
    const first = paying.refundVariants![0];
    // Every block from now on has a base fee far above the first offer: it can never be mined.
    const high = BigInt(first.maxFeePerGas!) * 50n;
    const row = await mineUntil(async () => {
      await chain.client.request({ method: 'anvil_setNextBlockBaseFeePerGas', params: [`0x${high.toString(16)}`] } as never);
      const r = await rowNow(e, tx);
      return r?.state === 'refunded' && r;
    });
    assert.ok(row.refundVariants!.length >= 2, `replaced: ${row.refundVariants!.length} variants`);
    assert.notEqual(row.refundTxHash, first.hash);
    assert.ok(
      row.refundVariants!.every(
        (v, i) => i === 0 || BigInt(v.maxFeePerGas!) * 1000n >= BigInt(row.refundVariants![i - 1].maxFeePerGas!) * 1100n,
      ),
    );
    assert.ok(BigInt(row.refundValue!) < BigInt(first.value), 'a replacement pays less than the first offer');
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when the node forgets the refund (anvil_dropTransaction), then the same transaction is sent again: one refund', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    await chain.mine(WINDOW + 1);
    const paying = await rowOf(e, tx, (r) => r.state === 'paying' && r.refundVariants![0].sentAtBlock !== undefined);
    const hash = paying.refundVariants![0].hash as Hex;
    await chain.client.request({ method: 'anvil_dropTransaction', params: [hash] } as never);
    assert.equal(await chain.client.getTransaction({ hash }).catch(() => undefined), undefined, 'dropped');
    // Back in the pool before any block is mined: sent again, not replaced (a replacement waits REPLACE_AFTER blocks).
    await eventually(() => chain.client.getTransaction({ hash }).catch(() => undefined), 30_000, 100);
    const row = await rowMinedInto(e, tx, 'refunded');
    assert.equal(row.refundTxHash, hash);
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when a reorganisation removes the mined refund (evm_revert), then the refunder sends the same transaction again: one refund', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    await chain.mine(WINDOW + 1);
    const paying = await rowOf(e, tx, (r) => r.state === 'paying' && r.refundVariants![0].sentAtBlock !== undefined);
    const hash = paying.refundVariants![0].hash as Hex;
    const snapshot = await chain.snapshot();
    await chain.mine(1);
    assert.equal((await chain.client.getTransactionReceipt({ hash })).status, 'success');
    await chain.revert(snapshot);
    assert.equal(await chain.client.getTransactionReceipt({ hash }).catch(() => undefined), undefined, 'reorganised away');
    await eventually(() => chain.client.getTransaction({ hash }).catch(() => undefined), 30_000, 100);
    const row = await rowMinedInto(e, tx, 'refunded');
    assert.equal(row.refundTxHash, hash);
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when two rows of one deposit address are paid while two workers run, then they are paid one after the other at nonces 0 and 1', async () => {
    const second: ChildService = startChildService(
      'fault-worker-2',
      process.execPath,
      [path.join(projectRoot, 'dist', 'worker', 'main.js')],
      {
        readyPattern: /worker polling task queue/,
        env: stack.env(),
        echo: false,
      },
    );
    try {
      await second.ready;
      const e = await taken();
      const payers = [await fundedPayer(ETH), await fundedPayer(ETH)];
      const txs = [await overpay(e, payers[0], ETH / 4n), await overpay(e, payers[1], ETH / 8n)];
      const befores = await Promise.all(payers.map((p) => balance(p.address)));
      const rows = await mineUntil(async () => {
        const found = await Promise.all(txs.map((t) => rowNow(e, t)));
        return found.every((r) => r?.state === 'refunded') && (found as RefundRow[]);
      });
      assert.deepEqual(rows.map((r) => r.refundNonce).sort(), [0, 1]);
      for (const [i, row] of rows.entries()) {
        assert.equal(row.refundTo, payers[i].address.toLowerCase());
        assert.equal((await balance(payers[i].address)) - befores[i], BigInt(row.refundValue!));
      }
      assert.equal(await nonceOf(e.address), 2);
      assert.equal((await sourceOf(e)).noncesMined, 2);
    } finally {
      await second.stop(5000);
    }
  });

  it('when three transfers of one payer reach a taken deposit in one block, then one transaction pays them all back at one nonce: one fee, each row refunded by it with its share, the shares adding up to what the payer got', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const amounts = [ETH / 8n, ETH / 16n, ETH / 32n];
    const txs: Hex[] = [];
    for (const value of amounts) txs.push(await chain.sendRaw(await chain.signedTransfer(payer.key, e.address, value)));
    await chain.mine(CONFIRMATIONS);
    const before = await balance(payer.address);
    const rows = await mineUntil(async () => {
      const found = await Promise.all(txs.map((t) => rowNow(e, t)));
      return found.every((r) => r?.state === 'refunded') && (found as RefundRow[]);
    });
    assert.equal(new Set(rows.map((r) => r.refundTxHash)).size, 1, 'one transaction');
    assert.deepEqual(
      rows.map((r) => r.refundNonce),
      [0, 0, 0],
    );
    const mined = rows[0].refundVariants!.find((v) => v.hash === rows[0].refundTxHash)!;
    const paid = rows.reduce((sum, r) => sum + BigInt(r.refundValue!), 0n);
    assert.equal(paid, BigInt(mined.value), 'the shares add up to the value sent');
    assert.equal((await balance(payer.address)) - before, paid);
    // One fee for the three: what they brought less the value is one transaction's most cost.
    assert.equal(amounts.reduce((a, b) => a + b, 0n) - paid, BigInt(mined.gas) * BigInt(mined.maxFeePerGas ?? mined.gasPrice!));
    assert.equal(await nonceOf(e.address), 1);
    assert.equal((await sourceOf(e)).noncesMined, 1);
  });

  it('when a row is voided while its refund is out (a reorganisation the watcher reported), then the refunder takes the nonce back with a zero-value cancel to the address itself: nothing paid, the nonce counted; restored, it is paid at the next nonce', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    const before = await balance(payer.address);
    refuse = (call) => (call.method === 'eth_sendRawTransaction' ? { code: -32000, message: 'refused by the test' } : undefined);
    const paying = await rowMinedInto(e, tx, 'paying');
    const refund = paying.refundVariants![0];
    // From here on only the refund itself is refused: the cancel reaches the node alone.
    refuse = (call) =>
      call.method === 'eth_sendRawTransaction' && call.params[0] === refund.raw
        ? { code: -32000, message: 'refused by the test' }
        : undefined;
    assert.deepEqual((await readModel((ledger) => ledger.void([paying.id], 'reorged'))).voided, [paying.id]);
    const row = await mineUntil(async () => {
      const r = await rowNow(e, tx);
      return r?.refundBlock !== undefined && r;
    });
    assert.equal(row.state, 'void');
    const cancel = row.refundVariants!.find((v) => v.kind === 'cancel');
    assert.ok(cancel, 'a cancel was signed');
    assert.deepEqual([cancel.to, cancel.value], [e.address.toLowerCase(), '0']);
    assert.ok(BigInt(cancel.maxFeePerGas!) * 10n >= BigInt(refund.maxFeePerGas!) * 11n, 'the cancel outbids the refund');
    const receipt = await chain.client.getTransactionReceipt({ hash: cancel.hash as Hex });
    assert.equal(Number(receipt.blockNumber), row.refundBlock);
    assert.equal(row.refundTxHash, undefined);
    assert.equal(await balance(payer.address), before, 'nothing paid for a voided row');
    assert.equal(await nonceOf(e.address), 1);
    assert.equal((await sourceOf(e)).noncesMined, 1);
    // The transfer is on the chain after all (the watcher restores a row whose transfer it reads again):
    // owed afresh, and paid at the next nonce.
    assert.deepEqual(await readModel((ledger) => ledger.restore([paying.id])), [paying.id]);
    const paid = await rowMinedInto(e, tx, 'refunded');
    assert.equal(paid.refundNonce, 1);
    assert.equal(paid.feesSpent, (receipt.gasUsed * receipt.effectiveGasPrice).toString(), "the cancel's fee came out of the row");
    await paidOnce(e, paid, before, payer.address, 2);
  });

  it('when an address was issued before public derivation (the HMAC of the seed, as the build before issued it), then the prepare retried after the upgrade answers it, and a transfer to it is refunded from it', async () => {
    const as = { wallet: newWallet(), executionId: `legacy-${randomUUID()}` };
    const workflowId = executionWorkflowId(as.wallet.id, as.executionId);
    const seed = readDepositSeed(path.join(stack.tmpDir, 'deposit-seed'));
    const legacy = depositAddress(seed, CHAIN, workflowId, 'hmac-v0');
    assert.notEqual(legacy, depositAddress(seed, CHAIN, workflowId, 'bip32-v1'));
    // What the build before wrote for this prepare before it was cut off: the address, registered by HMAC.
    await readModel((_, __, ___, addresses) =>
      addresses.register({ chain: CHAIN, address: legacy, workflowId, minAmount: '1000', derivation: 'hmac-v0' }),
    );
    const e = await deposits.prepare({ minAmount: '1000', as });
    assert.equal(e.address, legacy, 'the address registered, not a new one');
    await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    await operationPending(e, 30_000);
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 2n);
    const before = await balance(payer.address);
    const row = await rowMinedInto(e, tx, 'refunded');
    await paidOnce(e, row, before, payer.address, 1);
  });

  it('when someone spends from a deposit address by hand, then automatic refunds from it stop: its next row is held as nonce-mismatch and nothing is signed', async () => {
    const e = await taken();
    const seed = readDepositSeed(path.join(stack.tmpDir, 'deposit-seed'));
    const key = depositKey(seed, CHAIN, executionWorkflowId(e.wallet.id, e.executionId), 'bip32-v1');
    assert.equal(privateKeyToAccount(key).address.toLowerCase(), e.address.toLowerCase());
    const payer = await fundedPayer(ETH);
    // By hand: 100 wei out of the deposit address, at its nonce 0 (its fee from a balance set for it).
    await chain.client.setBalance({ address: e.address as Address, value: ETH / 100n + 1000n });
    await chain.sendRaw(await chain.signedTransfer(key, payer.address, 100n));
    await chain.mine(1);
    assert.equal(await nonceOf(e.address), 1);
    const tx = await overpay(e, payer, ETH / 4n);
    const row = await rowMinedInto(e, tx, 'held');
    assert.equal(row.holdReason, 'nonce-mismatch');
    assert.equal(row.refundNonce, undefined);
    assert.equal(await nonceOf(e.address), 1);
    assert.equal((await sourceOf(e)).noncesMined, 0);
  });

  it("when a row's destination gets code that reverts (an EOA delegating to a contract), then its refund is held refund-reverts within 3 minutes, nothing signed; another address's refund beside it is paid, and the address's next row goes on", async () => {
    const [stuck, other] = [await taken(), await taken()];
    const reverter = await fundedPayer(ETH);
    const payer = await fundedPayer(ETH);
    // The transfers are an EOA's when the watcher reads them; the code comes after (EIP-7702 delegation, or anvil_setCode).
    const [stuckTx, otherTx] = [await overpay(stuck, reverter, ETH / 2n), await overpay(other, payer, ETH / 2n)];
    await rowOf(stuck, stuckTx);
    await chain.client.setCode({ address: reverter.address, bytecode: '0x60006000fd' }); // PUSH1 0 PUSH1 0 REVERT
    const started = Date.now();
    const before = await balance(payer.address);
    const held = await rowMinedInto(stuck, stuckTx, 'held', 180_000);
    assert.ok(Date.now() - started < 180_000);
    assert.equal(held.holdReason, 'refund-reverts');
    assert.equal(held.refundNonce, undefined, 'nothing was signed for it');
    assert.equal(await nonceOf(stuck.address), 0);
    await paidOnce(other, await rowMinedInto(other, otherTx, 'refunded'), before, payer.address, 1);
    // The held row does not stop its address: a later transfer from a payer without code is paid.
    const second = await fundedPayer(ETH);
    const secondTx = await overpay(stuck, second, ETH / 4n);
    const secondBefore = await balance(second.address);
    await paidOnce(stuck, await rowMinedInto(stuck, secondTx, 'refunded'), secondBefore, second.address, 1);
  });

  it("when the worker's node answers the address's nonce from a fresh backend and the refund's receipt from a lagging one, then the refund is not taken for someone else's: it waits for a second look and is recorded paid once the receipt shows", async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 2n);
    const before = await balance(payer.address);
    const paying = await rowMinedInto(e, tx, 'paying');
    const refundHashes = new Set(paying.refundVariants!.map((v) => v.hash.toLowerCase()));
    refuse = (call) =>
      call.method === 'eth_getTransactionReceipt' && refundHashes.has(String(call.params[0]).toLowerCase()) ? { result: null } : undefined;
    // Mined: the node's count says nonce 0 is used, its receipts say nothing is mined.
    await mineUntil(async () => (await nonceOf(e.address)) === 1);
    const seen = await eventually(
      async () => (await readModel((_, payments) => payments.next(CHAIN, e.address)))?.nonceGoneSeenBlock,
      30_000,
    );
    assert.ok(seen > 0, 'the refunder saw the nonce used without a receipt');
    assert.equal((await rowNow(e, tx))?.state, 'paying', 'one read decides nothing: still paying');
    refuse = () => undefined;
    await paidOnce(e, await rowMinedInto(e, tx, 'refunded'), before, payer.address, 1);
  });

  it('when 1 wei reaches each of 20 expired executions, and 30 one-wei transfers in 30 blocks reach one of them, then every row is held too-small as it is written: nothing due or paying, no refund workflow for those addresses, nothing to announce', async () => {
    const expired = await Promise.all(
      Array.from({ length: 20 }, () => deposits.prepare({ minAmount: '1000', idPrefix: 'dust', extra: { ttlSeconds: 1 } })),
    );
    for (const e of expired) await eventually(async () => (await deposits.record(e)).status === 'EXPIRED', 15_000);
    for (const e of expired) await chain.send(e.address, 1n);
    await chain.mine(1);
    for (let i = 0; i < 30; i++) {
      await chain.send(expired[0].address, 1n);
      await chain.mine(1);
    }
    await deposits.watcherPast((await chain.head()) + CONFIRMATIONS);
    const workflowIds = expired.map((e) => executionWorkflowId(e.wallet.id, e.executionId));
    const rows = (await readModel((ledger) => Promise.all(workflowIds.map((id) => ledger.ofExecution(id))))).flat();
    const perExecution = new Set(rows.map((r) => r.workflowId));
    assert.equal(perExecution.size, 20, 'every execution has its row: the money is on the books');
    assert.ok(rows.length >= 21, `the 30 transfers to one address are rows too (${rows.length} in all)`);
    assert.deepEqual(
      rows.filter((r) => r.state !== 'held' || r.holdReason !== 'too-small').map((r) => [r.state, r.holdReason, r.amount]),
      [],
      'nothing due or paying',
    );
    const ids = new Set(rows.map((r) => r.id));
    const [unannounced, unannouncedHeld] = await readModel((ledger) =>
      Promise.all([ledger.unannounced(1000), ledger.unannouncedHeld(1000)]),
    );
    assert.deepEqual(
      [...unannounced, ...unannouncedHeld].filter((r) => ids.has(r.id)),
      [],
      'no refund.due or refund.held to send',
    );
    for (const e of expired) {
      const described = await stack.client.workflow
        .getHandle(refundAddressWorkflowId(CHAIN, e.address.toLowerCase()))
        .describe()
        .then(
          () => 'started',
          () => 'never started',
        );
      assert.equal(described, 'never started', `a refund workflow for ${e.address}`);
    }
  });

  it('when a row is above the chain limit, then it is held above-limit until a person approves it (the approving token recorded), then paid once; a token without refunds:approve is refused', async () => {
    const e = await taken();
    const payer = await fundedPayer(3n * ETH);
    const tx = await overpay(e, payer, 2n * ETH);
    const held = await rowMinedInto(e, tx, 'held');
    assert.equal(held.holdReason, 'above-limit');
    assert.equal(held.refundNonce, undefined);
    const approve = (token: string) => request(stack.apiUrl, 'POST', `/api/v1/refunds/${held.id}/approve`, { json: {}, token });
    assert.equal((await approve(stack.token)).status, 403, 'refunds:write is not refunds:approve');
    const approver = createToken(stack.tokensFile, 'approver', ['refunds:approve']);
    const answer = await approve(approver);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual([answer.body.result.state, answer.body.result.approvedBy], ['due', 'approver']);
    assert.equal((await approve(approver)).status, 200, 'approving again changes nothing');
    const before = await balance(payer.address);
    const row = await rowMinedInto(e, tx, 'refunded');
    assert.equal(row.approvedBy, 'approver');
    await paidOnce(e, row, before, payer.address, 1);
    const refunded = await approve(approver);
    assert.equal(refunded.status, 200, 'approved before: the same answer');
  });

  it("when the README's walkthrough runs as written against this stack, then its late deposit comes back by itself: the row refunded to the refundAddress, 0.1 ETH less the fee", async () => {
    const [walkthrough] = docSnippets('../README.md', 'sh', 'Five minutes with it');
    assert.ok(walkthrough?.includes('refundAddress'), 'README "Five minutes with it" has its shell block, with the refund step');
    const back = '0x000000000000000000000000000000000000beef';
    const before = await balance(back);
    const miner = setInterval(() => void chain.mine(1).catch(() => undefined), 200);
    let out: string;
    try {
      const env = childEnv({ API_TOKENS_FILE: stack.tokensFile, CHAIN_RPC_URL: chain.url });
      const script = walkthrough.replaceAll('localhost:3000', new URL(stack.apiUrl).host);
      out = (await run('bash', ['-euo', 'pipefail', '-c', script], { env, cwd: projectRoot, timeout: 150_000 })).stdout;
    } finally {
      clearInterval(miner);
    }
    const lines = out.trim().split('\n');
    // curl prints the submit's answer without a newline: the next output follows on its line.
    assert.ok(out.includes('{"result":{"status":"SIGNING"}}'), out);
    const refundLine = lines.find((l) => l.startsWith('expired '));
    assert.ok(refundLine, out);
    const [reason, state, refundTo, refundValue, refundTxHash] = refundLine.split(' ');
    assert.deepEqual([reason, state, refundTo], ['expired', 'refunded', back]);
    assert.ok(BigInt(refundValue) < 10n ** 17n && BigInt(refundValue) > 10n ** 17n - 10n ** 15n, refundValue);
    assert.equal((await balance(back)) - before, BigInt(refundValue));
    assert.equal((await chain.client.getTransactionReceipt({ hash: refundTxHash as Hex })).status, 'success');
  });

  it("when the worker's metrics are read after the cases above, then the ledger gauges match the read model and this worker counted its replacements, cancel and stopped address", async () => {
    const rows = await readModel((ledger) => ledger.summary());
    const samples = await scrape(metricsUrl);
    for (const c of rows.counts)
      assert.equal(
        metricSum(samples, 'intent_refunds_rows', { state: c.state, hold_reason: c.holdReason ?? '' }),
        c.rows,
        JSON.stringify(c),
      );
    assert.ok(metricSum(samples, 'intent_refunds_rows', { state: 'refunded' }) >= 9);
    assert.ok(metricSum(samples, 'intent_refunds_replaced_total', { chain: CHAIN, variant: 'refund' }) >= 1);
    assert.ok(metricSum(samples, 'intent_refunds_replaced_total', { chain: CHAIN, variant: 'cancel' }) >= 1);
    assert.ok(metricSum(samples, 'intent_refunds_nonce_mismatch_total', { chain: CHAIN }) >= 1);
    assert.ok(metricSum(samples, 'intent_refunds_held_total', { chain: CHAIN, reason: 'above-limit' }) >= 1);
    assert.equal(metricSum(samples, 'intent_refunds_oldest_due_seconds'), 0, 'no row is left due');
  });

  it('when npm run reconcile reads the chain after the cases above, then it is balanced and confirms every refund the service paid; a refund recorded with another value is named and exits 1', async () => {
    const reconcile = () => runReconcile(stack, CHAIN);
    const paid = (await readModel((_, payments) => payments.paidBy(CHAIN))).filter((r) => r.state === 'refunded');
    assert.ok(paid.length >= 9, `refunds the service paid: ${paid.length}`);
    await deposits.watcherPast((await chain.head()) + CONFIRMATIONS + 1);
    const balanced = await reconcile();
    const [summary] = balanced.lines;
    assert.equal(balanced.code, 0, JSON.stringify(balanced.lines));
    assert.equal(summary.balanced, true);
    assert.deepEqual(summary.refundsPaid, { confirmed: paid.length, missing: 0 });
    const victim = paid[0];
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      await database.db.updateTable('refunds').set({ refund_value: '1' }).where('id', '=', victim.id).execute();
      const contradicted = await reconcile();
      assert.equal(contradicted.code, 1);
      assert.deepEqual(contradicted.lines[0].refundsPaid, { confirmed: paid.length - 1, missing: 1 });
      assert.deepEqual(
        contradicted.lines.filter((l) => l.refundMissing).map((l) => [l.refundMissing.id, l.refundMissing.why]),
        [[victim.id, 'other-value']],
      );
    } finally {
      await database.db.updateTable('refunds').set({ refund_value: victim.refundValue! }).where('id', '=', victim.id).execute();
      await database.close();
    }
  });

  it('when the refund workflows of every case above (kills, replacements, a cancel, two workers) are replayed with the current workflow code, then none fails', async () => {
    const query = `WorkflowType = 'refundAddressWorkflow' OR WorkflowType = 'refundSweepWorkflow'`;
    const { seen, failures } = await replayHistories(stack.client.workflow.list({ query }).intoHistories(), 'refund-histories');
    assert.deepEqual(failures, []);
    assert.ok((seen.get('refund') ?? 0) >= 10, `replayed refund histories: ${JSON.stringify([...seen])}`);
    assert.ok((seen.get('refund-sweep') ?? 0) >= 1, `replayed sweep histories: ${JSON.stringify([...seen])}`);
  });

  // Last: it puts an older read model back under the stack.
  it('when the read model is restored from a backup taken while a row was due, after the service paid it, then nothing is paid twice: the row is owed again but held nonce-mismatch, the address and the payer unchanged', async () => {
    const e = await taken();
    const payer = await fundedPayer(ETH);
    const tx = await overpay(e, payer, ETH / 4n);
    assert.equal((await rowOf(e, tx)).state, 'due');
    // Backed up while the service runs (SQLite's online backup), the row due: not yet deep enough to pay.
    const backup = path.join(stack.tmpDir, `read-model-backup-${Date.now()}.sqlite`);
    await run(process.execPath, [path.join(projectRoot, 'dist', 'scripts', 'db.js'), 'backup', backup], { env: stack.env() });
    const paid = await rowMinedInto(e, tx, 'refunded');
    const payerAfter = await balance(payer.address);
    assert.equal(await nonceOf(e.address), 1);

    // The restore runbook without its first step (refunds off): the worst case, the refunder runs on the old ledger at once.
    await stack.killWorker();
    await ProcessStack.kill(stack.api);
    const file = path.join(stack.tmpDir, 'read-model.sqlite');
    for (const suffix of ['-wal', '-shm']) rmSync(file + suffix, { force: true });
    copyFileSync(backup, file);
    await stack.startApi();
    await stack.startWorker();
    const restored = await rowNow(e, tx);
    assert.ok(restored && restored.id === paid.id, 'the row is in the restored ledger: nothing owed is lost');
    const held = await rowMinedInto(e, tx, 'held');
    assert.equal(held.holdReason, 'nonce-mismatch');
    assert.equal(held.refundNonce, undefined, 'nothing signed');
    await chain.mine(REPLACE_AFTER + 2);
    assert.equal(await nonceOf(e.address), 1, 'no second refund left the address');
    assert.equal(await balance(payer.address), payerAfter);
    // The runbook's last step: the refund the chain shows is recorded by hand, once.
    const settled = await request(stack.apiUrl, 'POST', `/api/v1/refunds/${held.id}/refunded`, {
      json: { txHash: paid.refundTxHash },
      token: stack.token,
    });
    assert.equal(settled.status, 200, settled.text);
    assert.equal(settled.body.result.state, 'refunded');
  });
});
