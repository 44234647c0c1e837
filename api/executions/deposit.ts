import type { ApiConfig } from '../../config/config';
import { DEPOSIT_REFUSALS, type DepositRefusalReason } from '../../contracts/execution-commands';
import { executionWorkflowId, recordDepositUpdate } from '../../contracts/temporal';
import type { RefundLedger } from '../../db/refund-ledger';
import { assetAllowed, reportedAsset, TX_HASH, type DepositProof } from '../../domain/deposit-proof';
import { badRequest, conflict, unavailable } from '../../domain/errors';
import {
  FINAL_STATUSES,
  applyDeposit,
  closedDepositRefusal,
  depositRefusalReason,
  sameTransfer,
  type Deposit,
  type DepositTarget,
  type ExecutionRecord,
} from '../../domain/execution-state';
import type { DepositDeps } from '../deps';
import { READ_MODEL_RETRY_AFTER_S } from '../http/read-model';
import type { ExecutionRecords } from './records';
import { noLimit, refused, runCommand } from './run-command';

/**
 * The deposit route: records a reported deposit. Judged first on the record, by the workflow's own
 * rule: the deposit it holds again is answered as is; one it refuses is owed back (a refunds ledger
 * row) and answered 409 without reaching the workflow, so no stream of reports can grow the
 * execution. For an execution with an on-chain target the report is believed only when the chain
 * shows the transfer (domain/deposit-proof.ts), and the deposit stored is what the chain says.
 */
export class ReportDeposits {
  constructor(
    private readonly records: ExecutionRecords,
    private readonly config: ApiConfig,
    private readonly refunds: RefundLedger,
    private readonly clock: () => number,
    private readonly deposits?: DepositDeps,
  ) {}

  async deposit(wallet: string, executionId: string, reported: Deposit): Promise<ExecutionRecord> {
    // The read model's record, written before every answer of this API and by the workflow for what
    // else changes it: judged on a record behind the workflow's, a deposit can only go to the
    // workflow, which judges again (a deposit once held or refused stays so). Without a row: the workflow's.
    const current = (await this.records.stored(wallet, executionId)) ?? (await this.records.get(wallet, executionId));
    // A replay of the deposit the record holds is answered from it, before anything asks the chain.
    if (current.deposit && sameTransfer(current.deposit, reported)) return current;
    this.checkAsset(reported, current.depositTarget);
    const { deposit, sender } = current.depositTarget ? await this.proven(current.depositTarget, reported) : { deposit: reported };
    const judged = applyDeposit(current, deposit, this.now());
    if (judged.outcome === 'duplicate') return current;
    const reason = depositRefusalReason(judged.outcome);
    if (reason !== undefined && (judged.overflow || judged.record === current || FINAL_STATUSES.includes(current.status)))
      return this.refuseDeposit(current, deposit, reason, sender);
    return runCommand(this.records, noLimit, {
      wallet,
      executionId,
      update: recordDepositUpdate,
      arg: deposit,
      refusals: DEPOSIT_REFUSALS,
      recordOf: (record) => record,
      // Judged on the final record by the rule the workflow applies: the deposit it holds again is
      // 200; anything else is owed back (`closed` when the record would have taken it while open).
      closed: (record) => {
        const refusal = closedDepositRefusal(record, deposit, this.now());
        return refusal === undefined ? record : this.refuseDeposit(record, deposit, refusal, sender);
      },
    });
  }

  private now(): string {
    return new Date(this.clock()).toISOString();
  }

  /**
   * A report's asset is native or a token of DEPOSIT_TOKENS on its chain (the target's, else the
   * one it names), else 400: a token nobody allowed is worth nothing, and never becomes a deposit
   * or a refund owed. The proof refuses it too (token-not-allowed), for the worker's signals.
   */
  private checkAsset(reported: Deposit, target: DepositTarget | undefined): void {
    const asset = target ? reportedAsset(target, reported) : reported.asset;
    if (asset === undefined || asset === 'native') return;
    const chain = target?.chain ?? reported.chain;
    if (chain === undefined || !assetAllowed(this.config.chain?.tokens ?? [], chain, asset))
      throw badRequest(`asset ${asset} is not a token this service accepts${chain === undefined ? '' : ` on ${chain}`} (DEPOSIT_TOKENS)`);
  }

  /**
   * The deposit the chain shows for a report to an on-chain target; 409 when it shows none (yet) or
   * shows a transfer a deposit address paid (the service's own), 503 when the chain's node is down.
   */
  private async proven(target: DepositTarget, reported: Deposit): Promise<{ deposit: Deposit; sender?: string }> {
    if (!this.deposits) throw unavailable('on-chain deposits are not configured on this API (CHAIN_RPC_URL)', READ_MODEL_RETRY_AFTER_S);
    // The node would refuse anything else as malformed, which is the caller's fault, not the node's.
    if (!TX_HASH.test(reported.txHash))
      throw badRequest(`txHash ${JSON.stringify(reported.txHash)} is no transaction hash of ${target.chain} (0x and 64 hex digits)`);
    let proof: DepositProof;
    try {
      proof = await this.deposits.prove(target, reported);
    } catch (err) {
      throw unavailable("the chain's node is unavailable; try again later", READ_MODEL_RETRY_AFTER_S, err);
    }
    if (!proof.ok && proof.reason === 'token-not-allowed') throw badRequest(`the deposit's ${proof.message}`);
    // Money the service moved itself is neither a deposit nor owed: nothing is written.
    if (!proof.ok && proof.reason === 'service-transfer')
      throw conflict(`this transfer is no deposit: ${proof.message}`, 'DEPOSIT_FROM_SERVICE');
    if (!proof.ok) throw conflict(`the chain does not back this deposit: ${proof.message}`, 'DEPOSIT_NOT_ON_CHAIN');
    return proof.sender === undefined ? { deposit: proof.deposit } : { deposit: proof.deposit, sender: proof.sender };
  }

  /**
   * A deposit the execution does not take: recorded once in the refunds ledger, answered 409 with
   * the words the workflow uses (DEPOSIT_REFUSALS). An execution that has closed refuses even a
   * deposit it would have taken while open (`closed`). `sender` is the transfer's payer, when the
   * chain showed it; whether it has code is asked of the chain too (best effort: a node that does
   * not answer leaves it unknown).
   */
  private async refuseDeposit(record: ExecutionRecord, deposit: Deposit, reason: DepositRefusalReason, sender?: string): Promise<never> {
    const payerKind = sender === undefined ? undefined : await this.deposits?.payerKind(sender).catch(() => undefined);
    await this.records.readModel(() =>
      this.refunds.recordDue({
        workflowId: executionWorkflowId(record.wallet, record.executionId),
        wallet: record.wallet,
        executionId: record.executionId,
        ...deposit,
        ...(sender === undefined ? {} : { sender }),
        ...(payerKind === undefined ? {} : { payerKind }),
        asset: deposit.asset ?? record.depositTarget?.asset ?? 'native',
        reason,
        reportedBy: 'api',
      }),
    );
    throw refused(DEPOSIT_REFUSALS[reason]);
  }
}
