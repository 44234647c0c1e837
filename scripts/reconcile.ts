import { parseArgs } from 'node:util';
import { TransactionNotFoundError, TransactionReceiptNotFoundError, type PublicClient } from 'viem';
import { chainClient } from '../lib/chain-client';
import { DepositReader } from '../lib/chain-reader';
import { loadConfig } from '../config/config';
import { confirmationsFor } from '../config/confirmations';
import { openDatabase } from '../db/database';
import { DepositAddressStore } from '../db/deposit-addresses';
import { GasAccountLedger } from '../db/gas-account';
import { ExecutionStore } from '../db/execution-store';
import { RefundLedger, type RefundRow } from '../db/refund-ledger';
import { RefundPayments } from '../db/refund-payments';
import type { LedgerPosition } from '../db/page-token';
import { tokenTransfer } from '../domain/transfers';
import { reconcile, type InboundTransfer, type PaidRefund, type RefundOnChain } from '../domain/reconcile';

const USAGE = `usage: npm run --silent reconcile -- --chain evm:<id> [--from-block N] [--to-block M]

Reads every confirmed top-level native transfer to the service's deposit addresses on the chain
(CHAIN_RPC_URL) in blocks N (default 0) to M (default: the head less DEPOSIT_CONFIRMATIONS − 1),
and checks each against the read model (DATABASE_URL or DATABASE_FILE): an execution's deposit, or
a refunds ledger row. Prints one JSON summary line (sums in base units: in, taken, due, refunded,
waived, unaccounted), then one line per transfer nobody accounts for, per deposit taken that the
chain does not show, and per deposit the watcher flagged reorged (already alerted on: listed, not a
difference). A transfer a deposit address or the gas account paid is the service's own (a refund,
a cancel, a gas top-up): counted as refundTransfers, never money in. Every refund the service
recorded paid is looked up by its transaction: refundsPaid counts those the chain confirms (mined,
succeeded, to the recorded destination, the recorded value; a token refund by its Transfer log)
and one line lists each it contradicts (from block 0, a difference). Exits 0 when balanced, 1 on any difference, 2 on a usage error.`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: { chain: { type: 'string' }, 'from-block': { type: 'string' }, 'to-block': { type: 'string' }, help: { type: 'boolean' } },
  });
  const config = loadConfig();
  const block = (name: string, raw: string | undefined) => {
    if (raw === undefined) return undefined;
    if (!/^[0-9]{1,12}$/.test(raw)) throw new UsageError(`--${name} must be a block number`);
    return Number(raw);
  };
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.chain || !/^evm:[0-9]{1,20}$/.test(values.chain)) throw new UsageError('--chain evm:<id> is required');
  if (!config.chain) throw new UsageError('CHAIN_RPC_URL is not set: there is no chain to read');
  const rpc = chainClient(config.chain.rpcUrl);
  const actual = `evm:${await rpc.getChainId()}`;
  if (actual !== values.chain) throw new UsageError(`CHAIN_RPC_URL serves ${actual}, not ${values.chain}`);
  const head = Number(await rpc.getBlockNumber({ cacheTime: 0 }));
  const confirmations = confirmationsFor(config.chain.confirmations, actual);
  if (confirmations === undefined) throw new UsageError(`DEPOSIT_CONFIRMATIONS names no number for ${actual}`);
  const from = block('from-block', values['from-block']) ?? 0;
  const to = block('to-block', values['to-block']) ?? head - confirmations + 1;

  const database = await openDatabase(config.database);
  try {
    const addresses = new DepositAddressStore(database);
    const transfers: InboundTransfer[] = [];
    const tokens = config.chain.tokens.filter((t) => t.chain === values.chain).map((t) => t.address);
    const reader = new DepositReader(rpc, addresses, tokens, () =>
      console.error('reconcile: the node offers no call traces: value sent by internal calls of contracts is not counted'),
    );
    for (let start = from; start <= to; start += 100) {
      const numbers = Array.from({ length: Math.min(100, to - start + 1) }, (_, i) => start + i);
      const read = await reader.read(values.chain, numbers, 10);
      for (const t of [...read.transfers, ...read.serviceTransfers])
        transfers.push({
          workflowId: t.workflowId,
          txHash: t.txHash,
          transferIndex: t.transferIndex,
          amount: t.amount,
          blockNumber: t.blockNumber,
          asset: t.asset ?? 'native',
          ...(t.from === undefined ? {} : { from: t.from }),
        });
    }
    const records = await new ExecutionStore(database).getMany(await addresses.workflowIds(values.chain));
    const ledger = new RefundLedger(database);
    const rows: RefundRow[] = [];
    let after: LedgerPosition | undefined;
    do {
      const page = await ledger.list({ chain: values.chain, pageSize: 200, after });
      rows.push(...page.rows);
      after = page.next;
    } while (after);
    const paid: PaidRefund[] = (await new RefundPayments(database).paidBy(values.chain)).flatMap((r) =>
      r.state === 'refunded' && r.refundTxHash !== undefined && r.refundTo !== undefined && r.refundValue !== undefined
        ? [
            {
              id: r.id,
              workflowId: r.workflowId,
              txHash: r.refundTxHash,
              to: r.refundTo,
              value: r.refundValue,
              ...(r.asset !== undefined && r.asset !== 'native' ? { asset: r.asset } : {}),
              ...(r.refundBlock === undefined ? {} : { block: r.refundBlock }),
            },
          ]
        : [],
    );
    const report = reconcile(
      transfers,
      records,
      rows,
      { from, to },
      {
        depositAddresses: new Set([
          ...(await addresses.all(values.chain)),
          ...(await new GasAccountLedger(database).accounts()).filter((a) => a.chain === values.chain).map((a) => a.address),
        ]),
        refundsPaid: paid,
        refundTxs: await refundTransactions(
          rpc,
          paid.map((p) => p.txHash),
        ),
      },
    );
    console.log(
      JSON.stringify({
        chain: values.chain,
        fromBlock: from,
        toBlock: to,
        transfers: report.transfers,
        ...report.sums,
        ...(Object.keys(report.tokenSums).length > 0 ? { tokens: report.tokenSums } : {}),
        ledgerRows: report.ledgerCounts,
        refundTransfers: report.refundTransfers.length,
        refundsPaid: { confirmed: report.refundsPaid.confirmed, missing: report.refundsPaid.missing.length },
        balanced: report.balanced,
      }),
    );
    for (const t of report.refundTransfers) console.log(JSON.stringify({ refundTransfer: t }));
    for (const r of report.refundsPaid.missing) console.log(JSON.stringify({ refundMissing: r }));
    for (const t of report.unaccounted) console.log(JSON.stringify({ unaccountedTransfer: t }));
    for (const t of report.takenNotOnChain) console.log(JSON.stringify({ takenNotOnChain: t }));
    for (const t of report.reorgedAway) console.log(JSON.stringify({ reorgedAway: t }));
    for (const row of report.ledger) console.log(JSON.stringify({ ledgerRow: row }));
    return report.balanced ? 0 : 1;
  } finally {
    await database.close();
  }
}

