import { getAddress } from 'viem';
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { ApiConfig } from '../../config/config';
import { confirmationsFor, noConfirmationsMessage } from '../../config/confirmations';
import { allowedToken, tokenAsset } from '../../config/deposit-tokens';
import {
  EXECUTION_WORKFLOW_TYPE,
  executionStatusKey,
  executionWalletKey,
  executionWorkflowId,
  type ExecutionWorkflowInput,
} from '../../contracts/temporal';
import { intentHash as hashIntent } from '../../domain/canonical';
import { decodeKey, toHex } from '../../domain/encoding';
import { parseEoa } from '../../domain/eoa';
import { badRequest, conflict, unavailable } from '../../domain/errors';
import { unreceivableAddress } from '../../domain/refund-policy';
import { initialRecord, type DepositAsset, type DepositTarget, type ExecutionRecord } from '../../domain/execution-state';
import { bip32DepositAddress } from '../../lib/deposit-derivation';
import type { DepositDeps } from '../deps';
import { READ_MODEL_RETRY_AFTER_S } from '../http/read-model';
import { mapTemporalError } from '../temporal/errors';
import type { Capacity } from './capacity';
import { isWeakPublicKey } from './ed25519';
import type { ExecutionRecords } from './records';
import type { PrepareRequest } from './request-schemas';
import type { SignedRequests } from './signed-requests';

/**
 * The prepare route: starts an execution's workflow. A retry of the same prepare (same id,
 * intentHash, signer key, ttl and deposit) answers the existing record with `replayed: true`; other
 * content under the id is 409.
 */
export class PrepareExecutions {
  constructor(
    private readonly records: ExecutionRecords,
    private readonly signed: SignedRequests,
    private readonly capacity: Capacity,
    private readonly config: ApiConfig,
    private readonly clock: () => number,
    private readonly deposits?: DepositDeps,
  ) {}

