import { SUBMIT_REFUSALS } from '../../contracts/execution-commands';
import { executionWorkflowId, submitSignatureUpdate, type SubmitSignatureResult } from '../../contracts/temporal';
import { toHex } from '../../domain/encoding';
import { checkSubmit, type ExecutionRecord, type ExecutionStatus } from '../../domain/execution-state';
import { buildSigningMessage } from '../../domain/signing-message';
import { BoundedMap } from '../http/bounded-map';
import type { ExecutionRecords } from './records';
import type { SubmitRequest } from './request-schemas';
import { judged, noLimit, runCommand, type WalletBudget } from './run-command';
import type { SignedRequests } from './signed-requests';

const CACHE_MAX = 50_000;

/**
 * The submit route: stores the wallet's verified signature in the execution. Retries and replays
 * write nothing (decision 0020): a signature this process has already seen accepted, or the read
 * model shows held or refused, is answered from the record, without an Update; one the workflow
 * already holds is refused by its validator as a duplicate (no history event) and answered as a
 * success.
 */
export class SubmitSignatures {
  /** workflowId → the signature (canonical hex) that the workflow holds. */
  private readonly storedSignatures = new BoundedMap<string, string>(CACHE_MAX);

  constructor(
    private readonly records: ExecutionRecords,
    private readonly signed: SignedRequests,
    private readonly clock: () => number,
  ) {}

  /**
   * The wallet's budget is spent only by a submit that changes the record (decision 0063): one the
   * execution already holds or refuses, which anybody can replay from a GET, is answered from the
   * record (it counts against the replaying client's own limit, on the route) and gives back what
   * it spent when only the workflow could tell.
   */
  async submit(wallet: string, body: SubmitRequest, budget: WalletBudget = noLimit): Promise<ExecutionStatus> {
    const { executionId, connectEnvelope: envelope } = body;
    const { publicKey, signature, message } = await this.signed.verify(wallet, executionId, body, (facts) =>
      buildSigningMessage({
        domain: envelope.domain,
        executionId,
        address: envelope.address,
        intentHash: facts.intentHash,
        timestamp: envelope.timestamp,
      }),
    );
    budget.verified();

    const workflowId = executionWorkflowId(wallet, executionId);
    const stored = toHex(signature);
    // The same signature again: 200 with the status; EXPIRED, CANCELLED or another signature: 409.
    const judge = (record: ExecutionRecord): SubmitSignatureResult | undefined =>
      judged(SUBMIT_REFUSALS, checkSubmit(record, stored), { status: record.status });
    // A signature this process saw stored, or the read model shows held or refused: a replay.
    // Answered from the record, without an Update and without spending the wallet's budget.
    if (
      this.storedSignatures.get(workflowId) === stored ||
      (await this.records.readModelSays(wallet, executionId, (r) => checkSubmit(r, stored) !== 'ok'))
    ) {
      const replay = judge(await this.records.get(wallet, executionId));
      if (replay) return replay.status;
    }
    const result = await runCommand(this.records, budget, {
      wallet,
      executionId,
      update: submitSignatureUpdate,
      arg: {
        payload: { signature: stored, publicKey, connectEnvelope: { ...envelope }, submittedAt: new Date(this.clock()).toISOString() },
        signingMessage: message,
      },
      refusals: SUBMIT_REFUSALS,
      recordOf: (answer) => answer.record,
      closed: judge,
    });
    this.storedSignatures.set(workflowId, stored);
    return result.status;
  }
}