/** What the chain holds of each of `hashes` (by lowercase hash; undefined: no such transaction), ten at a time. */
async function refundTransactions(client: PublicClient, hashes: readonly string[]): Promise<Map<string, RefundOnChain | undefined>> {
  const out = new Map<string, RefundOnChain | undefined>();
  const one = async (hash: `0x${string}`): Promise<RefundOnChain | undefined> => {
    try {
      const tx = await client.getTransaction({ hash });
      if (tx.blockNumber === null)
        return { to: tx.to?.toLowerCase() ?? null, value: tx.value.toString(), blockNumber: null, succeeded: false };
      const receipt = await client.getTransactionReceipt({ hash });
      return {
        to: tx.to?.toLowerCase() ?? null,
        value: tx.value.toString(),
        blockNumber: Number(receipt.blockNumber),
        succeeded: receipt.status === 'success',
        tokenTransfers: receipt.logs.flatMap((l) => tokenTransfer({ address: l.address, topics: l.topics, data: l.data }) ?? []),
      };
    } catch (err) {
      if (err instanceof TransactionNotFoundError || err instanceof TransactionReceiptNotFoundError) return undefined;
      throw err;
    }
  };
  for (let i = 0; i < hashes.length; i += 10) {
    const part = hashes.slice(i, i + 10).map((h) => h.toLowerCase() as `0x${string}`);
    const answers = await Promise.all(part.map(one));
    part.forEach((h, j) => out.set(h, answers[j]));
  }
  return out;
}

class UsageError extends Error {}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err: Error) => {
      console.error(`reconcile: ${err.message}`);
      if (err instanceof UsageError) console.error(USAGE);
      process.exit(2);
    },
  );
}