  async prepare(wallet: string, body: PrepareRequest): Promise<{ record: ExecutionRecord; replayed: boolean }> {
    const executionId = body.executionId ?? randomUUID();
    let key: Uint8Array;
    try {
      key = decodeKey(body.signerPublicKey ?? wallet);
    } catch (err) {
      if (body.signerPublicKey === undefined)
        throw badRequest('signerPublicKey is required when the wallet is not a base58 or 0x-hex ed25519 key');
      throw err;
    }
    if (isWeakPublicKey(key)) throw badRequest('signerPublicKey is a small-order key, which would verify any signature');
    const created = this.clock();
    const ttlSeconds = body.ttlSeconds ?? this.config.executionTtlSeconds;
    const input: ExecutionWorkflowInput = {
      executionId,
      wallet,
      intent: body.intent,
      intentHash: hashIntent(body.intent),
      signerPublicKey: toHex(key),
      createdAt: new Date(created).toISOString(),
      expiresAt: new Date(created + ttlSeconds * 1000).toISOString(),
      lingerSeconds: this.config.executionLingerSeconds,
      signingDeadlineSeconds: this.config.signingDeadlineSeconds,
      webhooks: this.config.webhooks.length > 0,
    };
    const workflowId = executionWorkflowId(wallet, executionId);
    if (body.deposit) input.depositTarget = await this.depositTarget(workflowId, executionId, body.deposit);
    // An id is never used twice, not even after Temporal's retention dropped its run: the read
    // model keeps every record, so one run can never be read, signed or announced as another
    // (decision 0062). While Temporal still holds the run, its REJECT_DUPLICATE says the same.
    if (await this.records.stored(wallet, executionId))
      return { record: await this.samePrepare(wallet, input, ttlSeconds), replayed: true };
    // A place among the open executions first (503 or 429 beyond them): the workers never hold more
    // runs than their cache, the condition under which the Temporal core can wedge one (decision 0082).
    await this.capacity.admit(wallet, workflowId);
    try {
      await this.records.call(() =>
        this.records.client.workflow.start(EXECUTION_WORKFLOW_TYPE, {
          workflowId,
          taskQueue: this.config.temporal.taskQueue,
          args: [input],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          workflowIdConflictPolicy: 'FAIL',
          typedSearchAttributes: [
            { key: executionWalletKey, value: wallet },
            { key: executionStatusKey, value: 'PREPARED' },
          ],
        }),
      );
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError)
        return { record: await this.samePrepare(wallet, input, ttlSeconds), replayed: true };
      // Most likely not started: the place goes back. A start that took effect all the same is
      // counted again once its first record is written to the read model.
      await this.capacity.release(workflowId);
      throw mapTemporalError(err, `execution ${executionId}`);
    }
    this.signed.remember(workflowId, { signerPublicKey: input.signerPublicKey, intentHash: input.intentHash });
    // The workflow starts from exactly this record (same pure function, same input), and leaves
    // its write to the API (a retry of this prepare writes it again; else the worker's catch-up).
    return { record: await this.records.written(workflowId, initialRecord(input)), replayed: false };
  }

  /** The existing record when it was prepared with the same content; else 409. */
  private async samePrepare(wallet: string, input: ExecutionWorkflowInput, ttlSeconds: number): Promise<ExecutionRecord> {
    const existing = await this.records.get(wallet, input.executionId).catch((err: unknown) => {
      // Gone from Temporal and from the read model: the id is still taken (REJECT_DUPLICATE).
      if (err instanceof Error && (err as { status?: number }).status === 404) return undefined;
      throw err;
    });
    const same =
      existing !== undefined &&
      existing.intentHash === input.intentHash &&
      existing.signerPublicKey === input.signerPublicKey &&
      existing.depositTarget?.chain === input.depositTarget?.chain &&
      existing.depositTarget?.minAmount === input.depositTarget?.minAmount &&
      existing.depositTarget?.asset === input.depositTarget?.asset &&
      existing.depositTarget?.refundAddress?.toLowerCase() === input.depositTarget?.refundAddress?.toLowerCase() &&
      Date.parse(existing.expiresAt) - Date.parse(existing.createdAt) === ttlSeconds * 1000;
    if (!same) throw alreadyExists(input.executionId);
    return this.records.written(executionWorkflowId(wallet, input.executionId), existing);
  }

  /**
   * The deposit target of a prepare with `deposit`: the watched chain only, the address derived
   * from the deposit account's public key (the same id gives the same address; one registered
   * before is answered as it is) and registered in the read model before the
   * workflow starts, so the watcher can map every transfer to it, with the refund address if one is
   * named (EIP-55 checked; never a deposit address of this service, of any chain). The read model
   * or the chain's node down: 503.
   */
  private async depositTarget(
    workflowId: string,
    executionId: string,
    wanted: NonNullable<PrepareRequest['deposit']>,
  ): Promise<DepositTarget> {
    const deps = this.deposits;
    if (!deps) throw badRequest('on-chain deposits are not configured on this service (CHAIN_RPC_URL)');
    let refundAddress: string | undefined;
    if (wanted.refundAddress !== undefined) {
      const parsed = parseEoa(wanted.refundAddress);
      if (!parsed.ok) throw badRequest(`deposit.refundAddress ${parsed.reason}`);
      const unreceivable = unreceivableAddress(parsed.address);
      if (unreceivable !== undefined) throw badRequest(`deposit.refundAddress ${unreceivable}: nothing sent there can come back`);
      refundAddress = parsed.address;
    }
    let chain: string;
    try {
      chain = await deps.chain();
    } catch (err) {
      throw unavailable("the chain's node is unavailable; try again later", READ_MODEL_RETRY_AFTER_S, err);
    }
    if (wanted.chain !== chain) throw badRequest(`deposit.chain ${wanted.chain} is not watched here; this service watches ${chain}`);
    // The worker refuses to watch a chain with no number of confirmations: a deposit there would never complete.
    if (this.config.chain && confirmationsFor(this.config.chain.confirmations, chain) === undefined)
      throw badRequest(`deposit.chain ${chain} is not watched here: ${noConfirmationsMessage(chain)}`);
    let asset: DepositAsset = 'native';
    if (wanted.asset !== 'native') {
      const token = allowedToken(this.config.chain?.tokens ?? [], chain, wanted.asset);
      if (!token) throw badRequest(`deposit.asset ${wanted.asset} is not a token this service accepts on ${chain} (DEPOSIT_TOKENS)`);
      asset = tokenAsset(token.address) as DepositAsset;
    }
    // A prepare retried (after an upgrade too) answers the address registered for it, however derived.
    const registered = await this.records.readModel(() => deps.store.addressOf(chain, workflowId));
    const address = registered ? getAddress(registered.address) : bip32DepositAddress(deps.xpub, chain, workflowId);
    if (refundAddress !== undefined) {
      // Refunds are paid from deposit addresses: one paid to a deposit address would be taken for a deposit.
      if (refundAddress.toLowerCase() === address.toLowerCase())
        throw badRequest("deposit.refundAddress is this execution's own deposit address");
      if (await this.records.readModel(() => deps.store.isDepositAddress(refundAddress)))
        throw badRequest('deposit.refundAddress is a deposit address of this service');
    }
    const stored = await this.records.readModel(() =>
      deps.store.register({
        chain,
        address,
        workflowId,
        minAmount: wanted.minAmount,
        asset,
        derivation: registered?.derivation ?? 'bip32-v1',
        ...(refundAddress ? { refundAddress } : {}),
      }),
    );
    // The address was registered before (a retried prepare): where its refunds go never changes.
    if (stored.refundAddress !== refundAddress?.toLowerCase()) throw alreadyExists(executionId);
    return { chain, asset, minAmount: wanted.minAmount, address, ...(refundAddress ? { refundAddress } : {}) };
  }
}

/** A prepare under an executionId taken by another prepare (another intent, signer key, ttl or deposit). */
const alreadyExists = (executionId: string) =>
  conflict(`execution ${executionId} already exists with other content (intent, signer key, ttl or deposit)`, 'ALREADY_EXISTS');
