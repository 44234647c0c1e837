import { CANCEL_REFUSALS } from '../../contracts/execution-commands';
import { cancelExecutionUpdate } from '../../contracts/temporal';
import { checkCancel, type ExecutionRecord } from '../../domain/execution-state';
import { buildCancelMessage } from '../../domain/signing-message';
import type { ExecutionRecords } from './records';
import type { CancelRequest } from './request-schemas';
import { judged, noLimit, runCommand, type WalletBudget } from './run-command';
import type { SignedRequests } from './signed-requests';

/**
 * The cancel route: cancels on the wallet's signature of the cancel message (the same envelope
 * checks as submit). Already CANCELLED answers the record and writes nothing; SIGNING or EXPIRED
 * is 409.
 */
export class CancelExecutions {
  constructor(
    private readonly records: ExecutionRecords,
    private readonly signed: SignedRequests,
  ) {}

  async cancel(wallet: string, executionId: string, body: CancelRequest, budget: WalletBudget = noLimit): Promise<ExecutionRecord> {
    await this.signed.verify(wallet, executionId, body, () =>
      buildCancelMessage({ domain: body.connectEnvelope.domain, executionId, address: wallet, timestamp: body.connectEnvelope.timestamp }),
    );
    budget.verified();

    const judge = (record: ExecutionRecord) => judged(CANCEL_REFUSALS, checkCancel(record), record);
    // A cancel that can change nothing (a replay of one already applied, or too late) costs the
    // wallet nothing: the read model says so without a Temporal call, the record answers.
    if (await this.records.readModelSays(wallet, executionId, (r) => checkCancel(r) !== 'ok')) {
      const replay = judge(await this.records.get(wallet, executionId));
      if (replay) return replay;
    }
    return runCommand(this.records, budget, {
      wallet,
      executionId,
      update: cancelExecutionUpdate,
      arg: { requestedBy: 'wallet' },
      refusals: CANCEL_REFUSALS,
      recordOf: (record) => record,
      closed: judge,
    });
  }
}
