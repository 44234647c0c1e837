import { randomUUID } from 'node:crypto';
import { WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { Config } from '../config/config';
import { intentHash as hashIntent } from '../domain/canonical';
import { verifyEd25519, isWeakPublicKey } from '../domain/ed25519';
import { decodeKey, decodeSignature, toHex } from '../domain/encoding';
import { badRequest, conflict } from '../domain/errors';
import { initialRecord, type Deposit, type ExecutionRecord, type ExecutionStatus } from '../domain/execution-state';
import { buildSigningMessage } from '../domain/signing-message';
import {
  EXECUTION_WORKFLOW_TYPE,
  ExecutionFailure,
  executionStatusKey,
  executionWalletKey,
  executionWorkflowId,
  getExecutionQuery,
  recordDepositUpdate,
  submitSignatureUpdate,
  type ExecutionWorkflowInput,
} from '../workflows/definitions';
import { mapTemporalError } from './temporal-errors';

export interface SubmitRequest {
  executionId: string;
  publicKey: string;
  signature: string;
  connectEnvelope: { address: string; domain: string; timestamp: number };
}

export interface PrepareRequest {
  executionId?: string;
  intent: Record<string, unknown>;
  signerPublicKey?: string;
  ttlSeconds?: number;
}

/** What never changes after prepare, so the submit path can skip a query for it. */
interface ExecutionFacts {
  signerPublicKey: string;
  intentHash: string;
}

const FACTS_CACHE_MAX = 50_000;
/** How long one Temporal call may take before the API answers 500 instead of hanging. */
const TEMPORAL_CALL_MS = 5_000;

/**
 * The execution use-cases of the HTTP API. Signatures are verified here, with node:crypto, before
 * anything reaches the workflow: the workflow sandbox cannot run node:crypto, and the facts a
 * verification needs (signer key, intentHash) are fixed at prepare time and cached per execution.
 */
export class ExecutionService {
  private readonly facts = new Map<string, ExecutionFacts>();

  constructor(
    private readonly client: Client,
    private readonly config: Config,
    private readonly clock: () => number = Date.now,
  ) {}

  private call<R>(fn: () => Promise<R>): Promise<R> {
    // The gRPC deadline alone overshoots by seconds while the channel is reconnecting to a server
    // that is down; the abort signal ends the call on time.
    return this.client.withAbortSignal(AbortSignal.timeout(TEMPORAL_CALL_MS), () => this.client.withDeadline(this.clock() + TEMPORAL_CALL_MS, fn));
  }

  async prepare(wallet: string, body: PrepareRequest): Promise<ExecutionRecord> {
    const executionId = body.executionId ?? randomUUID();
    let key: Uint8Array;
    try {
      key = decodeKey(body.signerPublicKey ?? wallet);
    } catch (err) {
      if (body.signerPublicKey === undefined) throw badRequest('signerPublicKey is required when the wallet is not a base58 or 0x-hex ed25519 key');
      throw err;
    }
    if (isWeakPublicKey(key)) throw badRequest('signerPublicKey is a small-order key, which would verify any signature');
    const created = this.clock();
    const input: ExecutionWorkflowInput = {
      executionId,
      wallet,
      intent: body.intent,
      intentHash: hashIntent(body.intent),
      signerPublicKey: toHex(key),
      createdAt: new Date(created).toISOString(),
      expiresAt: new Date(created + (body.ttlSeconds ?? this.config.executionTtlSeconds) * 1000).toISOString(),
      lingerSeconds: this.config.executionLingerSeconds,
    };
    const workflowId = executionWorkflowId(wallet, executionId);
    try {
      await this.call(() =>
        this.client.workflow.start(EXECUTION_WORKFLOW_TYPE, {
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
      throw mapTemporalError(err, `execution ${executionId}`);
    }
    this.remember(workflowId, { signerPublicKey: input.signerPublicKey, intentHash: input.intentHash });
    // The workflow starts from exactly this record (same pure function, same input).
    return initialRecord(input);
  }

  async get(wallet: string, executionId: string): Promise<ExecutionRecord> {
    try {
      return await this.call(() => this.client.workflow.getHandle(executionWorkflowId(wallet, executionId)).query(getExecutionQuery));
    } catch (err) {
      throw mapTemporalError(err, `execution ${executionId}`);
    }
  }

  async submit(wallet: string, body: SubmitRequest): Promise<ExecutionStatus> {
    const { executionId, connectEnvelope: envelope } = body;
    const key = decodeKey(body.publicKey);
    const signature = decodeSignature(body.signature);
    if (envelope.address !== wallet) throw badRequest('connectEnvelope.address does not match the wallet');
    if (!this.config.allowedDomains.includes(envelope.domain)) throw badRequest('connectEnvelope.domain is not allowed');
    const ageS = Math.abs(this.clock() / 1000 - envelope.timestamp);
    if (ageS > this.config.envelopeMaxAgeS) throw badRequest(`connectEnvelope.timestamp is more than ${this.config.envelopeMaxAgeS} s from now`);

    const workflowId = executionWorkflowId(wallet, executionId);
    const facts = await this.factsOf(wallet, executionId);
    const publicKey = toHex(key);
    if (publicKey !== facts.signerPublicKey) throw badRequest('publicKey is not the signer key of this execution');
    const signingMessage = buildSigningMessage({ domain: envelope.domain, executionId, address: envelope.address, intentHash: facts.intentHash, timestamp: envelope.timestamp });
    if (!verifyEd25519(new TextEncoder().encode(signingMessage), signature, key)) throw badRequest('signature does not verify');

    try {
      const result = await this.call(() =>
        this.client.workflow.getHandle(workflowId).executeUpdate(submitSignatureUpdate, {
          args: [{ payload: { signature: toHex(signature), publicKey, connectEnvelope: { ...envelope }, submittedAt: new Date(this.clock()).toISOString() }, signingMessage }],
        }),
      );
      return result.status;
    } catch (err) {
      throw mapTemporalError(err, `execution ${executionId}`, {
        [ExecutionFailure.expired]: () => conflict('execution is EXPIRED', 'EXPIRED'),
        [ExecutionFailure.signatureConflict]: () => conflict('execution already holds a different signature', 'SIGNATURE_CONFLICT'),
      });
    }
  }

  async deposit(wallet: string, executionId: string, deposit: Deposit): Promise<ExecutionRecord> {
    try {
      return await this.call(() => this.client.workflow.getHandle(executionWorkflowId(wallet, executionId)).executeUpdate(recordDepositUpdate, { args: [deposit] }));
    } catch (err) {
      throw mapTemporalError(err, `execution ${executionId}`, {
        [ExecutionFailure.depositRefused]: (message) => conflict(message, 'DEPOSIT_REFUSED'),
      });
    }
  }

  private async factsOf(wallet: string, executionId: string): Promise<ExecutionFacts> {
    const workflowId = executionWorkflowId(wallet, executionId);
    const cached = this.facts.get(workflowId);
    if (cached) return cached;
    const record = await this.get(wallet, executionId);
    const facts = { signerPublicKey: record.signerPublicKey, intentHash: record.intentHash };
    this.remember(workflowId, facts);
    return facts;
  }

  private remember(workflowId: string, facts: ExecutionFacts): void {
    if (this.facts.size >= FACTS_CACHE_MAX) this.facts.delete(this.facts.keys().next().value!);
    this.facts.set(workflowId, facts);
  }
}

