import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { erc20Abi, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { RefundRow } from '../../contracts/refunds';
import { executionWorkflowId } from '../../contracts/temporal';
import type { TopUp } from '../../db/gas-account';
import { ANVIL_GAS_ACCOUNT } from '../../scripts/lib/anvil';
import { startChildService } from '../../scripts/lib/child-service';
import { projectRoot } from '../../config/config';
import { createToken } from '../../tokens/token-store';
import { TestChain } from '../support/chain';
import { eventually } from '../support/executions';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { freePort } from '../support/ports';
import { ProcessStack } from '../support/process-stack';
import { metricSum, scrape } from '../support/prometheus';
import { request } from '../support/http';
import { refundReads } from '../support/refund-reads';
import { runReconcile } from '../support/reconcile-run';
import { startRpcRelay, type RpcAnswer, type RpcCall } from '../support/rpc-relay';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
/** tUSD has 6 decimals: one tUSD. */
const USD = 10n ** 6n;

/**
 * Token refunds the service pays by itself, on a real anvil chain (automine off: the test mines),
 * with tUSD deployed and allowed, a real Temporal dev server, the worker and the API as real
 * processes. The whole amount goes back by the token's transfer(); the fee is paid by the gas
 * account (anvil's second dev account), which tops the deposit address up first. The worker's
 * node is a loopback relay the test can make refuse eth_sendRawTransaction.
 */
describe('token refunds: the whole amount back, the fee paid by the gas account, on a real anvil chain', function () {
  this.timeout(240_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let tusd: Address;
  let tmp: string;
  let metricsUrl: string;
  let relay: { url: string; close: () => void };
  let refuse: (call: RpcCall) => RpcAnswer | undefined = () => undefined;

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    relay = await startRpcRelay(chain.url, (call) => refuse(call));
    tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-gas-key-'));
    const gasKeyFile = path.join(tmp, 'gas-account.key');
    writeFileSync(gasKeyFile, `${ANVIL_GAS_ACCOUNT.privateKey}\n`, { mode: 0o600 });
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    // No REFUND_LIMITS nor REFUND_MINIMUMS: the dev chain's defaults for tUSD (pay up to 1,000, hold below 0.01) apply by its symbol.
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      CHAIN_RPC_URL: relay.url,
      CHAIN_REORG_WINDOW: '6',
      REFUND_PAYMENTS: 'on',
      REFUND_GAS_KEY_FILE: gasKeyFile,
      WORKER_METRICS_PORT: String(metricsPort),
    });
  });
  after(async () => {
    await stack?.stop();
    relay?.close();
    await chain?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });
  afterEach(() => {
    refuse = () => undefined;
  });

  const deposits = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const { readModel, rowOf, rowMinedInto, mineUntil } = refundReads(
    () => stack,
    () => chain,
  );

  const tokenBalance = (address: string) =>
    chain.client.readContract({ address: tusd, abi: erc20Abi, functionName: 'balanceOf', args: [address as Address] });
  const nativeBalance = (address: string) => chain.client.getBalance({ address: address as Address });
  const topUpsOf = (row: RefundRow) => readModel((_, __, gas) => gas.ofRefund(row.id));

  /** The row of `tx` to `e` once it is paying with its one top-up recorded, mining a block at a time meanwhile. */
  const payingWithTopUp = (e: PreparedDeposit, tx: Hex) =>
    mineUntil(async () => {
      const row = await rowOf(e, tx);
      const topUps = row.state === 'paying' ? await topUpsOf(row) : [];
      return topUps.length === 1 && row;
    });

  /** A tUSD execution with `refundAddress` that expired without a deposit, then `amount` tUSD sent to it (and `also`, in the same block), mined CONFIRMATIONS deep. */
  async function lateDeposit(
    refundAddress: string,
    amount: bigint,
    also: readonly bigint[] = [],
  ): Promise<{ e: PreparedDeposit; tx: Hex; more: Hex[] }> {
    const asset = `erc20:${tusd.toLowerCase()}`;
    const e = await deposits.prepare({
      asset,
      minAmount: String(USD),
      idPrefix: 'token-refund',
      extra: { ttlSeconds: 1, deposit: { chain: CHAIN, asset, minAmount: String(USD), refundAddress } },
    });
    await eventually(async () => (await deposits.record(e)).status === 'EXPIRED', 15_000);
    const tx = await chain.sendToken(tusd, e.address, amount);
    const more: Hex[] = [];
    for (const value of also) more.push(await chain.sendToken(tusd, e.address, value));
    await chain.mine(CONFIRMATIONS);
    return { e, tx, more };
  }

  /** A fresh address nobody holds anything at. */
  const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;

  /**
   * The checks every paid token row ends with: the whole amount at its destination by the token's
   * Transfer from the deposit address, every top-up from the gas account mined once, and what
   * they left recorded and on the address.
   */
  async function paidWhole(e: PreparedDeposit, row: RefundRow, to: string, amount: bigint): Promise<TopUp[]> {
    assert.equal(row.state, 'refunded');
    assert.equal(row.refundTo, to.toLowerCase());
    assert.equal(row.refundValue, String(amount));
    assert.equal(await tokenBalance(to), amount, 'the whole amount, nothing taken for the fee');
    assert.equal(await tokenBalance(e.address), 0n);
    const mined = row.refundVariants!.find((v) => v.hash === row.refundTxHash)!;
    assert.equal(mined.to, tusd.toLowerCase());
    assert.equal(mined.value, '0');
    const tx = await chain.client.getTransaction({ hash: row.refundTxHash as Hex });
    assert.equal(tx.from.toLowerCase(), e.address.toLowerCase());
    const receipt = await chain.client.getTransactionReceipt({ hash: row.refundTxHash as Hex });
    const topUps = await topUpsOf(row);
    assert.ok(topUps.length >= 1);
    let toppedUp = 0n;
    for (const t of topUps) {
      assert.equal(t.state, 'mined');
      assert.equal(t.account, ANVIL_GAS_ACCOUNT.address.toLowerCase());
      assert.equal(t.to, e.address.toLowerCase());
      const sent = await chain.client.getTransaction({ hash: t.txHash as Hex });
      assert.equal(sent.from.toLowerCase(), ANVIL_GAS_ACCOUNT.address.toLowerCase());
      assert.equal(sent.nonce, t.nonce);
      assert.equal(sent.value, BigInt(t.value));
      toppedUp += BigInt(t.value);
    }
    // Topped up exactly what the node checks before it takes the refund: gas × fee cap.
    assert.equal(toppedUp, BigInt(mined.gas) * BigInt(mined.maxFeePerGas ?? mined.gasPrice!));
    const fee = receipt.gasUsed * receipt.effectiveGasPrice;
    assert.equal(row.gasLeft, String(toppedUp - fee));
    assert.equal(await nativeBalance(e.address), toppedUp - fee, 'what the top-ups left stays on the deposit address');
    return topUps;
  }

  it('when tUSD reaches an expired execution, then the service pays it back whole to the refundAddress, the fee paid by a top-up from the gas account; the top-up is never a deposit nor a ledger row', async () => {
    const back = freshAddress();
    const { e, tx } = await lateDeposit(back, 5n * USD);
    const due = await rowOf(e, tx);
    assert.deepEqual([due.asset, due.amount, due.reason], [`erc20:${tusd.toLowerCase()}`, String(5n * USD), 'expired']);
    const row = await rowMinedInto(e, tx, 'refunded');
    const [topUp] = await paidWhole(e, row, back, 5n * USD);
    // The top-up paid a deposit address: the watcher read it and took it for the service's own.
    await deposits.watcherPast(topUp.block! + CONFIRMATIONS);
    const rows = await readModel((ledger) => ledger.ofExecution(executionWorkflowId(e.wallet.id, e.executionId)));
    assert.deepEqual(
      rows.map((r) => r.txHash),
      [tx.toLowerCase()],
      'one row: the tUSD transfer, never the top-up',
    );
    assert.deepEqual(await readModel((ledger) => ledger.ofTransaction(CHAIN, topUp.txHash!)), []);
    // Reported as a deposit by hand, the API's proof refuses it for the service's own and writes nothing.
    const reported = await deposits.api('POST', `/api/v1/executions/${e.wallet.id}/${e.executionId}/deposit`, {
      txHash: topUp.txHash,
      asset: 'native',
    });
    assert.equal(reported.status, 409, reported.text);
    assert.match(reported.body.error, /this transfer is no deposit: .*gas account.*gas top-up/);
    assert.deepEqual(await readModel((ledger) => ledger.ofTransaction(CHAIN, topUp.txHash!)), []);
    assert.equal((await deposits.record(e)).status, 'EXPIRED');
    // The depositor's lookup of their transaction sees it refunded, with the refund's transaction.
    const lookup = await request(stack.apiUrl, 'GET', `/api/v1/deposits/${CHAIN}/${tx}`);
    assert.equal(lookup.status, 200, lookup.text);
    assert.equal(JSON.stringify(lookup.body).includes(row.refundTxHash!), true, lookup.text);
    // The operator sees the gas account's balance, and the top-up counted.
    const metrics = await eventually(async () => {
      const samples = await scrape(metricsUrl);
      return metricSum(samples, 'intent_refunds_gas_topups_total') >= 1 && samples;
    }, 30_000);
    const balance = metricSum(metrics, 'intent_refunds_gas_account_balance_wei');
    assert.ok(balance > 0 && balance <= Number(await nativeBalance(ANVIL_GAS_ACCOUNT.address)) * 1.01, `gas balance metric ${balance}`);
  });

  it('when two workers pay three token refunds at once, then the gas account top-ups (several may be out at once) take consecutive nonces, none lost, its chain nonce the count the read model keeps', async () => {
    const second = startChildService('token-worker-2', process.execPath, [path.join(projectRoot, 'dist', 'worker', 'main.js')], {
      readyPattern: /worker polling task queue/,
      env: stack.env(),
      echo: false,
    });
    try {
      await second.ready;
      const nonceBefore = await chain.client.getTransactionCount({ address: ANVIL_GAS_ACCOUNT.address, blockTag: 'latest' });
      const backs = [freshAddress(), freshAddress(), freshAddress()];
      const late: Array<{ e: PreparedDeposit; tx: Hex }> = [];
      for (const [i, back] of backs.entries()) late.push(await lateDeposit(back, BigInt(i + 2) * USD));
      const rows = await mineUntil(async () => {
        const found = await Promise.all(late.map(({ e, tx }) => rowOf(e, tx)));
        return found.every((r) => r.state === 'refunded') && found;
      }, 150_000);
      const topUps: TopUp[] = [];
      for (const [i, row] of rows.entries()) topUps.push(...(await paidWhole(late[i].e, row, backs[i], BigInt(i + 2) * USD)));
      const nonces = topUps.map((t) => t.nonce).sort((a, b) => a - b);
      assert.deepEqual(
        nonces,
        nonces.map((_, i) => nonceBefore + i),
        'one top-up per nonce, none skipped',
      );
      const accounts = await readModel((_, __, gas) => gas.accounts());
      assert.equal(accounts.find((a) => a.address === ANVIL_GAS_ACCOUNT.address.toLowerCase())?.noncesMined, nonceBefore + nonces.length);
      assert.equal(
        await chain.client.getTransactionCount({ address: ANVIL_GAS_ACCOUNT.address, blockTag: 'latest' }),
        nonceBefore + nonces.length,
      );
    } finally {
      await second.stop(5000);
    }
  });

  it('when three tUSD transfers reach one expired execution in one block, then one transaction pays them all back whole, after one top-up: each row refunded by it with its own amount', async () => {
    const back = freshAddress();
    const { e, tx, more } = await lateDeposit(back, 2n * USD, [3n * USD, 4n * USD]);
    const txs = [tx, ...more];
    const rows = await mineUntil(async () => {
      const found = await Promise.all(txs.map((t) => rowOf(e, t)));
      return found.every((r) => r.state === 'refunded') && found;
    }, 150_000);
    assert.equal(new Set(rows.map((r) => r.refundTxHash)).size, 1, 'one transaction');
    assert.deepEqual(
      rows.map((r) => r.refundValue),
      [2n, 3n, 4n].map((n) => String(n * USD)),
    );
    assert.equal(await tokenBalance(back), 9n * USD, 'the whole amounts, nothing taken for the fee');
    assert.equal(await tokenBalance(e.address), 0n);
    const topUps = (await Promise.all(rows.map((r) => topUpsOf(r)))).flat();
    assert.equal(topUps.length, 1, 'one top-up for the three');
    assert.equal(await chain.client.getTransactionCount({ address: e.address as Hex, blockTag: 'latest' }), 1);
  });

  it('when the worker is killed with a top-up recorded and never sent, then a new worker sends that very top-up (no second one) and the refund is paid once', async () => {
    refuse = (call) => (call.method === 'eth_sendRawTransaction' ? { code: -32000, message: 'refused by the test' } : undefined);
    const back = freshAddress();
    const { e, tx } = await lateDeposit(back, 7n * USD);
    const paying = await payingWithTopUp(e, tx);
    const [recorded] = await topUpsOf(paying);
    assert.equal(recorded.state, 'sending');
    await ProcessStack.kill(stack.worker);
    refuse = () => undefined;
    await stack.startWorker();
    const row = await rowMinedInto(e, tx, 'refunded');
    const topUps = await paidWhole(e, row, back, 7n * USD);
    assert.equal(topUps.length, 1, 'the top-up recorded before the kill, no other');
    assert.equal(topUps[0].txHash, recorded.variants[0].hash);
  });

  it("when the node answers the gas account's nonce from a fresh backend and the top-up's receipt from a lagging one, then the top-up is not recorded lost at that read: it waits for a second look, is recorded mined once the receipt shows, and the refund is paid once", async () => {
    const back = freshAddress();
    const { e, tx } = await lateDeposit(back, 6n * USD);
    const paying = await payingWithTopUp(e, tx);
    const [topUp] = await topUpsOf(paying);
    const hashes = new Set(topUp.variants.map((v) => v.hash.toLowerCase()));
    refuse = (call) =>
      call.method === 'eth_getTransactionReceipt' && hashes.has(String(call.params[0]).toLowerCase()) ? { result: null } : undefined;
    const account = ANVIL_GAS_ACCOUNT.address;
    const before = await chain.client.getTransactionCount({ address: account, blockTag: 'latest' });
    await mineUntil(async () => (await chain.client.getTransactionCount({ address: account, blockTag: 'latest' })) > before);
    const seen = await eventually(async () => (await topUpsOf(paying))[0].nonceGoneSeenBlock, 30_000);
    assert.ok(seen > 0, 'the refunder saw the nonce used without a receipt');
    assert.equal((await topUpsOf(paying))[0].state, 'sending', 'one read decides nothing: not lost');
    refuse = () => undefined;
    const row = await rowMinedInto(e, tx, 'refunded');
    const topUps = await paidWhole(e, row, back, 6n * USD);
    assert.deepEqual(
      topUps.map((t) => [t.id, t.state]),
      [[topUp.id, 'mined']],
      'the one top-up, recorded mined, none lost and none sent again',
    );
  });

  it("when npm run reconcile reads the chain after the cases above, then it is balanced: the top-ups are the service's own transfers, and every token refund is confirmed by its Transfer log", async () => {
    const paid = (await readModel((_, payments) => payments.paidBy(CHAIN))).filter((r) => r.state === 'refunded');
    const topUps = await readModel(async (_, __, gas) => (await Promise.all(paid.map((r) => gas.ofRefund(r.id)))).flat());
    // Rows paid together share their transaction and its top-ups: at least one top-up per transaction.
    const transactions = new Set(paid.map((r) => r.refundTxHash)).size;
    assert.ok(
      paid.length >= 5 && topUps.length >= transactions,
      `${paid.length} refunds in ${transactions} transactions, ${topUps.length} top-ups`,
    );
    await deposits.watcherPast((await chain.head()) + CONFIRMATIONS + 1);
    const { code, lines } = await runReconcile(stack, CHAIN);
    assert.equal(code, 0, JSON.stringify(lines));
    const [summary] = lines;
    assert.deepEqual(summary.refundsPaid, { confirmed: paid.length, missing: 0 });
    assert.ok(summary.refundTransfers >= topUps.length, `refundTransfers ${summary.refundTransfers}`);
  });

  it('when a token row is above its limit it is held until a person approves it (the token recorded), then paid whole; one below the minimum is held as too small', async () => {
    const back = freshAddress();
    const big = await lateDeposit(back, 1500n * USD);
    const held = await rowMinedInto(big.e, big.tx, 'held');
    assert.equal(held.holdReason, 'above-limit');
    const approver = createToken(stack.tokensFile, 'token-approver', ['refunds:approve']);
    const answer = await request(stack.apiUrl, 'POST', `/api/v1/refunds/${held.id}/approve`, { json: {}, token: approver });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual([answer.body.result.state, answer.body.result.approvedBy], ['due', 'token-approver']);
    const row = await rowMinedInto(big.e, big.tx, 'refunded');
    assert.equal(row.approvedBy, 'token-approver');
    await paidWhole(big.e, row, back, 1500n * USD);

    const dust = await lateDeposit(freshAddress(), 5000n);
    const small = await rowMinedInto(dust.e, dust.tx, 'held');
    assert.equal(small.holdReason, 'too-small');
    assert.equal(small.refundNonce, undefined);
    assert.deepEqual(await topUpsOf(small), [], 'no gas spent on dust');
    // The depositor's lookup says it is held, and why.
    const lookup = await request(stack.apiUrl, 'GET', `/api/v1/deposits/${CHAIN}/${dust.tx}`);
    assert.equal(lookup.status, 200, lookup.text);
    assert.match(lookup.text, /too-small/);
  });
});
