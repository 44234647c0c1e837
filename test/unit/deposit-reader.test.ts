import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PublicClient } from 'viem';
import { DepositReader } from '../../lib/chain-reader';
import { openDatabase, type Database } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { addressTopic, TRANSFER_TOPIC } from '../../domain/transfers';

const CHAIN = 'evm:31337';
const addr = (byte: string) => `0x${byte.repeat(20)}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
/** Deposit addresses A and B; an outside payer P; a contract wallet F; an allowed token T. */
const [A, B, P, F, T] = [addr('aa'), addr('bb'), addr('11'), addr('f0'), addr('70')];
const BLOCK_HASH = hash(0xb10c);

/**
 * A node that answers one block (number 5) whose transactions pay deposit addresses: P pays A (a
 * deposit); A pays B (the service's own transfer); internal calls pay B from F (a contract's
 * payment: a deposit) and from A (the service's); token T moves A → B (the service's) and P → B.
 */
function fakeNode(): PublicClient {
  const txs = [
    { hash: hash(1), from: P, to: A, value: 10n },
    { hash: hash(2), from: A, to: B, value: 7n },
    { hash: hash(3), from: P, to: F, value: 0n },
    { hash: hash(4), from: A, to: T, value: 0n },
  ];
  const traces = [
    { txHash: hash(1), result: { type: 'CALL', from: P, to: A, value: '0xa' } },
    { txHash: hash(2), result: { type: 'CALL', from: A, to: B, value: '0x7' } },
    {
      txHash: hash(3),
      result: {
        type: 'CALL',
        from: P,
        to: F,
        value: '0x0',
        calls: [
          { type: 'CALL', from: F, to: B, value: '0x3' },
          { type: 'CALL', from: A, to: B, value: '0x4' },
        ],
      },
    },
    { txHash: hash(4), result: { type: 'CALL', from: A, to: T, value: '0x0' } },
  ];
  const log = (txHash: string, logIndex: number, from: string, amount: number) => ({
    address: T,
    topics: [TRANSFER_TOPIC, addressTopic(from), addressTopic(B)],
    data: `0x${amount.toString(16).padStart(64, '0')}`,
    blockNumber: '0x5',
    blockHash: BLOCK_HASH,
    transactionHash: txHash,
    logIndex: `0x${logIndex.toString(16)}`,
  });
  const logs = [log(hash(4), 0, A, 50), log(hash(4), 1, P, 60)];
  return {
    getBlock: async ({ blockNumber }: { blockNumber: bigint }) => {
      assert.equal(blockNumber, 5n);
      return { number: 5n, hash: BLOCK_HASH, parentHash: hash(0xb10b), transactions: txs };
    },
    request: async ({ method }: { method: string }) => {
      if (method === 'debug_traceTransaction') throw new Error('transaction not found');
      if (method === 'debug_traceBlockByHash') return traces;
      if (method === 'eth_getLogs') return logs;
      if (method === 'eth_getBlockReceipts') return [{ transactionHash: hash(4), logs: logs.map((l) => ({ logIndex: l.logIndex })) }];
      throw new Error(`unexpected ${method}`);
    },
  } as unknown as PublicClient;
}

describe('lib/chain-reader DepositReader: the transfers a round reads', () => {
  let dir: string;
  let database: Database;
  let store: DepositAddressStore;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deposit-reader-'));
    database = await openDatabase({ sqliteFile: path.join(dir, 'read-model.sqlite') });
    store = new DepositAddressStore(database);
    await store.register({ chain: CHAIN, address: A, workflowId: 'exec:w:a', minAmount: '1' });
    await store.register({ chain: CHAIN, address: B, workflowId: 'exec:w:b', minAmount: '1' });
    // F is a deposit address on another chain only: on this one it is anyone's.
    await store.register({ chain: 'evm:1', address: F, workflowId: 'exec:w:f', minAmount: '1' });
  });
  after(async () => {
    await database?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when a block has more transactions than the trace limit, then it is read without asking its call traces and named heavy, its top-level and token transfers still answered', async () => {
    const node = fakeNode();
    const asked: string[] = [];
    const request = node.request.bind(node);
    node.request = (async (args: { method: string }) => {
      asked.push(args.method);
      return request(args as never);
    }) as typeof node.request;
    const reader = new DepositReader(node, store, [T]);
    const read = await reader.read(CHAIN, [5], 10, {
      transfers: Infinity,
      bytes: Infinity,
      deadline: Infinity,
      traceDeadline: Infinity,
      traceMaxTransactions: 3,
    });
    assert.ok(!asked.includes('debug_traceBlockByHash'));
    assert.deepEqual(read.heavy, [{ number: 5, hash: BLOCK_HASH }]);
    assert.deepEqual(read.untraced, []);
    assert.deepEqual(read.transfers.map((t) => `${t.txHash.slice(-1)}/${t.transferIndex}`).sort(), ['1/0', '4/1']);
  });

  it("when a deposit address pays another (natively, by an internal call or in a token), then that transfer is no deposit: it is answered apart, and the others' payers are kept", async () => {
    const reader = new DepositReader(fakeNode(), store, [T]);
    const read = await reader.read(CHAIN, [5], 10);
    const key = (t: { txHash: string; transferIndex: number; asset?: string; from?: string; to: string; amount: string }) =>
      `${t.txHash.slice(-1)}/${t.transferIndex}/${t.asset} ${t.from === A ? 'A' : t.from === P ? 'P' : t.from === F ? 'F' : t.from}→${t.to === A ? 'A' : 'B'} ${t.amount}`;
    assert.deepEqual(read.transfers.map(key).sort(), ['1/0/native P→A 10', '3/1/native F→B 3', `4/1/erc20:${T} P→B 60`]);
    assert.deepEqual(read.serviceTransfers.map(key).sort(), ['2/0/native A→B 7', '3/2/native A→B 4', `4/0/erc20:${T} A→B 50`]);
    assert.deepEqual(
      read.serviceTransfers.map((t) => t.workflowId),
      read.serviceTransfers.map(() => 'exec:w:b'),
      'each joined with the deposit address it reached',
    );
  });

  it('when the deposit addresses of a round are asked which of them pay, then one bulk look-up answers, by chain and in any case', async () => {
    assert.deepEqual([...(await store.servicePayers(CHAIN, [A.toUpperCase().replace('0X', '0x'), P, F, B]))].sort(), [A, B]);
    assert.deepEqual([...(await store.servicePayers('evm:1', [A, F]))], [F]);
    assert.equal((await store.servicePayers(CHAIN, [])).size, 0);
  });
});
