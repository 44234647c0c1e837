import type Router from '@koa/router';
import { ServiceError, notFound } from '../../domain/errors';
import type { ChainProgress } from '../temporal/chain-progress';
import type { ExecutionRecord, ExecutionStatus } from '../../domain/execution-state';
import type { HoldReason, RefundRow, RefundState } from '../../contracts/refunds';
import { fromReadModel } from '../http/read-model';
import type { RateLimits } from '../http/rate-limit';
import { validator } from '../http/validate';
import type { AppDeps } from '../deps';
import { depositChainParamSchema, depositTxHashParamSchema } from './contract';

const validChain = validator<string>(depositChainParamSchema, 'chain path parameter', '');
const validTxHash = validator<string>(depositTxHashParamSchema, 'txHash path parameter', '');

/** One transfer of a transaction, as the lookup answers it (api/deposits/contract.ts depositEntrySchema). */
export interface DepositEntry {
  chain: string;
  txHash: string;
  transferIndex: number;
  asset?: string;
  amount?: string;
  wallet: string;
  executionId: string;
  status?: ExecutionStatus;
  outcome: 'taken' | 'owed';
  refund?: {
    id: string;
    state: RefundState;
    reason: string;
    holdReason?: HoldReason;
    refundTxHash?: string;
    refundTo?: string;
    refundValue?: string;
  };
}

/**
 * The entries of transaction `txHash` (lowercase) on `chain`: each ledger row `owed`, each deposit a
 * record took `taken` unless a row of its execution stands for the same transfer (a deposit owed
 * back after a cancel or a missed signing deadline is owed, once). `taken` holds the records whose
 * deposit is that transaction, `records` every record known by workflow id (for the rows' status).
 * Only these fields of a record: never its intent or signed payload. By transfer index, asset,
 * wallet and execution id.
 */
export function depositEntries(
  chain: string,
  txHash: string,
  rows: readonly RefundRow[],
  taken: ReadonlyMap<string, ExecutionRecord>,
  records: ReadonlyMap<string, ExecutionRecord>,
): DepositEntry[] {
  const entries: DepositEntry[] = rows.map((row) => {
    const status = records.get(row.workflowId)?.status;
    return {
      chain,
      txHash,
      transferIndex: row.transferIndex,
      ...(row.asset === undefined ? {} : { asset: row.asset }),
      ...(row.amount === undefined ? {} : { amount: row.amount }),
      wallet: row.wallet,
      executionId: row.executionId,
      ...(status === undefined ? {} : { status }),
      outcome: 'owed',
      refund: {
        id: row.id,
        state: row.state,
        reason: row.reason,
        ...(row.holdReason === undefined ? {} : { holdReason: row.holdReason }),
        ...(row.refundTxHash === undefined ? {} : { refundTxHash: row.refundTxHash }),
        ...(row.refundTo === undefined ? {} : { refundTo: row.refundTo }),
        ...(row.refundValue === undefined ? {} : { refundValue: row.refundValue }),
      },
    };
  });
  for (const [workflowId, record] of taken) {
    const deposit = record.deposit;
    if (!deposit || deposit.chain !== chain || deposit.txHash.toLowerCase() !== txHash) continue;
    const transferIndex = deposit.transferIndex ?? 0;
    const asset = deposit.asset ?? record.depositTarget?.asset;
    const owed = rows.some(
      (r) =>
        r.workflowId === workflowId &&
        r.transferIndex === transferIndex &&
        (r.asset === undefined || asset === undefined || r.asset.toLowerCase() === asset.toLowerCase()),
    );
    if (owed) continue;
    entries.push({
      chain,
      txHash,
      transferIndex,
      ...(asset === undefined ? {} : { asset }),
      ...(deposit.amount === undefined ? {} : { amount: deposit.amount }),
      wallet: record.wallet,
      executionId: record.executionId,
      status: record.status,
      outcome: 'taken',
    });
  }
  const order = (e: DepositEntry) => [e.transferIndex, e.asset ?? '', e.wallet, e.executionId] as const;
  return entries.sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return 0;
  });
}

/** The entries of transaction `txHash` (lowercase) on `chain`, from the read model (503 while it is down). */
export function readDepositEntries(
  deps: Pick<AppDeps, 'refunds' | 'executionStore'>,
  chain: string,
  txHash: string,
): Promise<DepositEntry[]> {
  return fromReadModel('the read model', async () => {
    const [rows, taken] = await Promise.all([deps.refunds.ofTransaction(chain, txHash), deps.executionStore.byDepositTx(chain, txHash)]);
    const others = [...new Set(rows.map((r) => r.workflowId))].filter((id) => !taken.has(id));
    const records = new Map([...taken, ...(await deps.executionStore.getMany(others))]);
    return depositEntries(chain, txHash, rows, taken, records);
  });
}

/**
 * The 404 of a transaction the service knows no transfer of, with the chain watcher's word:
 * `DEPOSIT_NOT_REACHED` (mined in a block the watcher has not read, or short of its
 * confirmations), `NOT_A_DEPOSIT` (in a block the watcher has read: it paid no deposit address of
 * this service), `NOT_FOUND` (the chain's node shows no such transaction, or cannot be asked).
 */
export async function unknownTransaction(progress: ChainProgress, chain: string, txHash: string): Promise<ServiceError> {
  const where = await progress.transaction(chain, txHash);
  if (where.kind === 'not-reached')
    return new ServiceError(
      404,
      'DEPOSIT_NOT_REACHED',
      `seen up to block ${where.seenUpTo}; transaction ${txHash} is in block ${where.blockNumber}: not read yet`,
    );
  if (where.kind === 'confirming')
    return new ServiceError(
      404,
      'DEPOSIT_NOT_REACHED',
      `transaction ${txHash} is in block ${where.blockNumber}, ${where.seen} of ${where.needed} confirmations deep: not counted yet`,
    );
  if (where.kind === 'settling')
    return new ServiceError(
      404,
      'DEPOSIT_NOT_REACHED',
      `transaction ${txHash} is in block ${where.blockNumber}, which the chain watcher has read; it is still being counted: ask again`,
    );
  if (where.kind === 'past')
    return new ServiceError(
      404,
      'NOT_A_DEPOSIT',
      `transaction ${txHash} (block ${where.blockNumber}) paid no deposit address of this service`,
    );
  return notFound(`no transfer of transaction ${txHash} on ${chain} is known here`);
}

/**
 * The deposit lookup (docs/api-refunds.md "Deposits"): a public read like an execution's record, limited
 * per client; from the read model only (503 while it is down).
 */
export function depositRoutes(router: Router, deps: AppDeps, limits: RateLimits, progress: ChainProgress): void {
  router.get('/api/v1/deposits/:chain/:txHash', limits.publicRoute, async (ctx) => {
    const chain = validChain(ctx.params.chain);
    const txHash = validTxHash(ctx.params.txHash).toLowerCase();
    const entries = await readDepositEntries(deps, chain, txHash);
    if (entries.length === 0) throw await unknownTransaction(progress, chain, txHash);
    ctx.body = { result: entries };
  });
}
