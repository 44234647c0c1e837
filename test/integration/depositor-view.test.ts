import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { erc20Abi, parseEventLogs, type Address, type Hex } from 'viem';
import { IntentClient, type WatchEvent } from '@intent-service/client';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { loadConfig } from '../../config/config';
import { ANVIL_DEV_ACCOUNT, ANVIL_GAS_ACCOUNT } from '../../scripts/lib/anvil';
import { TestChain } from '../support/chain';
import { eventually, signedBody } from '../support/executions';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { request, type HttpAnswer } from '../support/http';
import { answerChecker } from '../support/openapi-check';
import type { ProcessStack } from '../support/process-stack';
import { readEventStream, type SseEvent } from '../support/sse';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
/** A transfer is paid back once it is deeper than this. */
const WINDOW = 6;
const ETH = 10n ** 18n;
const USD = 10n ** 6n;

/**
 * What a depositor sees of one execution's transfers, end to end: the deposit lookup (no token),
 * the record's refund rows and the execution's event stream (on the wire and through the SDK),
 * for a transfer taken, one the service pays back (native, and a token with the gas account's
 * top-up) and one held for a person. A real anvil chain (automine off: the test mines every block),
 * a real Temporal dev server, the worker (refunds on) and the API as real processes.
 */
describe("the depositor's view: a transfer taken, one refunded (native and tUSD), one held, on a real anvil chain", function () {
  this.timeout(240_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let tusd: Address;
  let tmp: string;
  const check = answerChecker(buildOpenApiDocument(loadConfig({})) as Parameters<typeof answerChecker>[0]);

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-gas-key-'));
    const gasKeyFile = path.join(tmp, 'gas-account.key');
    writeFileSync(gasKeyFile, `${ANVIL_GAS_ACCOUNT.privateKey}\n`, { mode: 0o600 });
    // tUSD's dev-chain limits apply by its symbol: paid up to 1,000 without approval.
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      CHAIN_REORG_WINDOW: String(WINDOW),
      REFUND_PAYMENTS: 'on',
      REFUND_GAS_KEY_FILE: gasKeyFile,
      SSE_POLL_MS: '100',
    });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const { operationPending, ...deposits } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );

  let e: PreparedDeposit;
  /** What no lookup answer may hold: the intent, the signature and what else only the record has. */
  let secrets: string[] = [];

  /** The lookup without a token, its answer checked against the OpenAPI document and for the record's secrets. */
  async function lookup(txHash: string): Promise<HttpAnswer> {
    const res = await request(stack.apiUrl, 'GET', `/api/v1/deposits/${CHAIN}/${txHash}`);
    if (res.status === 200) {
      check('/api/v1/deposits/{chain}/{txHash}', 'GET', res.status, res.body);
      assert.ok(!/"(intent|intentHash|signedPayload|signature|signerPublicKey|connectEnvelope)"/.test(res.text), res.text);
      for (const secret of secrets) assert.ok(!res.text.includes(secret), `the lookup shows ${secret}: ${res.text}`);
    }
    return res;
  }

  /** The lookup's one entry for `txHash` once `done` holds for it, mining a block at a time meanwhile when `mine`. */
  async function entryOnce(txHash: string, done: (entry: any) => boolean, mine = false): Promise<any> {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const res = await lookup(txHash);
      // Each of these transactions is one transfer: one entry.
      const entry = res.status === 200 ? res.body.result[0] : undefined;
      if (entry && done(entry)) return entry;
      if (Date.now() > deadline) throw new Error(`not reached: ${res.text}`);
      if (mine) await chain.mine(1);
      await sleep(150);
    }
  }

  /** The SDK's watch of `e`, collected until it ends or `stop` aborts it. */
  function watch(stop?: AbortSignal): { events: WatchEvent[]; done: Promise<void> } {
    const events: WatchEvent[] = [];
    const done = (async () => {
      try {
        for await (const event of new IntentClient({ baseUrl: stack.apiUrl }).watch(e.wallet.id, e.executionId, {
          reconnectDelayMs: 100,
          signal: stop,
        }))
          events.push(event);
      } catch (err) {
        if (!stop?.aborted) throw err;
      }
    })();
    return { events, done };
  }

  const streamUrl = () => `${stack.apiUrl}/api/v1/executions/${e.wallet.id}/${e.executionId}/events`;
  const refundStates = (events: readonly SseEvent[], id: string) =>
    events.filter((x) => x.event === 'refund' && JSON.parse(x.data).id === id).map((x) => JSON.parse(x.data).state as string);

  it('when a transfer is the deposit of an execution that was then signed, then the lookup answers it taken with SIGNING, and shows nothing of the intent or the signed payload', async () => {
    e = await deposits.prepare({ minAmount: '1000', idPrefix: 'depositor' });
    const takenTx = await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    await operationPending(e, 30_000);
    const submit = await request(stack.apiUrl, 'POST', `/api/v1/executions/${e.wallet.id}/submit`, {
      json: signedBody(e.wallet, e.executionId, e.body.intent),
    });
    assert.equal(submit.status, 200, submit.text);
    const record = await eventually(async () => {
      const r = await deposits.record(e);
      return r.status === 'SIGNING' && r.signedPayload !== undefined && r;
    }, 30_000);
    secrets = [record.signedPayload!.signature, record.intentHash, record.signerPublicKey, (e.body.intent as { nonce: string }).nonce];

    const entry = await entryOnce(takenTx, (x) => x.status === 'SIGNING');
    assert.deepEqual(entry, {
      chain: CHAIN,
      txHash: takenTx.toLowerCase(),
      transferIndex: 0,
      asset: 'native',
      amount: '1000',
      wallet: e.wallet.id,
      executionId: e.executionId,
      status: 'SIGNING',
      outcome: 'taken',
    });
  });

  let refunded: any;

  it('when a second transfer is paid back by the service, then the lookup answers it owed and refunded with its refundTxHash, and the event stream opened while it was due carries it to refunded and ends (on the wire and in the SDK); a reconnect after it is 204', async () => {
    const tx = await chain.send(e.address, ETH / 2n);
    await chain.mine(CONFIRMATIONS);
    const due = await entryOnce(tx, (x) => x.refund?.state === 'due');
    assert.deepEqual([due.outcome, due.status, due.refund.reason], ['owed', 'SIGNING', 'other-tx']);

    // Not deep enough to be paid until the test mines: both streams open while the row is due.
    const sdk = watch();
    let wireOpen = false;
    const wire = readEventStream(streamUrl(), { onEvent: (x) => (wireOpen ||= x.event === 'refund') });
    await eventually(async () => wireOpen && sdk.events.some((x) => x.event === 'refund'), 10_000, 50);

    refunded = await entryOnce(tx, (x) => x.refund.state === 'refunded', true);
    assert.match(refunded.refund.refundTxHash, /^0x[0-9a-f]{64}$/);
    assert.equal(refunded.refund.refundTo, ANVIL_DEV_ACCOUNT.address.toLowerCase());
    const refundTx = await chain.client.getTransaction({ hash: refunded.refund.refundTxHash as Hex });
    assert.equal(refundTx.from.toLowerCase(), e.address.toLowerCase());
    assert.equal(refundTx.value, BigInt(refunded.refund.refundValue));
    assert.equal((await chain.client.getTransactionReceipt({ hash: refundTx.hash })).status, 'success');

    // Both streams end by themselves: SIGNING, and the only row settled.
    const [{ events: raw }] = await Promise.all([wire, sdk.done]);
    const states = refundStates(raw, refunded.refund.id);
    assert.equal(states[0], 'due', raw.map((x) => x.data).join('\n'));
    assert.equal(states.at(-1), 'refunded');
    assert.deepEqual(
      states.filter((s, i) => s !== states[i - 1]),
      ['due', 'paying', 'refunded'].filter((s) => states.includes(s)),
      'each state once, in order',
    );
    const last = JSON.parse(raw.at(-1)!.data);
    assert.deepEqual([raw.at(-1)!.event, last.state, last.refundTxHash], ['refund', 'refunded', refunded.refund.refundTxHash]);
    assert.match(raw.at(-1)!.id ?? '', /^\d+\.[0-9a-f]{16}$/, 'the last event carries the stream position');
    assert.deepEqual(
      raw.filter((x) => x.event === 'status').map((x) => JSON.parse(x.data).status),
      ['SIGNING'],
    );
    const again = await readEventStream(streamUrl(), { headers: { 'last-event-id': raw.at(-1)!.id! } });
    assert.equal(again.status, 204);

    const seen = sdk.events.map((x) => (x.event === 'status' ? x.status : x.refund.state));
    assert.equal(seen.at(-1), 'refunded');
    assert.ok(seen.includes('SIGNING') && seen.includes('due'), seen.join(' '));
    const paid = sdk.events.at(-1)!;
    assert.equal(paid.event === 'refund' && paid.refund.refundTxHash, refunded.refund.refundTxHash);
  });

  it('when a third transfer is too small to pay back, then the lookup answers it held with its reason, the record lists both rows, and the event stream stays open while it is held', async () => {
    const tx = await chain.send(e.address, 4000n);
    await chain.mine(CONFIRMATIONS);
    const held = await entryOnce(tx, (x) => x.refund?.state === 'held', true);
    assert.deepEqual(
      [held.outcome, held.status, held.amount, held.refund.reason, held.refund.holdReason, held.refund.refundTxHash],
      ['owed', 'SIGNING', '4000', 'other-tx', 'too-small', undefined],
    );

    const record = await deposits.record(e);
    assert.deepEqual(
      record.refunds?.rows?.map((r) => [r.id, r.state, r.holdReason, r.refundTxHash]),
      [
        [refunded.refund.id, 'refunded', undefined, refunded.refund.refundTxHash],
        [held.refund.id, 'held', 'too-small', undefined],
      ],
    );

    const stop = new AbortController();
    const wire = readEventStream(streamUrl(), { signal: stop.signal });
    const sdk = watch(stop.signal);
    await eventually(async () => sdk.events.some((x) => x.event === 'refund' && x.refund.state === 'held'), 10_000, 50);
    // Many polls later the stream is still open: a held row may still change.
    let ended = false;
    void wire.then(() => (ended = true));
    await sleep(1500);
    assert.equal(ended, false, 'the stream stays open while a row is held');
    stop.abort();
    const { events: raw } = await wire;
    await sdk.done;
    assert.deepEqual(refundStates(raw, held.refund.id), ['held']);
    assert.deepEqual(refundStates(raw, refunded.refund.id), ['refunded']);
    assert.equal(
      JSON.parse(raw.find((x) => x.event === 'refund' && JSON.parse(x.data).id === held.refund.id)!.data).holdReason,
      'too-small',
    );
  });

  it("when tUSD reaches the same deposit address, then the lookup answers it owed and refunded whole (refundValue its amount, the fee the gas account's), and the stream carries it refunded beside the held row", async () => {
    const tx = await chain.sendToken(tusd, e.address, 5n * USD);
    await chain.mine(CONFIRMATIONS);
    const owed = await entryOnce(tx, (x) => x.refund !== undefined);
    assert.deepEqual([owed.outcome, owed.asset, owed.amount], ['owed', `erc20:${tusd.toLowerCase()}`, String(5n * USD)]);
    const paid = await entryOnce(tx, (x) => x.refund.state === 'refunded', true);
    assert.equal(paid.refund.refundValue, String(5n * USD), 'a token refund pays the whole amount');
    assert.equal(paid.refund.refundTo, ANVIL_DEV_ACCOUNT.address.toLowerCase());
    const receipt = await chain.client.getTransactionReceipt({ hash: paid.refund.refundTxHash as Hex });
    assert.equal(receipt.status, 'success');
    const [transfer] = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs });
    assert.deepEqual(
      [transfer?.address.toLowerCase(), transfer?.args.from.toLowerCase(), transfer?.args.to.toLowerCase(), transfer?.args.value],
      [tusd.toLowerCase(), e.address.toLowerCase(), ANVIL_DEV_ACCOUNT.address.toLowerCase(), 5n * USD],
    );

    const stop = new AbortController();
    const rows = new Map<string, any>();
    const wire = readEventStream(streamUrl(), {
      signal: stop.signal,
      onEvent: (x) => x.event === 'refund' && rows.set(JSON.parse(x.data).id, JSON.parse(x.data)),
    });
    await eventually(async () => rows.get(paid.refund.id)?.state === 'refunded', 10_000, 50);
    stop.abort();
    await wire;
    assert.deepEqual(
      [...rows.values()].map((r) => [r.asset, r.state, r.holdReason]),
      [
        ['native', 'refunded', undefined],
        ['native', 'held', 'too-small'],
        [`erc20:${tusd.toLowerCase()}`, 'refunded', undefined],
      ],
    );
    assert.equal(rows.get(paid.refund.id).refundTxHash, paid.refund.refundTxHash);
  });
});
